import Dispatch
import FuzzCommon
import HTTPTypes
import SignAttest
import SignCore
import SignHTTP

/// Rate limits' parsers on any bytes (docs/ATTEST.md §10): an answer's fields redeemed against a
/// fixed limit (§10.5), a `signcore-rate-pass` field (§10.6), a 429's `signcore-bypass` field
/// (§10.3) and a body read for secondary verification (§10.9). Never a trap; an answer passes
/// only for an offer this server made, answered as the offer asks; no pass is taken but one this
/// server signed; every offer a client reads parses as one.
enum Fixture {
    static let now: UInt64 = 1_790_000_010_000
    static let origin = "https://api.example.com"
    static let client: SigningKey = {
        do { return try SigningKey.hmac(secret: Array(repeating: 9, count: 32), id: "client") } catch { fatalError("\(error)") }
    }()
    static let keys: AttestationKeys = {
        do {
            return try AttestationKeys([SigningKey.hmac(secret: Array(repeating: 5, count: 32), id: "challenge-1"),
                                        SigningKey.ed25519(seed: Array(repeating: 3, count: 32), id: "token-1")])
        } catch { fatalError("fixed keys: \(error)") }
    }()
    static let policy: BypassPolicy = {
        do { return try BypassPolicy(types: BypassType.all, difficulty: 12, count: 1) } catch { fatalError("\(error)") }
    }()

    /// A fresh attestor per input (its redemption store empty), with a registry that knows the client.
    static func attestor() -> Attestor {
        do {
            let registry = InMemoryDeviceRegistry()
            return try Attestor(keys: keys, redemptions: InMemoryRedemptionStore(capacity: 64),
                                devices: Devices(registry: registry, policy: DevicePolicy(appIDs: ["com.example.app"])))
        } catch { fatalError("fixed attestor: \(error)") }
    }

    /// Runs `body` to its end on the concurrency pool (the fuzzer's callback is synchronous).
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let semaphore = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: T?
        Task {
            result = await body()
            semaphore.signal()
        }
        semaphore.wait()
        guard let result else { fatalError("no result") }
        return result
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRateBypass(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let parts = Fuzz.parts(UnsafeRawBufferPointer(start: start, count: count), 8)
    let text = parts.map(Fuzz.string)
    let signed = !parts[7].isEmpty && parts[7][0] & 1 == 1
    let thumbprint: [UInt8]? = signed ? Fixture.client.thumbprint.bytes : nil
    // 1. An answer to the LOGIN limit.
    let answer = BypassAnswer(type: text[0], response: text[1], siteKey: text[2], keyID: parts[3].isEmpty ? nil : text[3])
    let attestor = Fixture.attestor()
    let outcome = Fixture.wait { () -> Result<AttestationToken?, SignCoreError> in
        do throws(SignCoreError) {
            return .success(try await attestor.redeemBypass(answer, policy: Fixture.policy, bucket: "LOGIN", origin: Fixture.origin,
                                                            keyThumbprint: thumbprint, now: Fixture.now))
        } catch { return .failure(error) }
    }
    switch outcome {
    case .success(let pass):
        // Only a genuine offer answered as it asks: none in the fuzzer's input can carry this server's tag
        // but one it was seeded with, and none of those is answered but with the work it asks.
        guard let offer = try? Challenge(parsing: text[2]), offer.kind == .rateBypass,
              offer.originDigest == RateBucket.digest(origin: Fixture.origin, bucket: "LOGIN") else { Fuzz.broken("an answer passed without an offer") }
        if text[0] == "SIGNCORE_POW", !ProofOfWork.isValid(Base64URL.decode(text[1]) ?? [], for: offer) { Fuzz.broken("work that does not solve passed") }
        if text[0] != "SIGNCORE_POW" { Fuzz.broken("a device's answer passed with no registered device") }
        if (pass != nil) != signed { Fuzz.broken("a pass for an unsigned request, or none for a signed one") }
    case .failure(let error):
        let (refused, _, _) = BypassRejection.refusal(for: error)
        let expected: [SignCoreError.Code] = SignCoreError.Code.rateLimitCodes + [.headerNotCovered, .deviceKeyMismatch, .bodyTooLarge]
        if !expected.contains(refused.code) { Fuzz.broken("an unexpected refusal: \(error.code.name)") }
    }
    // 2. A pass field: only one this server signed, for this bucket and key.
    if let pass = attestor.ratePass(in: text[4], policy: Fixture.policy, bucket: "LOGIN", origin: Fixture.origin,
                                    keyThumbprint: Fixture.client.thumbprint.bytes, now: Fixture.now) {
        guard let key = Fixture.keys.tokenKey(id: pass.serverKeyID),
              (try? key.verifyMessage(Array(pass.body), signature: Array(pass.signature), context: AttestationToken.signatureContext)) != nil
        else { Fuzz.broken("a pass was taken that this server did not sign") }
    }
    // 3. A 429's offers, as a client reads them.
    if let name = HTTPField.Name("signcore-bypass") {
        var response = HTTPResponse(status: .tooManyRequests)
        response.headerFields[name] = text[5]
        for offer in RateLimitOffer.offers(in: response) {
            guard offer.offer.kind == .rateBypass, RateBucket.isName(offer.bucket), (try? Challenge(parsing: offer.siteKey)) == offer.offer else {
                Fuzz.broken("an offer was read that is not one")
            }
        }
    }
    // 4. A body read for secondary verification: what is read writes back to the same decision.
    let verdict = SecondaryVerification(problem: parts[6])
    if SecondaryVerification.cptCheck(cookie: text[3], body: parts[6]) != (verdict.requiresVerification ? 1 : 0) {
        Fuzz.broken("cptCheck disagrees with the reading")
    }
    return 0
}
