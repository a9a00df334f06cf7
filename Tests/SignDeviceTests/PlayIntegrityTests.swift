import Crypto
import Foundation
import SignAttest
import SignCore
import SignDevice
import Testing

/// Play Integrity (docs/ATTEST.md §9.8): integrity tokens made at test time by an independent
/// implementation (scripts/device-fixtures) under Play Console keys made there too, every one
/// also verified by pyattest, whose verdicts SignCore's are compared with; then a registration
/// of an Android install's key with a verdict, end to end through the Attestor.
@Suite struct PlayIntegrityTests {
    static let package = "com.example.app"

    struct Made: Decodable {
        let playIntegrity: Play
        struct Play: Decodable {
            let decryptionKey: String, verificationKey: String, certificateDigest: String
            let tokens: [Token]
        }
        struct Token: Decodable { let nonce: String, variant: String, token: String, pyattest: String }
    }

    static func make(_ cases: [(nonce: String, variant: String)]) throws -> Made.Play {
        let data = try AppAttestTests.run(["appId": package, "registrations": [],
                                           "playIntegrity": ["package": package, "cases": cases.map { ["nonce": $0.nonce, "variant": $0.variant] }]])
        return try JSONDecoder().decode(Made.self, from: data).playIntegrity
    }

    static func verifier(_ made: Made.Play, digests: Set<String>? = nil) throws -> PlayIntegrityVerifier {
        try PlayIntegrityVerifier(decryptionKey: Array(try #require(Data(base64Encoded: made.decryptionKey))),
                                  verificationKey: Array(try #require(Data(base64Encoded: made.verificationKey))),
                                  certificateDigests: digests ?? [made.certificateDigest])
    }

    @Test func verdictsAgreeWithPyattest() async throws {
        let key = try SigningKey.generate(.p256)
        let attestor = try Attestor(keys: AttestationKeys([SigningKey.hmac(secret: Array(repeating: 1, count: 32), id: "c"),
                                                           SigningKey.generate(.ed25519, id: "t")]),
                                    redemptions: InMemoryRedemptionStore(),
                                    devices: Devices(registry: InMemoryDeviceRegistry(), policy: DevicePolicy(appIDs: [Self.package])))
        let origin = "https://api.example.com", now = UInt64(Date().timeIntervalSince1970 * 1000)
        let variants: [(String, SignCoreError.Code?, String)] = [
            ("valid", nil, "valid"), ("wrongNonce", .nonceMismatch, "InvalidNonceException"),
            ("wrongPackage", .appMismatch, "InvalidAppIdException"), ("wrongCertificate", .appMismatch, "InvalidKeyIdException"),
            ("unrecognized", .integrityVerdictFailed, "InvalidAppIntegrity"), ("noDeviceIntegrity", .integrityVerdictFailed, "InvalidDeviceIntegrity"),
            ("otherSigner", .certificateUntrusted, "PyAttestException"), ("otherDecryptionKey", .platformTokenMalformed, "PyAttestException"),
        ]
        // One registration challenge per case, and the nonce that binds it and the key.
        let challenges = try variants.map { _ in try attestor.registrationChallenge(boundTo: nil, origin: origin, now: now) }
        let made = try Self.make(zip(challenges, variants).map { (PlayIntegrityVerifier.nonce(challenge: $0.text, thumbprint: key.thumbprint.bytes), $1.0) })
        let verifier = try Self.verifier(made)
        for ((challenge, (variant, expected, pyattest)), token) in zip(zip(challenges, variants), made.tokens) {
            #expect(token.pyattest == pyattest, "\(variant): pyattest said \(token.pyattest)")
            let body = Array(#"{"format":"android-play-integrity","keyId":"\#(key.id)","jwk":\#(try JWK.serialize(key, includePrivate: false)),"challenge":"\#(challenge.text)","token":"\#(token.token)"}"#.utf8)
            let code = await AppAttestTests.code { () async throws(SignCoreError) in
                try await verifier.verifyRegistration(DeviceRegistration(body: body), appIDs: [Self.package], now: now)
            }
            #expect(code == expected, "\(variant)")
        }
    }

    /// An Android install's key registered with a verdict, then its requests' level: the record
    /// is platform-attested, bound to the key that signed the registration.
    @Test func anAndroidKeyRegistersWithAVerdict() async throws {
        let key = try SigningKey.generate(.p256), other = try SigningKey.generate(.p256)
        let registry = InMemoryDeviceRegistry()
        let origin = "https://api.example.com", now = UInt64(Date().timeIntervalSince1970 * 1000)
        var challenges: [Challenge] = []
        let keys = try AttestationKeys([SigningKey.hmac(secret: Array(repeating: 1, count: 32), id: "c"), SigningKey.generate(.ed25519, id: "t")])
        let issuer = try Attestor(keys: keys, redemptions: InMemoryRedemptionStore(),
                                  devices: Devices(registry: registry, policy: DevicePolicy(appIDs: [Self.package])))
        for _ in 0..<2 { challenges.append(try issuer.registrationChallenge(boundTo: key.thumbprint.bytes, origin: origin, now: now)) }
        let made = try Self.make(challenges.map { (PlayIntegrityVerifier.nonce(challenge: $0.text, thumbprint: key.thumbprint.bytes), "valid") })
        let policy = try DevicePolicy(formats: [.signcore, .androidPlayIntegrity], appIDs: [Self.package], platformLevels: .level(15),
                                      verifiers: [try Self.verifier(made)])
        let attestor = try Attestor(keys: keys, redemptions: InMemoryRedemptionStore(), devices: Devices(registry: registry, policy: policy))
        func body(_ index: Int) throws -> DeviceRegistration {
            try DeviceRegistration(body: Array(#"{"platform":"android","format":"android-play-integrity","keyId":"\#(key.id)","jwk":\#(try JWK.serialize(key, includePrivate: false)),"challenge":"\#(challenges[index].text)","token":"\#(made.tokens[index].token)"}"#.utf8))
        }
        // Signed by another key: refused.
        let first = try body(0)
        #expect(await AppAttestTests.code { () async throws(SignCoreError) in
            try await attestor.register(first, signedBy: other.thumbprint.bytes, origin: origin, now: now)
        } == .deviceKeyMismatch)
        let record = try await attestor.register(first, signedBy: key.thumbprint.bytes, origin: origin, now: now).record
        #expect(record.format == .androidPlayIntegrity && record.keyID == key.id && record.appID == Self.package)
        #expect(try await registry.record(id: key.id)?.key.publicKey == key.publicKey)
        // The platform level through a device challenge.
        let challenge = try attestor.challenge(.device(levels: .level(15)), keyThumbprint: key.thumbprint.bytes, origin: origin, now: now)
        let token = try await attestor.redeem(AttestRequest(challenge: challenge, answer: []).body, keyThumbprint: key.thumbprint.bytes,
                                              origin: origin, now: now + 1)
        #expect(token.levels == .level(15))
    }
}
