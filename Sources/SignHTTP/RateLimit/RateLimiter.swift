import Dispatch
@_spi(SignCoreTools) import SignCore

/// The token buckets of one node (docs/ATTEST.md §10.2), in memory: per limit, per client, one
/// number, the GCRA's theoretical arrival time (the Generic Cell Rate Algorithm of ATM networks:
/// a token bucket kept as the time it is next full). A fleet of n nodes behind a balancer allows
/// each client up to n times a limit; set a limit per node accordingly.
///
/// Bounded: a limit holds at most `capacity` clients; past it, expired ones are swept, and when
/// none has expired new clients share one bucket (they are limited together, never let through
/// unlimited).
public final class RateLimiter: Sendable {
    public let capacity: Int
    /// Nanoseconds of a monotonic clock.
    let clock: @Sendable () -> UInt64

    /// What taking a token from a client's bucket found.
    public struct Outcome: Sendable, Equatable {
        public var allowed: Bool
        /// Requests left in the bucket now.
        public var remaining: Int
        /// Seconds until the bucket is full again (`RateLimit`'s `t`).
        public var reset: Int
        /// Seconds until a request is allowed again (`Retry-After`); 0 when allowed.
        public var retryAfter: Int
    }

    public init(capacity: Int = 100_000, clock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.capacity = max(1, capacity)
        self.clock = clock
    }

    /// Takes one request from the bucket of `client` under `limit` (in the limit's own table).
    public func take(_ limit: RateLimit, client: String) -> Outcome {
        limit.table.take(client: client, now: clock(), interval: limit.interval, tolerance: limit.tolerance, capacity: capacity)
    }

    /// What taking one request from the bucket of `client` under `limit` would find, taking none.
    public func peek(_ limit: RateLimit, client: String) -> Outcome {
        limit.table.peek(client: client, now: clock(), interval: limit.interval, tolerance: limit.tolerance)
    }

    /// Takes one request from the pass bucket of the key with `thumbprint` under `limit`
    /// (docs/ATTEST.md §10.6): a table of its own, so that no flood of clients crowds passes out.
    public func takePass(_ limit: RateLimit, thumbprint: [UInt8]) -> Outcome {
        limit.passTable.take(client: Base64URL.encode(thumbprint), now: clock(), interval: limit.interval, tolerance: limit.tolerance,
                             capacity: capacity)
    }

    /// Whether the pass bucket of the key with `thumbprint` under `limit` would allow a request
    /// now, without taking one.
    public func passAllows(_ limit: RateLimit, thumbprint: [UInt8]) -> RateLimiter.Outcome {
        limit.passTable.peek(client: Base64URL.encode(thumbprint), now: clock(), interval: limit.interval, tolerance: limit.tolerance)
    }

    /// Clients held under `limit`, expired or not yet swept included.
    public func clients(of limit: RateLimit) -> Int { limit.table.count }

    final class Table: Sendable {
        private struct State {
            var arrivals: [String: UInt64] = [:]
            var sweepAt = 1024
            /// When a full table was last swept: a full table is swept at most once a second, so
            /// clients that keep it full cannot make every new one pay for a sweep.
            var sweptFullAt: UInt64 = 0
        }

        private let state = Locked(State())
        static let overflow = "*"

        var count: Int { state.withLock { $0.arrivals.count } }

        /// GCRA: tat = max(stored, now); refused when tat − now > τ; else stored = tat + T.
        func take(client: String, now: UInt64, interval: UInt64, tolerance: UInt64, capacity: Int) -> Outcome {
            state.withLock { state in
                var client = client
                if state.arrivals[client] == nil, state.arrivals.count >= min(state.sweepAt, capacity) {
                    let full = state.arrivals.count >= capacity
                    if !full || now >= state.sweptFullAt &+ 1_000_000_000 {
                        // A client whose bucket is full again (its arrival time passed) is as one never seen.
                        state.arrivals = state.arrivals.filter { $0.value > now }
                        state.sweepAt = max(1024, 2 * state.arrivals.count)
                        if full { state.sweptFullAt = now }
                    }
                    if state.arrivals.count >= capacity { client = Self.overflow }
                }
                let arrival = max(state.arrivals[client] ?? now, now)
                let ahead = arrival - now
                guard ahead <= tolerance else {
                    return Outcome(allowed: false, remaining: 0, reset: Self.seconds(ahead), retryAfter: max(1, Self.seconds(ahead - tolerance)))
                }
                let next = arrival + interval
                state.arrivals[client] = next
                let left = tolerance + interval - (next - now)
                return Outcome(allowed: true, remaining: Int(left / interval), reset: Self.seconds(next - now), retryAfter: 0)
            }
        }

        /// What `take` would find, changing nothing.
        func peek(client: String, now: UInt64, interval: UInt64, tolerance: UInt64) -> Outcome {
            let arrival = max(state.withLock { $0.arrivals[client] } ?? now, now)
            let ahead = arrival - now
            guard ahead <= tolerance else {
                return Outcome(allowed: false, remaining: 0, reset: Self.seconds(ahead), retryAfter: max(1, Self.seconds(ahead - tolerance)))
            }
            return Outcome(allowed: true, remaining: Int((tolerance - ahead) / interval) + 1, reset: Self.seconds(ahead), retryAfter: 0)
        }

        /// Whole seconds, rounded up.
        static func seconds(_ nanoseconds: UInt64) -> Int { Int((nanoseconds + 999_999_999) / 1_000_000_000) }
    }
}
