import NIOCore

/// The least a request body must average over each window of reading (`limits.minBodyRate`,
/// `limits.bodyRateWindow`): a body sent a byte at a time completes a part every time, and the
/// idle timeout alone would keep its connection (and an upstream connection) forever. Windows,
/// not the average since the start: bytes sent fast first buy no time for a trickle after.
/// Held by HTTP/1.1 connections (`HTTP1Connection`) and HTTP/2 streams (`HTTP2StreamLimits`).
struct BodyRate: Sendable {
    /// Bytes a second; 0 turns the check off.
    var minimum: Int
    var window: TimeAmount
}

/// A body's arrival in the current window: its bytes, and the time signd spent reading them.
/// The clock starts at the body's first byte (a client may wait for `100 Continue` before
/// sending it) and stops while signd does not read (the body's reader is full: signd, not the
/// client, is slow then).
struct BodyClock {
    var bytes = 0
    var reading = TimeAmount.zero
    var since: NIODeadline?
    var started = false

    mutating func received(_ count: Int, paused: Bool) {
        bytes += count
        if !started {
            started = true
            if !paused { since = .now() }
        }
    }

    mutating func pause(at now: NIODeadline) {
        guard let since else { return }
        reading = reading + (now - since)
        self.since = nil
    }

    mutating func resume(at now: NIODeadline) {
        if started, since == nil { since = now }
    }

    func elapsed(at now: NIODeadline) -> TimeAmount {
        since.map { reading + (now - $0) } ?? reading
    }

    /// Once a window has been read: what came in it when that is below `rate` (the body is too
    /// slow), else nil and a new window starts. nil while the window is not over.
    mutating func check(against rate: BodyRate, at now: NIODeadline) -> (bytes: Int, seconds: Int)? {
        let elapsed = elapsed(at: now)
        guard elapsed >= rate.window else { return nil }
        let seconds = Double(elapsed.nanoseconds) / 1e9
        guard Double(bytes) < Double(rate.minimum) * seconds else {
            // A new window from `now`, the clock running or stopped as it was.
            bytes = 0
            reading = .zero
            if since != nil { since = now }
            return nil
        }
        return (bytes, Int(seconds))
    }
}
