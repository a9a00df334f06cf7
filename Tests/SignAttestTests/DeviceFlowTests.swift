import Testing
import SignCore
import SignAttest

/// ATTEST.md §9 in one process: registration of a `signcore` key against a one-time challenge,
/// its refusals, the counter window, and a device challenge redeemed for the device levels.
@Suite struct DeviceFlowTests {
    let server: AttestationKeys
    let device: SigningKey
    let origin = "https://api.example.com"
    let now: UInt64 = 1_767_225_600_000
    let registeredLevel = AttestationLevels.level(14), platformLevel = AttestationLevels.level(15)

    init() throws {
        server = try AttestationKeys([SigningKey.hmac(secret: Array(repeating: 7, count: 32), id: "challenge-1"),
                                      SigningKey.generate(.ed25519, id: "token-1")])
        device = try SigningKey.generate(.p256)
    }

    func attestor(registry: InMemoryDeviceRegistry = InMemoryDeviceRegistry(), formats: Set<DeviceFormat> = [.signcore]) throws -> Attestor {
        try Attestor(keys: server, redemptions: InMemoryRedemptionStore(),
                     devices: Devices(registry: registry, policy: DevicePolicy(formats: formats, appIDs: ["com.example.app"],
                                                                             platformLevels: platformLevel)))
    }

    var thumbprint: [UInt8] { device.thumbprint.bytes }

    func body(_ challenge: Challenge, key: SigningKey? = nil, keyID: String? = nil, appID: String = "com.example.app",
              format: String = "signcore") throws -> [UInt8] {
        let key = key ?? device
        let jwk = try JWK.serialize(key, includePrivate: false)
        return Array("""
            {"platform":"ios","format":"\(format)","keyId":"\(keyID ?? Base64URL.encode(key.thumbprint.bytes))","jwk":\(jwk),\
            "challenge":"\(challenge.text)","appId":"\(appID)"}
            """.utf8)
    }

    func register(_ attestor: Attestor, _ body: [UInt8], signedBy: [UInt8]? = nil, at time: UInt64? = nil) async throws(SignCoreError) -> DeviceRecord {
        try await attestor.register(DeviceRegistration(body: body), signedBy: signedBy ?? thumbprint, origin: origin, now: time ?? now + 1).record
    }

    func refusal(_ attestor: Attestor, _ body: [UInt8], signedBy: [UInt8]? = nil, at time: UInt64? = nil) async -> SignCoreError.Code? {
        do throws(SignCoreError) {
            _ = try await register(attestor, body, signedBy: signedBy, at: time)
            return nil
        } catch { return error.code }
    }

    @Test func registerThenTheKeyVerifiesThroughTheRegistry() async throws {
        let registry = InMemoryDeviceRegistry()
        let attestor = try attestor(registry: registry)
        let cache = try KeyCache(source: registry)
        registry.changes.invalidate(cache)
        // Unknown first, and remembered as unknown by the cache.
        #expect(try await cache.key(id: device.id) == nil)
        let challenge = try attestor.registrationChallenge(boundTo: nil, origin: origin, now: now)
        let record = try await register(attestor, body(challenge))
        #expect(record.keyID == device.id && record.format == .signcore && record.appID == "com.example.app" && record.status == .active)
        // The registration reached the cache at once (no negative entry left).
        #expect(try await cache.key(id: device.id)?.publicKey == device.publicKey)
        #expect(try await registry.revoke(keyID: device.id))
        #expect(try await cache.key(id: device.id) == nil)
        #expect(try await !registry.revoke(keyID: device.id))
    }

