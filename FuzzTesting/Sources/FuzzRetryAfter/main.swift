import FuzzCommon
import SignHTTP

/// `RetryPolicy.delay` on any `Retry-After` value a server sends (RFC 9110 §10.2.3): only a 503
/// within the attempts is retried; a delay is never negative nor longer than the policy's
/// `maxDelay`; a value that is delay-seconds (digits, with optional whitespace around them) is
/// honoured exactly when it is short enough and ends the attempts when it is not, however many
/// digits it has.
///
/// Input: one byte (the status: 503 when even, else 500 + the byte), one byte (the attempt, 1-4),
/// one byte (the longest delay honoured, 0-15 s), then the field's value (absent when empty).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRetryAfter(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    guard input.count >= 3 else { return 0 }
    let status = input[0] & 1 == 0 ? 503 : 500 + Int(input[0])
    let attempt = Int(input[1] % 4) + 1
    let maxDelay = Duration.seconds(Int(input[2] % 16))
    let text = input.count > 3 ? Fuzz.string(Array(input[3...])) : nil
    let policy = RetryPolicy(maxAttempts: 3, maxDelay: maxDelay)
    let delay = policy.delay(status: status, retryAfter: text, attempt: attempt)
    guard let delay else {
        // Stopping is always allowed, except for a short delay-seconds, or no value (1 s), on a retried 503.
        guard status == 503, attempt < 3 else { return 0 }
        if let seconds = delaySeconds(text), seconds <= maxDelay { Fuzz.broken("Retry-After \(text.debugDescription) within \(maxDelay) not retried") }
        if text == nil, Duration.seconds(1) <= maxDelay { Fuzz.broken("no Retry-After within \(maxDelay) not retried after 1 s") }
        return 0
    }
    guard status == 503, attempt < 3 else { Fuzz.broken("status \(status) at attempt \(attempt) retried") }
    guard delay >= .zero, delay <= maxDelay else { Fuzz.broken("Retry-After \(text.debugDescription) gives \(delay), outside 0...\(maxDelay)") }
    if let seconds = delaySeconds(text), seconds != delay {
        Fuzz.broken("Retry-After \(text.debugDescription) gives \(delay), not "
            + (seconds == .seconds(Int64.max) ? "nil (more seconds than Int64 holds, past \(maxDelay))" : "\(seconds)"))
    }
    return 0
}

/// The value as delay-seconds (`1*DIGIT`, optional whitespace around it), read without a limit:
/// a value past `Int64` is returned as `Int64.max` seconds (longer than any policy's limit).
func delaySeconds(_ text: String?) -> Duration? {
    guard let text else { return nil }
    let digits = text.utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
    guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
    var value: Int64 = 0
    for digit in digits {
        let (times, overflow) = value.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = times.addingReportingOverflow(Int64(digit - 0x30))
        guard !overflow, !overflow2 else { return .seconds(Int64.max) }
        value = sum
    }
    return .seconds(value)
}
