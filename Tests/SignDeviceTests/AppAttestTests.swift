import Crypto
import Foundation
@_spi(SignCoreTools) import SignCore
import SignAttest
import SignDevice
import SignTestSupport
import Testing
import X509

/// App Attest (docs/ATTEST.md §9.7): a real device's attestation and assertion (a public test
/// suite's, Fixtures/README.md), and attestations made at test time by an independent
/// implementation (scripts/device-fixtures, Python) whose every object pyattest also verifies:
/// SignCore's verdicts and pyattest's are compared, case by case.
@Suite struct AppAttestTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let realAppID = "6MURL8TA57.de.vincent-haupert.apple-appattest-poc"
    static let realKeyID = "YmbJO4x5nEHUvncp9zdWuVZjNBEMgJn3cdSToAXQe3M="
    static let realTime = Date(timeIntervalSince1970: 1_611_404_013)  // 2021-01-23T12:13:33Z

    static func fixture(_ name: String) throws -> [UInt8] {
        let text = try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return Array(try #require(Data(base64Encoded: text)))
    }

    static func code(_ body: () async throws(SignCoreError) -> some Any) async -> SignCoreError.Code? {
        do throws(SignCoreError) {
            _ = try await body()
            return nil
        } catch { return error.code }
    }

    @Test func theEmbeddedRootIsApples() throws {
        let der = try AppAttestVerifier.appleRoot.serializeAsPEM().derBytes
        #expect(SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined()
            == "1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932")
    }

    @Test func aRealDevicesAttestationAndAssertion() async throws {
        let object = try Self.fixture("appattest-ios-14.4-attestation.b64")
        let keyID = Array(try #require(Data(base64Encoded: Self.realKeyID)))
        let clientData = Array("wurzelpfropf".utf8)
        let development = AppAttestVerifier(environments: [.development])
        let key = try await development.verifyAttestation(object, clientData: clientData, keyID: keyID, appIDs: ["other.app", Self.realAppID],
                                                          at: Self.realTime)
        #expect(key.keyID == Self.realKeyID && key.appID == Self.realAppID && key.environment == "development" && key.binding == keyID)
        // Each of Apple's checks, failed one at a time.
        #expect(await Self.code { () async throws(SignCoreError) in
            try await AppAttestVerifier().verifyAttestation(object, clientData: clientData, keyID: keyID, appIDs: [Self.realAppID], at: Self.realTime)
        } == .environmentMismatch)
        #expect(await Self.code { () async throws(SignCoreError) in
            try await development.verifyAttestation(object, clientData: clientData, keyID: keyID, appIDs: [Self.realAppID], at: Date())
        } == .certificateUntrusted)
        #expect(await Self.code { () async throws(SignCoreError) in
            try await development.verifyAttestation(object, clientData: Array("wurzel".utf8), keyID: keyID, appIDs: [Self.realAppID], at: Self.realTime)
        } == .nonceMismatch)
        #expect(await Self.code { () async throws(SignCoreError) in
            try await development.verifyAttestation(object, clientData: clientData, keyID: Array(repeating: 7, count: 32), appIDs: [Self.realAppID],
                                                    at: Self.realTime)
        } == .deviceKeyMismatch)
        #expect(await Self.code { () async throws(SignCoreError) in
            try await development.verifyAttestation(object, clientData: clientData, keyID: keyID, appIDs: ["6MURL8TA57.other"], at: Self.realTime)
        } == .appMismatch)
        // The assertion the same device made, counter 1.
        let record = DeviceRecord(keyID: key.keyID, format: .appleAppAttest, publicKey: key.publicKey, appID: key.appID,
                                  environment: key.environment, registeredAt: 0)
        let assertion = try Self.fixture("appattest-ios-14.4-assertion.b64")
        #expect(try development.verifyAssertion(assertion, clientData: clientData, record: record) == 1)
        #expect(await Self.code { () async throws(SignCoreError) in
            try development.verifyAssertion(assertion, clientData: Array("wurzel".utf8), record: record)
        } == .assertionInvalid)
        var otherApp = record
        otherApp.appID = "6MURL8TA57.other"
        #expect(await Self.code { () async throws(SignCoreError) in try development.verifyAssertion(assertion, clientData: clientData, record: otherApp) }
            == .appMismatch)
    }

    /// Every byte of the real attestation object changed in turn (every 7th, to bound the time):
    /// none is accepted, and none traps.
    @Test func noAlteredByteOfARealAttestationIsAccepted() async throws {
        let object = try Self.fixture("appattest-ios-14.4-attestation.b64")
        let keyID = Array(try #require(Data(base64Encoded: Self.realKeyID)))
        let verifier = AppAttestVerifier(environments: [.development])
        var accepted = 0
        for index in stride(from: 0, to: object.count, by: 7) {
            var altered = object
            altered[index] ^= 0x01
            if (try? await verifier.verifyAttestation(altered, clientData: Array("wurzelpfropf".utf8), keyID: keyID, appIDs: [Self.realAppID],
                                                      at: Self.realTime)) != nil {
                accepted += 1
            }
        }
        // A byte of the receipt, which Apple's steps do not read, may change: count only those.
        #expect(accepted <= Self.receiptBytes(object) / 7 + 1)
    }

    /// The number of bytes of the attestation's receipt (not covered by the checks).
    static func receiptBytes(_ object: [UInt8]) -> Int {
        (try? CBOR(decoding: object))?["attStmt"]?["receipt"]?.bytesValue?.count ?? 0
    }

    // MARK: - Made at test time

    static let appID = "TEAM123456.com.example.app"

    struct Fixtures: Decodable {
        let root: String
        let registrations: [String: Registration]
        let assertions: [Assertion]
        struct Registration: Decodable { let token: String, keyId: String, pyattest: String }
        struct Assertion: Decodable { let registration: String, clientData: String, counter: UInt64, variant: String, token: String, pyattest: String }
    }

    /// Runs scripts/device-fixtures with `request`.
    static func make(_ request: [String: Any]) throws -> Fixtures {
        try JSONDecoder().decode(Fixtures.self, from: try run(request))
    }

    /// scripts/device-fixtures' output for `request`.
    static func run(_ request: [String: Any]) throws -> Data { try deviceFixturesBlocking(JSONSerialization.data(withJSONObject: request)) }

    /// Each variant: SignCore's code, and pyattest's verdict for the same object.
    static let variants: [(variant: String, code: SignCoreError.Code?, pyattest: String)] = [
        ("valid", nil, "valid"), ("production", .environmentMismatch, "valid"), ("wrongNonce", .nonceMismatch, "InvalidNonceException"),
        ("otherRoot", .certificateUntrusted, "InvalidCertificateChainException"), ("counter", .platformCounterInvalid, "InvalidCounterException"),
        ("wrongApp", .appMismatch, "InvalidAppIdException"), ("credentialId", .deviceKeyMismatch, "InvalidCredentialIdException"),
        ("tampered", .nonceMismatch, "InvalidNonceException"),
        // App Attest keys are P-256: pyattest does not check the key type, SignCore refuses any other.
        ("rsaKey", .platformTokenMalformed, "valid"),
    ]

    @Test func attestationsMadeByAnIndependentImplementationAgreeWithPyattest() async throws {
        let fixtures = try Self.make(["appId": Self.appID, "registrations": Self.variants.map { ["name": $0.variant, "challenge": "challenge-text", "variant": $0.variant] },
                                      "assertions": []])
        let verifier = AppAttestVerifier(roots: [try Certificate(pemEncoded: fixtures.root)], environments: [.development])
        for (variant, expected, pyattest) in Self.variants {
            let made = try #require(fixtures.registrations[variant])
            #expect(made.pyattest == pyattest, "\(variant): pyattest said \(made.pyattest)")
            let keyID = Array(try #require(Data(base64Encoded: made.keyId)))
            let token = Array(try #require(Data(base64Encoded: made.token)))
            let code = await Self.code { () async throws(SignCoreError) in
                try await verifier.verifyAttestation(token, clientData: Array("challenge-text".utf8), keyID: keyID, appIDs: [Self.appID], at: Date())
            }
            #expect(code == expected, "\(variant)")
        }
    }

    @Test func assertionsMadeByAnIndependentImplementation() async throws {
        let assertions: [(variant: String, counter: UInt64, code: SignCoreError.Code?, pyattest: String)] = [
            ("valid", 1, nil, "valid"), ("valid", 200, nil, "valid"), ("tampered", 3, .assertionInvalid, "InvalidSignature"),
            ("otherKey", 4, .assertionInvalid, "InvalidSignature"),
            // pyattest does not check the RP ID hash of an assertion; Apple's steps do, and so does SignCore.
            ("wrongApp", 5, .appMismatch, "valid"),
            // Nor that an assertion counts from 1 (the attestation counted 0).
            ("valid", 0, .platformCounterInvalid, "valid"),
        ]
        let fixtures = try Self.make(["appId": Self.appID, "registrations": [["name": "key", "challenge": "c", "variant": "valid"]],
                                      "assertions": assertions.map { ["registration": "key", "clientData": "payload", "counter": $0.counter, "variant": $0.variant] }])
        let verifier = AppAttestVerifier(roots: [try Certificate(pemEncoded: fixtures.root)], environments: [.development])
        let made = try #require(fixtures.registrations["key"])
        let key = try await verifier.verifyAttestation(Array(try #require(Data(base64Encoded: made.token))), clientData: Array("c".utf8),
                                                       keyID: Array(try #require(Data(base64Encoded: made.keyId))), appIDs: [Self.appID], at: Date())
        let record = DeviceRecord(keyID: key.keyID, format: .appleAppAttest, publicKey: key.publicKey, appID: key.appID, registeredAt: 0)
        for (index, expected) in assertions.enumerated() {
            let got = fixtures.assertions[index]
            #expect(got.pyattest == expected.pyattest, "\(expected.variant): pyattest said \(got.pyattest)")
            let token = Array(try #require(Data(base64Encoded: got.token)))
            var counter: UInt64?
            let code = await Self.code { () async throws(SignCoreError) in
                counter = try verifier.verifyAssertion(token, clientData: Array("payload".utf8), record: record)
            }
            #expect(code == expected.code, "\(expected.variant)")
            if code == nil { #expect(counter == expected.counter) }
        }
    }
}