    @Test func eachRegistrationRefusalHasItsCode() async throws {
        let attestor = try attestor()
        let fresh = { try attestor.registrationChallenge(boundTo: nil, origin: self.origin, now: self.now) }
        let other = try SigningKey.generate(.ed25519)
        // The body.
        #expect(await refusal(attestor, Array("{}".utf8)) == .registrationMalformed)
        #expect(await refusal(attestor, Array(try body(fresh()).dropLast())) == .registrationMalformed)
        #expect(await refusal(attestor, try body(fresh(), format: "webauthn")) == .formatNotAccepted)
        #expect(await refusal(attestor, try body(fresh(), format: "apple-app-attest")) == .registrationMalformed)  // no token
        // A challenge of another kind, forged, expired, or from another origin.
        let pow = try attestor.challenge(ChallengePolicy(levels: .level(0)), keyThumbprint: thumbprint, origin: origin, now: now)
        #expect(await refusal(attestor, try body(pow)) == .registrationMalformed)
        let foreign = try Attestor(keys: AttestationKeys([SigningKey.hmac(secret: Array(repeating: 9, count: 32), id: "challenge-1")]),
                                   redemptions: InMemoryRedemptionStore(), devices: attestor.devices)
        #expect(await refusal(attestor, try body(foreign.registrationChallenge(boundTo: nil, origin: origin, now: now))) == .challengeForged)
        #expect(await refusal(attestor, try body(fresh()), at: now + 305_000) == .registrationExpired)
        #expect(await refusal(attestor, try body(attestor.registrationChallenge(boundTo: nil, origin: "https://other.example", now: now))) == .challengeScopeMismatch)
        // The key: its id, who signed, the key the challenge is bound to.
        #expect(await refusal(attestor, try body(fresh(), keyID: other.id)) == .deviceKeyMismatch)
        #expect(await refusal(attestor, try body(fresh()), signedBy: other.thumbprint.bytes) == .deviceKeyMismatch)
        let boundElsewhere = try attestor.registrationChallenge(boundTo: other.thumbprint.bytes, origin: origin, now: now)
        #expect(await refusal(attestor, try body(boundElsewhere)) == .challengeKeyMismatch)
        let boundHere = try attestor.registrationChallenge(boundTo: thumbprint, origin: origin, now: now)
        // The app, then success, then the challenge is spent.
        #expect(await refusal(attestor, try body(boundHere, appID: "com.example.other")) == .appMismatch)
        #expect(await refusal(attestor, try body(boundHere)) == nil)
        #expect(await refusal(attestor, try body(boundHere)) == .challengeRedeemed)
        // Registering again with a new challenge keeps the record; a revoked key never comes back.
        #expect(await refusal(attestor, try body(fresh())) == nil)
        #expect(try await attestor.devices!.registry.revoke(keyID: device.id))
        #expect(await refusal(attestor, try body(fresh())) == .deviceRevoked)
        // A refused registration writes nothing: the challenge stays redeemable.
        let kept = try fresh()
        #expect(await refusal(attestor, try body(kept, key: other, appID: "nope"), signedBy: other.thumbprint.bytes) == .appMismatch)
        #expect(await refusal(attestor, try body(kept, key: other), signedBy: other.thumbprint.bytes) == nil)
    }

    @Test func aJWKWhoseKidIsNotItsThumbprintIsRefused() async throws {
        let attestor = try attestor()
        let named = try SigningKey.p256(publicKey: device.publicKey, id: "my-phone")
        let challenge = try attestor.registrationChallenge(boundTo: nil, origin: origin, now: now)
        #expect(await refusal(attestor, try body(challenge, key: named, keyID: Base64URL.encode(thumbprint))) == .deviceKeyMismatch)
    }

