import Testing
@_spi(SignCoreTools) @testable import SignCore

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let value: Locked<Int64>
    init(_ start: Int64) { value = Locked(start) }
    var now: Int64 { value.withLock { $0 } }
    func set(_ t: Int64) { value.withLock { $0 = t } }
    var function: @Sendable () -> Int64 { { self.now } }
}

/// A signer and a verifier over one key, with a shared test clock.
struct Pair {
    let key: SigningKey
    let clock: TestClock
    let signer: Signer
    let verifier: Verifier

    init(_ algorithm: SignatureAlgorithm, account: String = "", lifetime: Int64 = 60, skew: Int64 = 30,
         maxLifetime: Int64 = 300, replayGuard: (any ReplayGuard)? = nil) throws {
        key = try SigningKey.generate(algorithm)
        clock = TestClock(1_790_000_000)
        signer = try Signer(key: key, lifetime: lifetime, account: account, clock: clock.function)
        verifier = try Verifier(keys: try KeySet([key.publicOnly()]), replayGuard: replayGuard ?? (try InMemoryReplayGuard()),
                            skew: skew, maxLifetime: maxLifetime, clock: clock.function)
    }
}

func received(_ method: String, _ url: String, _ body: [UInt8] = [], _ headers: SignedHeaders) -> ReceivedRequest {
    ReceivedRequest(method: method, url: url, body: .bytes(body), whash: headers.whash, wtoken: headers.wtoken)
}

/// The error code `body` throws, or nil when it succeeds.
func errorCode(_ body: () async throws -> Void) async -> SignCoreError.Code? {
    do {
        try await body()
        return nil
    } catch let error as SignCoreError {
        return error.code
    } catch {
        Issue.record("not a SignCoreError: \(error)")
        return nil
    }
}
