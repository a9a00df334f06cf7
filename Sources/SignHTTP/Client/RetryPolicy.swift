import HTTPTypes
import SignCore

/// When a client sends a signed request again (SPEC §7.1): only a 503 (the replay guard or a store
/// unavailable; another 503 only for an idempotent method), after its `Retry-After` when that is
/// short enough, and every attempt signed afresh (a resent token would be a replay). A refusal of the
/// signature itself (401) is never retried blindly: signing the same request again gives the same
/// verdict. Transport errors are the caller's: a POST that may have arrived is not resent. The
/// first policy of a `SigningClient`.
public struct RetryPolicy: ExchangePolicy, Equatable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    /// The longest `Retry-After` honoured; a longer one ends the attempts with that response.
    public var maxDelay: Duration

    public init(maxAttempts: Int = 3, maxDelay: Duration = .seconds(5)) {
        self.maxAttempts = max(1, maxAttempts)
        self.maxDelay = maxDelay
    }

    public static let never = RetryPolicy(maxAttempts: 1)

    /// How long to wait before attempt `attempt + 1` after a response, or nil to stop.
    public func delay(status: Int, retryAfter: String?, attempt: Int) -> Duration? {
        guard attempt < maxAttempts, status == 503 else { return nil }
        // RFC 9110 §10.2.3: delay-seconds, 1*DIGIT with optional whitespace around it. Anything
        // else (an HTTP-date is not worth trusting a clock for, `-1`, `1 0`) counts as 1 s; more
        // digits than fit are longer than any delay honoured.
        var delay = Duration.seconds(1)
        if let value = retryAfter?.utf8.drop(while: { $0 == 0x20 || $0 == 0x09 }).reversed().drop(while: { $0 == 0x20 || $0 == 0x09 }),
           !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
            var seconds: Int64 = 0
            for digit in value.reversed() {
                guard seconds <= (Int64.max - 9) / 10 else { return nil }
                seconds = seconds * 10 + Int64(digit - 0x30)
            }
            delay = .seconds(seconds)
        }
        return delay <= maxDelay ? delay : nil
    }

    /// Retries a 503 as `delay` says, with no field added, when the request cannot have been
    /// acted on twice: the verifier refused it before anything went on (`overloaded`,
    /// `unavailable`, SPEC §7.1), or its method is idempotent (RFC 9110 §9.2.2). Another 503 (an
    /// upstream's own, behind a gateway) of a POST or PATCH is delivered: it may have been acted on.
    public func decide(_ exchange: Exchange) async -> ExchangeDecision {
        let undecided = ReceivedRefusal(exchange.response).map { $0.code == .overloaded || $0.code == .unavailable } ?? false
        guard undecided || Self.idempotent.contains(exchange.request.method) else { return .deliver }
        return delay(status: exchange.response.status.code, retryAfter: exchange.response.headerFields[.retryAfter],
                     attempt: exchange.attempt).map { .retry(after: $0) } ?? .deliver
    }

    /// RFC 9110 §9.2.2.
    static let idempotent: Set<HTTPRequest.Method> = [.get, .head, .options, .trace, .put, .delete]
}