    @Test func aDeviceChallengeGrantsTheLevelsTheFormatEarns() async throws {
        let attestor = try attestor()
        let challenge = { (levels: AttestationLevels, key: [UInt8]) throws(SignCoreError) -> Challenge in
            try attestor.challenge(.device(levels: levels), keyThumbprint: key, origin: self.origin, now: self.now)
        }
        let redeem = { (challenge: Challenge) async throws(SignCoreError) -> AttestationToken in
            try await attestor.redeem(AttestRequest(challenge: challenge, answer: []).body, keyThumbprint: self.thumbprint,
                                      origin: self.origin, now: self.now + 1)
        }
        // Not registered yet.
        #expect(await code { () async throws(SignCoreError) in try await redeem(challenge(registeredLevel, thumbprint)) } == .deviceUnknown)
        _ = try await register(attestor, body(attestor.registrationChallenge(boundTo: nil, origin: origin, now: now)))
        let token = try await redeem(challenge(registeredLevel, thumbprint))
        #expect(token.levels == registeredLevel)
        // A signcore key proves possession, not integrity.
        #expect(await code { () async throws(SignCoreError) in try await redeem(challenge(platformLevel, thumbprint)) } == .formatNotAccepted)
        // Another key's challenge, and a revoked key.
        #expect(await code { () async throws(SignCoreError) in try await redeem(challenge(registeredLevel, Array(repeating: 1, count: 32))) } == .challengeKeyMismatch)
        _ = try await attestor.devices!.registry.revoke(keyID: device.id)
        #expect(await code { () async throws(SignCoreError) in try await redeem(challenge(registeredLevel, thumbprint)) } == .deviceRevoked)
    }

    func code(_ body: () async throws(SignCoreError) -> some Any) async -> SignCoreError.Code? {
        do throws(SignCoreError) {
            _ = try await body()
            return nil
        } catch { return error.code }
    }

    @Test func theCounterWindowAcceptsReorderingAndRefusesRepeats() {
        var window = CounterWindow()
        #expect(window.observe(0) == .accepted)  // no counter, never sent one
        #expect(window.observe(5) == .accepted)
        #expect(window.observe(0) == .missing)
        #expect(window.observe(3) == .accepted)  // behind, unseen
        #expect(window.observe(3) == .repeated)
        #expect(window.observe(5) == .repeated)
        #expect(window.observe(200) == .accepted)
        #expect(window.observe(72) == .tooOld)  // 128 behind
        #expect(window.observe(73) == .accepted)  // 127 behind: the oldest told apart
        #expect(window.observe(73) == .repeated)
        #expect(window.observe(136) == .accepted)  // 64 behind: the upper word
        #expect(window.observe(136) == .repeated)
        #expect(window.observe(137) == .accepted)  // 63 behind: the lower word
        // A slide of exactly 64 moves the lower word up whole.
        #expect(window.observe(264) == .accepted)
        #expect(window.observe(200) == .repeated && window.observe(137) == .repeated && window.observe(138) == .accepted)
        #expect(window.observe(136) == .tooOld)
        #expect(CounterWindow(highest: window.highest, bitmap: window.bitmap) == window)
    }

    /// The window against a model that remembers every counter: the same verdicts for random
    /// sequences with reordering, repeats and jumps.
    @Test func theCounterWindowMatchesAModel() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var window = CounterWindow()
            var seen = Set<UInt64>(), highest: UInt64 = 0
            for _ in 0..<300 {
                let step = UInt64.random(in: 0...20, using: &generator)
                var counter: UInt64
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: counter = highest + 1 + step * UInt64.random(in: 0...15, using: &generator)
                case 1: counter = highest >= step * 8 ? highest - step * 8 : 0
                case 2: counter = seen.randomElement(using: &generator) ?? 0
                default: counter = highest >= step ? highest - step : 0
                }
                let expected: CounterWindow.Verdict
                if counter == 0 { expected = highest == 0 ? .accepted : .missing }
                else if counter > highest { expected = .accepted }
                else if highest - counter >= CounterWindow.width { expected = .tooOld }
                else if seen.contains(counter) { expected = .repeated }
                else { expected = .accepted }
                #expect(window.observe(counter) == expected)
                if expected == .accepted, counter > 0 { seen.insert(counter); highest = max(highest, counter) }
            }
        }
    }

    @Test func codesHaveTheirStatusAndAdvice() {
        #expect(SignCoreError.Code.deviceCodes.map(\.rawValue) == Array(100...116))
        #expect(SignCoreError.Code.deviceCodes.allSatisfy { SignCoreError.Code.Range.devices ~= $0.rawValue })
        #expect(SignCoreError.Code.deviceUnknown.advice == .register && SignCoreError.Code.deviceUnknown.status == 428)
        #expect(SignCoreError.Advice.register.isRetryable)
    }
}
