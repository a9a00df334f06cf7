import Foundation
import SignAttest
import SignCore
import Testing

/// `Vectors/device.json` (docs/ATTEST.md §9.10), every case, refusals included: the file the
/// Python reference checks.
@Suite struct DeviceVectorTests {
    static let file: VectorFile = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/device.json")
        do { return try JSONDecoder().decode(VectorFile.self, from: Data(contentsOf: url)) } catch { fatalError("device.json: \(error)") }
    }()

    struct VectorFile: Decodable {
        let keys: [String: [String: String]]
        let challenge: [ChallengeCase]
        let register: [RegisterCase]
        let counter: [CounterCase]
        let field: [FieldCase]
        let redeem: [RedeemCase]

        func key(_ name: String) throws -> SigningKey {
            let json = try JSONSerialization.data(withJSONObject: try #require(keys[name]), options: [.sortedKeys])
            return try JWK.parseKey(String(decoding: json, as: UTF8.self))
        }
    }

    struct ChallengeCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKey: String, type: Int, levels: Int, issuedAt: UInt64, ttl: Int, bound: String?, origin: String, random: String
        let expected: [String: String]?
    }

    struct RegisterCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKeys: [String], body: String?, bodyHex: String?, signedBy: String?, origin: String, now: UInt64, skew: UInt64?
        let formats: [String], appIds: [String], redeemed: [String]?, revoked: [String]?
        let expected: Expected?
        struct Expected: Decodable { let keyId: String, id: String, format: String, appId: String, publicKey: [String: String] }
    }

    struct CounterCase: Decodable {
        let tcId: Int, comment: String, highest: UInt64, window: String, counters: [UInt64]
        let expected: Expected
        struct Expected: Decodable { let verdicts: [String], highest: UInt64, window: String }
    }

    struct FieldCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?, value: String
        let expected: [String: UInt64]?
    }

    struct RedeemCase: Decodable {
        let tcId: Int, comment: String, result: String, error: String?
        let serverKeys: [String], body: String, clientKey: String, origin: String, now: UInt64, skew: UInt64?, redeemed: [String]?
        let devices: [String: [String: String]], platformLevels: UInt16, formats: [String]?
        let expected: Expected?
        struct Expected: Decodable { let id: String, levels: UInt16 }
    }

    static func origin(_ url: String) throws -> String {
        try #require(AttestationScope.origin(ofCanonicalURL: try CanonicalURL.canonicalize(url)))
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { offset in
            let start = hex.index(hex.startIndex, offsetBy: offset)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
        }
    }

    static func store(redeemed: [String]?) async throws -> InMemoryRedemptionStore {
        let store = InMemoryRedemptionStore()
        for id in redeemed ?? [] { _ = try await store.redeem(try #require(SHA256Digest(bytes: bytes(hex: id))), expiresAt: .max, now: 0) }
        return store
    }

    @Test func challengeCases() throws {
        for test in Self.file.challenge {
            let context = "tcId \(test.tcId): \(test.comment)"
            var made: Challenge?, error: String?
            do {
                made = try Challenge(kind: .init(rawValue: UInt8(test.type)), difficulty: 0, count: 0, levels: AttestationLevels(rawValue: UInt16(test.levels)),
                                     issuedAt: test.issuedAt, ttl: test.ttl, keyThumbprint: test.bound.map(Self.bytes(hex:)) ?? Array(repeating: 0, count: 32),
                                     originDigest: AttestationScope.originDigest(try Self.origin(test.origin)), random: Self.bytes(hex: test.random),
                                     key: try AttestationKeys([Self.file.key(test.serverKey)]).issuingChallengeKey())
            } catch let failure as SignCoreError { error = failure.code.name }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context)")
                continue
            }
            let challenge = try #require(made, "\(context): \(error ?? "")")
            #expect(Self.hex(challenge.body) == test.expected?["body"], "\(context)")
            #expect(challenge.text == test.expected?["challenge"], "\(context)")
            #expect(Self.hex(challenge.id.bytes) == test.expected?["id"], "\(context)")
            #expect(try Challenge(parsing: challenge.text) == challenge, "\(context)")
        }
    }

    @Test func registerCases() async throws {
        #expect(Self.file.register.count >= 60)
        for test in Self.file.register {
            let context = "tcId \(test.tcId): \(test.comment)"
            let registry = InMemoryDeviceRegistry()
            for id in test.revoked ?? [] {
                _ = try await registry.register(DeviceRecord(keyID: id, format: .signcore, publicKey: "{}", appID: "x", registeredAt: 0))
                _ = try await registry.revoke(keyID: id)
            }
            let store = try await Self.store(redeemed: test.redeemed)
            let body = test.bodyHex.map(Self.bytes(hex:)) ?? Array((test.body ?? "").utf8)
            var record: DeviceRecord?, error: String?
            do {
                let formats = Set(test.formats.map(DeviceFormat.init(rawValue:)))
                let policy = try DevicePolicy(formats: formats, appIDs: test.appIds,
                                              verifiers: formats.filter(\.isPlatformAttested).map(UnverifiedPlatform.init))
                let attestor = try Attestor(keys: AttestationKeys(test.serverKeys.map(Self.file.key)), redemptions: store, skew: test.skew ?? 5000,
                                            devices: Devices(registry: registry, policy: policy))
                let signedBy = try test.signedBy.map { try Self.file.key($0).thumbprint.bytes }
                record = try await attestor.register(DeviceRegistration(body: body), signedBy: signedBy, origin: try Self.origin(test.origin), now: test.now).record
            } catch let failure as SignCoreError { error = failure.code.name }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context)")
                continue
            }
            let stored = try #require(record, "\(context): \(error ?? "")")
            let expected = try #require(test.expected)
            #expect(stored.keyID == expected.keyId && stored.format.rawValue == expected.format && stored.appID == expected.appId, "\(context)")
            let key = try JWK.parseKey(stored.publicKey)
            let wanted = try JWK.parseKey(String(decoding: try JSONSerialization.data(withJSONObject: expected.publicKey), as: UTF8.self))
            #expect(key.publicKey == wanted.publicKey && key.id == stored.keyID, "\(context)")
            let id = try #require(SHA256Digest(bytes: Self.bytes(hex: expected.id)))
            #expect(try await !store.redeem(id, expiresAt: .max, now: 0), "\(context): the challenge id is recorded")
            #expect(try await registry.device(keyID: stored.keyID) == stored, "\(context)")
        }
    }

    /// The vectors pin a registration up to its platform's own check (§9.4 step 6, §9.7-§9.8,
    /// tested with the platforms' artefacts in SignDeviceTests): a platform format reaches it,
    /// and is refused there as by a server that verifies none of it.
    struct UnverifiedPlatform: PlatformVerifier {
        let format: DeviceFormat
        func verifyRegistration(_ registration: DeviceRegistration, appIDs: [String], now: UInt64) async throws(SignCoreError) -> AttestedKey {
            throw SignCoreError(.formatNotAccepted, "this server does not verify registrations in this format")
        }
    }

    @Test func counterCases() throws {
        for test in Self.file.counter {
            let context = "tcId \(test.tcId): \(test.comment)"
            var window = try #require(CounterWindow(highest: test.highest, bitmap: Self.bytes(hex: test.window)))
            let verdicts = test.counters.map { counter in window.observe(counter).error?.code.name ?? "accepted" }
            #expect(verdicts == test.expected.verdicts, "\(context)")
            #expect(window.highest == test.expected.highest && Self.hex(window.bitmap) == test.expected.window, "\(context)")
        }
    }

    @Test func fieldCases() {
        for test in Self.file.field {
            let parsed = CounterWindow.counter(field: test.value)
            #expect(parsed == test.expected?["counter"], "tcId \(test.tcId): \(test.comment)")
            #expect((parsed == nil) == (test.error == "invalidHeader"), "tcId \(test.tcId): \(test.comment)")
        }
    }

    @Test func redeemCases() async throws {
        for test in Self.file.redeem {
            let context = "tcId \(test.tcId): \(test.comment)"
            let registry = InMemoryDeviceRegistry()
            for (name, device) in test.devices {
                let key = try Self.file.key(name)
                let record = DeviceRecord(keyID: Base64URL.encode(key.thumbprint.bytes), format: DeviceFormat(rawValue: try #require(device["format"])),
                                          publicKey: try JWK.serialize(key, includePrivate: false), appID: "x", registeredAt: 0)
                _ = try await registry.register(record)
                if device["status"] == "revoked" { _ = try await registry.revoke(keyID: record.keyID) }
            }
            let store = try await Self.store(redeemed: test.redeemed)
            let formats = Set((test.formats ?? DeviceFormat.all.map(\.rawValue)).map(DeviceFormat.init(rawValue:)))
            let policy = try DevicePolicy(formats: formats, appIDs: ["x"], platformLevels: AttestationLevels(rawValue: test.platformLevels),
                                          verifiers: formats.filter(\.isPlatformAttested).map(UnverifiedPlatform.init))
            var token: AttestationToken?, error: String?
            do {
                let attestor = try Attestor(keys: AttestationKeys(test.serverKeys.map(Self.file.key)), redemptions: store, skew: test.skew ?? 5000,
                                            devices: Devices(registry: registry, policy: policy))
                token = try await attestor.redeem(Array(test.body.utf8), keyThumbprint: try Self.file.key(test.clientKey).thumbprint.bytes,
                                                  origin: try Self.origin(test.origin), now: test.now)
            } catch let failure as SignCoreError { error = failure.code.name }
            guard test.result == "valid" else {
                #expect(error == test.error, "\(context)")
                continue
            }
            let issued = try #require(token, "\(context): \(error ?? "")")
            #expect(issued.levels.rawValue == test.expected?.levels, "\(context)")
            let id = try AttestRequest(body: Array(test.body.utf8)).challenge.id
            #expect(Self.hex(id.bytes) == test.expected?.id, "\(context)")
        }
    }
}
