import Foundation
import HTTPTypes
import SignAttest
@_spi(SignCoreTools) import SignCore
import SignHTTP
import Testing

/// `Vectors/ratelimit.json` (docs/ATTEST.md §10.10), every case, refusals included: the file the
/// Python reference checks.
@Suite struct RateLimitVectorTests {
    static let file: VectorFile = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/ratelimit.json")
        do { return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url)) } catch { fatalError("ratelimit.json: \(error)") }
    }()

    struct VectorFile: Decodable {
        let numberOfTests: Int
        let keys: [String: [String: String]]
        let gcra: [GCRACase]
        let offer: [OfferCase]
        let redeem: [RedeemCase]
        let rejection: [RejectionCase]
        let pass: [PassCase]
        let attest: [AttestCase]
        let action: [ActionCase]

        func key(_ name: String) throws -> SigningKey {
            let json = try JSONSerialization.data(withJSONObject: try #require(keys[name]), options: [.sortedKeys])
            return try JWK.parseKey(String(decoding: json, as: UTF8.self))
        }
    }

    struct GCRACase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let quota: Int, window: Int, burst: Int?, requests: [UInt64]
        let expected: Expected?
        struct Expected: Decodable { let interval: UInt64, tolerance: UInt64, verdicts: [Verdict] }
        struct Verdict: Decodable { let allowed: Bool, remaining: Int?, retryAfter: Int? }
    }

    struct OfferCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKey: String?, serverKeys: [String]?, bucket: String, type: String, difficulty: Int, count: Int, levels: Int
        let issuedAt: UInt64, ttl: Int, clientKey: String?, origin: String, random: String, solve: Bool?
        let expected: Expected?
        struct Expected: Decodable { let bucketDigest: String, body: String, siteKey: String, id: String, answer: String? }
    }

    struct RedeemCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?, reason: String?, cause: String?
        let serverKeys: [String], policy: Policy, bucket: String, fields: [[String]], covered: [String]?, signedBy: String?
        let origin: String, now: UInt64, skew: UInt64?, devices: [String: [String: String]]?, formats: [String]?, redeemed: [String]?
        let tokenID: String?
        let expected: Expected?
        struct Policy: Decodable { let types: [String], passLevels: Int, passTTL: Int }
        struct Expected: Decodable { let id: String, pass: Pass? }
        struct Pass: Decodable { let levels: UInt16, issuedAt: UInt64, ttl: Int, body: String?, token: String? }
    }

    struct RejectionCase: Decodable {
        let tcId: Int, comment: String, deviceError: String, error: String, reason: String?, cause: String?
    }

    struct PassCase: Decodable {
        let tcId: Int, comment: String, result: String
        let serverKeys: [String], field: String, clientKey: String, bucket: String, origin: String, now: UInt64, skew: UInt64?, passLevels: UInt16
        let expected: Expected?
        struct Expected: Decodable { let tokenID: String }
    }

    struct AttestCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKeys: [String], body: String, clientKey: String, origin: String, now: UInt64
    }

    struct ActionCase: Decodable {
        let tcId: Int, comment: String, advice: String
        let expected: Expected
        struct Expected: Decodable { let action: String }
    }

    static func origin(_ url: String) throws -> String {
        try #require(AttestationScope.origin(ofCanonicalURL: try CanonicalURL.canonicalize(url)))
    }

    /// The origin of a request URL, with SignCore's typed error.
    static func originTyped(_ url: String) throws(SignCoreError) -> String {
        guard let origin = AttestationScope.origin(ofCanonicalURL: try CanonicalURL.canonicalize(url)) else {
            throw SignCoreError(.invalidURL, "not an origin")
        }
        return origin
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).compactMap { offset in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)
        }
    }

    /// Every code of the device flow, by name (a rejection case names one).
    static let codes = SignCoreError.Code.deviceCodes + SignCoreError.Code.rateLimitCodes + SignCoreError.Code.attestationCodes
        + SignCoreError.Code.allCases

    /// A platform format accepted for the vectors' policies; the vectors stop before its own check.
    struct UnverifiedPlatform: PlatformVerifier {
        let format: DeviceFormat
        func verifyRegistration(_ registration: DeviceRegistration, appIDs: [String], now: UInt64) async throws(SignCoreError) -> AttestedKey {
            throw SignCoreError(.formatNotAccepted, "this server does not verify registrations in this format")
        }
    }

    @Test func everyCaseIsRead() {
        let file = Self.file
        #expect(file.gcra.count + file.offer.count + file.redeem.count + file.rejection.count + file.pass.count + file.attest.count
            + file.action.count == file.numberOfTests)
    }

    @Test func gcraCases() throws {
        for test in Self.file.gcra {
            let context = "tcId \(test.tcId): \(test.comment)"
            let limit: RateLimit
            do { limit = try RateLimit(bucket: "B", quota: test.quota, window: test.window, burst: test.burst) } catch {
                #expect(test.result == "invalid" && error.code.name == test.error, "\(context)")
                continue
            }
            let expected = try #require(test.expected, "\(context)")
            let now = Locked<UInt64>(0)
            let limiter = RateLimiter(clock: { now.withLock { $0 } })
            for (time, verdict) in zip(test.requests, expected.verdicts) {
                now.withLock { $0 = time }
                let outcome = limiter.take(limit, client: "c")
                #expect(outcome.allowed == verdict.allowed, "\(context)")
                if verdict.allowed { #expect(outcome.remaining == verdict.remaining, "\(context)") } else {
                    #expect(outcome.retryAfter == verdict.retryAfter, "\(context)")
                }
            }
        }
    }

    @Test func offerCases() throws {
        for test in Self.file.offer {
            let context = "tcId \(test.tcId): \(test.comment)"
            var offer: Challenge?, error: String?
            do throws(SignCoreError) {
                guard RateBucket.isName(test.bucket), BypassType.all.map(\.rawValue).contains(test.type) else {
                    throw SignCoreError(.invalidConfiguration, "a bucket's name and a bypass type")
                }
                let keys = try AttestationKeys((test.serverKeys ?? test.serverKey.map { [$0] } ?? []).map { name throws(SignCoreError) in
                    do { return try Self.file.key(name) } catch { throw SignCoreError(.invalidKey, "\(error)") }
                })
                let thumbprint = try test.clientKey.map { name throws(SignCoreError) in
                    do { return try Self.file.key(name).thumbprint.bytes } catch { throw SignCoreError(.invalidKey, "\(error)") }
                }
                guard let levels = UInt16(exactly: test.levels) else { throw SignCoreError(.invalidConfiguration, "levels are 16 bits") }
                // The policy's work, carried by SIGNCORE_POW's offer alone (§10.3).
                let work = test.type == BypassType.signcorePoW.rawValue
                guard !work || test.difficulty > 0 else { throw SignCoreError(.invalidConfiguration, "SIGNCORE_POW's offer carries work") }
                offer = try Challenge(kind: .rateBypass, difficulty: work ? test.difficulty : 0, count: work ? test.count : 0,
                                      levels: AttestationLevels(rawValue: levels),
                                      issuedAt: test.issuedAt, ttl: test.ttl, keyThumbprint: thumbprint ?? Array(repeating: 0, count: 32),
                                      originDigest: RateBucket.digest(origin: try Self.originTyped(test.origin), bucket: test.bucket),
                                      random: Self.bytes(hex: test.random), key: keys.issuingChallengeKey())
            } catch let failure { error = failure.code.name }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context): \(error ?? "-") \(test.comment)")
                continue
            }
            let made = try #require(offer, "\(context): \(error ?? "")")
            let expected = try #require(test.expected)
            #expect(Self.hex(made.originDigest) == expected.bucketDigest, "\(context)")
            #expect(Self.hex(made.body) == expected.body && made.text == expected.siteKey && Self.hex(made.id.bytes) == expected.id, "\(context)")
            if test.solve == true { #expect(Base64URL.encode(ProofOfWork.smallestAnswer(for: made)) == expected.answer, "\(context)") }
        }
    }

    @Test func redeemCases() async throws {
        for test in Self.file.redeem {
            let context = "tcId \(test.tcId): \(test.comment)"
            let registry = InMemoryDeviceRegistry()
            for (name, device) in test.devices ?? [:] {
                let key = try Self.file.key(name)
                let record = DeviceRecord(keyID: Base64URL.encode(key.thumbprint.bytes), format: DeviceFormat(rawValue: try #require(device["format"])),
                                          publicKey: try JWK.serialize(key, includePrivate: false), appID: "x", registeredAt: 0)
                _ = try await registry.register(record)
                if device["status"] == "revoked" { _ = try await registry.revoke(keyID: record.keyID) }
            }
            let store = InMemoryRedemptionStore()
            for id in test.redeemed ?? [] { _ = try await store.redeem(try #require(SHA256Digest(bytes: Self.bytes(hex: id))), expiresAt: .max, now: 0) }
            let formats = Set((test.formats ?? DeviceFormat.all.map(\.rawValue)).map(DeviceFormat.init(rawValue:)))
            let devices = Devices(registry: registry, policy: try DevicePolicy(formats: formats, appIDs: ["x"],
                                                                               verifiers: formats.filter(\.isPlatformAttested).map(UnverifiedPlatform.init)))
            var request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/")
            for field in test.fields { request.headerFields.append(HTTPField(name: try #require(HTTPField.Name(field[0])), value: field[1])) }
            let signer = try test.signedBy.map(Self.file.key)
            let identity = signer.map { key in
                VerifiedIdentity(format: "wtoken", keyID: key.id, algorithm: key.algorithm, created: 0, expires: 0,
                                 coveredHeaders: test.covered ?? [], keyThumbprint: key.thumbprint)
            }
            var pass: AttestationToken?, error: SignCoreError?
            do throws(SignCoreError) {
                guard let passLevels = UInt16(exactly: test.policy.passLevels) else { throw SignCoreError(.invalidConfiguration, "levels are 16 bits") }
                let policy = try BypassPolicy(types: test.policy.types.map { BypassType(rawValue: $0) }, passTTL: test.policy.passTTL,
                                              passLevels: AttestationLevels(rawValue: passLevels))
                let keys: [SigningKey]
                do { keys = try test.serverKeys.map(Self.file.key) } catch { throw SignCoreError(.invalidKey, "\(error)") }
                let attestor = try Attestor(keys: AttestationKeys(keys), redemptions: store, skew: test.skew ?? 5000, devices: devices)
                let answer = try RateLimitGate(attestor: attestor).answer(in: request, identity: identity)
                pass = try await attestor.redeemBypass(answer, policy: policy, bucket: test.bucket, origin: try Self.originTyped(test.origin),
                                                       keyThumbprint: signer?.thumbprint.bytes, now: test.now)
            } catch let failure { error = BypassRejection.refusal(for: failure).error }
            guard test.result == "valid" else {
                #expect(error?.code.name == test.error, "\(context)")
                if let failure = error, failure.code == .bypassDeviceRejected {
                    let (_, reason, cause) = BypassRejection.refusal(for: SignCoreError(try #require(Self.codes.first { $0.name == test.cause }), "x"))
                    #expect(reason?.rawValue == test.reason && cause?.name == test.cause, "\(context)")
                }
                continue
            }
            #expect(error == nil, "\(context): \(error?.description ?? "")")
            let expected = try #require(test.expected)
            let id = try #require(SHA256Digest(bytes: Self.bytes(hex: expected.id)))
            #expect(try await store.redeem(id, expiresAt: .max, now: 0) == false, "\(context): the offer recorded")
            #expect((pass != nil) == (expected.pass != nil), "\(context)")
            if let pass, let wanted = expected.pass {
                #expect(pass.levels.rawValue == wanted.levels && pass.issuedAt == wanted.issuedAt && pass.ttl == wanted.ttl, "\(context)")
                if let tokenID = test.tokenID, let body = wanted.body {
                    var bytes = Array(pass.body)
                    bytes.replaceSubrange(79..<95, with: Self.bytes(hex: tokenID))
                    #expect(Self.hex(bytes) == body, "\(context)")
                }
            }
        }
    }

    @Test func rejectionCases() throws {
        for test in Self.file.rejection {
            let code = try #require(Self.codes.first { $0.name == test.deviceError }, "tcId \(test.tcId)")
            let (error, reason, cause) = BypassRejection.refusal(for: SignCoreError(code, "x"))
            #expect(error.code.name == test.error && reason?.rawValue == test.reason && cause?.name == test.cause, "tcId \(test.tcId): \(test.comment)")
        }
    }

    @Test func passCases() throws {
        for test in Self.file.pass {
            let context = "tcId \(test.tcId): \(test.comment)"
            let attestor = try Attestor(keys: AttestationKeys(test.serverKeys.map(Self.file.key)), redemptions: InMemoryRedemptionStore(),
                                        skew: test.skew ?? 5000)
            let policy = try BypassPolicy(passLevels: AttestationLevels(rawValue: test.passLevels))
            let pass = attestor.ratePass(in: test.field, policy: policy, bucket: test.bucket, origin: try Self.origin(test.origin),
                                         keyThumbprint: try Self.file.key(test.clientKey).thumbprint.bytes, now: test.now)
            #expect(pass.map { Self.hex($0.tokenID) } == test.expected?.tokenID, "\(context)")
        }
    }

    @Test func attestCases() async throws {
        for test in Self.file.attest {
            let attestor = try Attestor(keys: AttestationKeys(test.serverKeys.map(Self.file.key)), redemptions: InMemoryRedemptionStore())
            var error: String?
            do {
                _ = try await attestor.redeem(Array(test.body.utf8), keyThumbprint: try Self.file.key(test.clientKey).thumbprint.bytes,
                                              origin: try Self.origin(test.origin), now: test.now)
            } catch let failure as SignCoreError { error = failure.code.name }
            #expect(test.result == "invalid" && error == test.error, "tcId \(test.tcId): \(test.comment)")
        }
    }

    @Test func actionCases() {
        for test in Self.file.action {
            let advice = (SignCoreError.Advice.allCases + [.attest, .register, .bypass]).first { $0.rawValue == test.advice }
            #expect((advice.map(Refusal.action(for:)) ?? "block") == test.expected.action, "tcId \(test.tcId): \(test.comment)")
        }
    }
}
