import Testing
@_spi(SignCoreTools) @testable import SignCore

/// Keys whose private half is held elsewhere (ExternalSigner.swift), with a software holder
/// standing in for a Secure Enclave, keystore or KMS: same tokens, same checks, and every way a
/// holder can misbehave is caught before a token leaves.
@Suite struct ExternalSignerTests {
    /// Holds an in-process private key and answers after a suspension, as a remote holder would;
    /// records every signing input it was handed.
    final class SoftwareHolder: ExternalSigner {
        enum Behaviour { case honest, fails, wrongKey, truncated, derEncoded }
        let key: SigningKey
        let behaviour: Behaviour
        let inputs = Locked<[[UInt8]]>([])
        init(_ algorithm: SignatureAlgorithm, _ behaviour: Behaviour = .honest) throws {
            key = try SigningKey.generate(algorithm)
            self.behaviour = behaviour
        }

        var algorithm: SignatureAlgorithm { key.algorithm }
        var publicKey: [UInt8] { key.publicKey }

        struct Refused: Error, CustomStringConvertible { var description: String { "user cancelled: secret-detail-42" } }

        func signature(for signingInput: [UInt8]) async throws -> [UInt8] {
            await Task.yield()
            inputs.withLock { $0.append(signingInput) }
            let signer = behaviour == .wrongKey ? try SigningKey.generate(key.algorithm) : key
            var signature = [UInt8](repeating: 0, count: 64)
            try signingInput.withUnsafeBytes { input in try signature.withUnsafeMutableBytes { try signer.sign(input, into: $0) } }
            switch behaviour {
            case .honest, .wrongKey: return signature
            case .fails: throw Refused()
            case .truncated: return Array(signature.dropLast())
            case .derEncoded: return [0x30, 0x44, 0x02, 0x20] + signature[..<32] + [0x02, 0x20] + signature[32...]
            }
        }
    }

    static let url = "https://api.example.com/v1/orders?id=42"

    func verifier(for key: SigningKey, clock: TestClock) throws -> Verifier {
        try Verifier(keys: KeySet([key.publicOnly()]), replayGuard: InMemoryReplayGuard(), clock: clock.function)
    }

    @Test(arguments: [SignatureAlgorithm.ed25519, .p256])
    func externalKeysSignRequestsThatVerify(_ algorithm: SignatureAlgorithm) async throws {
        let holder = try SoftwareHolder(algorithm)
        let key = try SigningKey.external(holder)
        #expect(key.id == holder.key.id)  // the same RFC 7638 thumbprint as the key it stands for
        #expect(key.canSign && key.publicKey == holder.publicKey)
        // Its JWK is the public key's, so a server registers it like any other.
        let jwk = try JWK.serialize(key, includePrivate: false)
        #expect(jwk == (try JWK.serialize(holder.key.publicOnly(), includePrivate: false)))
        #expect(try JWK.parseKey(jwk).id == key.id)
        let clock = TestClock(1_790_000_000)
        let signer = try Signer(key: key, account: "alice", coveredHeaders: ["content-type"], clock: clock.function)
        let verifier = try verifier(for: key, clock: clock)
        let body = Array(#"{"qty":1}"#.utf8), headers = [HeaderField("Content-Type", "application/json")]

        let post = try await signer.signAsync(method: .post, url: Self.url, body: body, headers: headers)
        let verified = try verifier.check(ReceivedRequest(method: "POST", url: Self.url, body: .bytes(body), headers: headers,
                                                          whash: post.whash, wtoken: post.wtoken))
        #expect(verified.keyID == key.id && verified.account == "alice" && verified.algorithm == algorithm)
        // The holder saw exactly one signing input, starting with the key's prefix (SPEC §4.2).
        let inputs = holder.inputs.withLock { $0 }
        #expect(inputs.count == 1 && inputs[0].starts(with: Array(key.signingInputPrefix)))

        let get = try await signer.signAsync(method: .get, url: Self.url, bodyWHash: WHash.ofEmptyBody)
        _ = try await verifier.verify(received("GET", Self.url, [], get))
        // Tampering and replay are refused as for any key.
        #expect(await errorCode { _ = try verifier.check(received("GET", Self.url + "3", [], get)) } == .whashMismatch)
        #expect(await errorCode { _ = try await verifier.verify(received("GET", Self.url, [], get)) } == .replayed)
        var tampered = body
        tampered[2] ^= 1
        #expect(await errorCode {
            _ = try verifier.check(ReceivedRequest(method: "POST", url: Self.url, body: .bytes(tampered), headers: headers, whash: post.whash, wtoken: post.wtoken))
        } == .whashMismatch)
    }

    /// A holder that answers after the token's lifetime (a prompt left open): `expired`, no token.
    @Test func aHolderSlowerThanTheLifetimeGivesNoToken() async throws {
        struct Slow: ExternalSigner {
            let holder: SoftwareHolder, clock: TestClock
            var algorithm: SignatureAlgorithm { holder.algorithm }
            var publicKey: [UInt8] { holder.publicKey }
            func signature(for signingInput: [UInt8]) async throws -> [UInt8] {
                clock.set(clock.now + 61)
                return try await holder.signature(for: signingInput)
            }
        }
        let clock = TestClock(1_790_000_000)
        let signer = try Signer(key: try SigningKey.external(Slow(holder: try SoftwareHolder(.ed25519), clock: clock)), lifetime: 60,
                                clock: clock.function)
        await #expect(throws: SignCoreError(.expired, "the external signer answered after the token's lifetime")) {
            _ = try await signer.signAsync(method: .get, url: Self.url)
        }
    }

    @Test func theSynchronousPathRefusesAnExternalKey() throws {
        let key = try SigningKey.external(try SoftwareHolder(.ed25519))
        let signer = try Signer(key: key)
        #expect(throws: SignCoreError(.invalidKey, "an external key signs asynchronously (Signer.signAsync)")) {
            _ = try signer.sign(method: .get, url: Self.url)
        }
    }

    @Test func signAsyncSignsInProcessKeysAsSignDoes() async throws {
        let pair = try Pair(.hmacSHA256)
        let headers = try await pair.signer.signAsync(method: .post, url: Self.url, body: [1, 2, 3])
        _ = try pair.verifier.check(received("POST", Self.url, [1, 2, 3], headers))
    }

    /// A holder that fails, answers for another key, truncates or DER-encodes: `cryptoFailure`,
    /// no token, and nothing of the holder's own error text in the message.
    @Test(arguments: [SoftwareHolder.Behaviour.fails, .wrongKey, .truncated, .derEncoded])
    func aMisbehavingHolderIsCaughtBeforeTheTokenLeaves(_ behaviour: SoftwareHolder.Behaviour) async throws {
        for algorithm in [SignatureAlgorithm.ed25519, .p256] {
            let signer = try Signer(key: try SigningKey.external(try SoftwareHolder(algorithm, behaviour)))
            do {
                _ = try await signer.signAsync(method: .get, url: Self.url)
                Issue.record("\(behaviour) \(algorithm) signed")
            } catch {
                #expect(error.code == .cryptoFailure)
                #expect(!error.detail.contains("secret-detail"))
            }
        }
    }

    @Test func externalKeysNeedAValidPublicKeyOfASignatureAlgorithm() throws {
        struct Fixed: ExternalSigner {
            let algorithm: SignatureAlgorithm
            let publicKey: [UInt8]
            func signature(for signingInput: [UInt8]) async throws -> [UInt8] { [] }
        }
        let identity = [1] + [UInt8](repeating: 0, count: 31)  // small order (SPEC §6.1)
        for holder in [Fixed(algorithm: .hmacSHA256, publicKey: []), Fixed(algorithm: .ed25519, publicKey: identity),
                       Fixed(algorithm: .ed25519, publicKey: [1, 2, 3]), Fixed(algorithm: .p256, publicKey: [4] + [UInt8](repeating: 7, count: 64))] {
            #expect(throws: SignCoreError.self) { try SigningKey.external(holder) }
        }
        let key = try SigningKey.external(try SoftwareHolder(.p256), id: "device-7")
        #expect(key.id == "device-7")
        #expect(key.exportSecret() == nil)
        #expect(throws: SignCoreError.self) { try SigningKey.external(try SoftwareHolder(.p256), id: "not a key id") }
    }

    @Test(arguments: [SignatureAlgorithm.ed25519, .p256]) func aHolderSignsMessages(_ algorithm: SignatureAlgorithm) async throws {
        let holder = try SoftwareHolder(algorithm)
        let key = try SigningKey.external(holder)
        let message = Array("register device 42".utf8)
        let signature = try await key.signMessageAsync(message, context: "signcore-device/1")
        try holder.key.publicOnly().verifyMessage(message, signature: signature, context: "signcore-device/1")
        #expect(holder.inputs.withLock { $0 } == [try key.messageSigningInput(message, context: "signcore-device/1")],
                "the holder is handed the SPEC §10.1 input, nothing else")
        #expect(throws: SignCoreError.self) { _ = try key.signMessage(message, context: "signcore-device/1") }
        for behaviour in [SoftwareHolder.Behaviour.fails, .wrongKey, .truncated, .derEncoded] {
            let bad = try SigningKey.external(SoftwareHolder(algorithm, behaviour))
            await #expect(throws: SignCoreError.self) { _ = try await bad.signMessageAsync(message, context: "signcore-device/1") }
        }
    }
}

#if SIGNCORE_SWIFT_CRYPTO
import Crypto

/// The README's Secure Enclave example as written, with swift-crypto's software P-256 key in place
/// of `SecureEnclave.P256.Signing.PrivateKey` (the same API: `publicKey.x963Representation`,
/// `signature(for:)` hashing with SHA-256, `rawRepresentation` as r || s). Runs with the
/// swift-crypto backend (CI: `--traits SwiftCryptoBackend`; always on Apple platforms).
@Suite struct CryptoKitShapedSignerTests {
    struct SoftwareEnclaveSigner: ExternalSigner {
        let key: P256.Signing.PrivateKey
        var algorithm: SignatureAlgorithm { .p256 }
        var publicKey: [UInt8] { Array(key.publicKey.x963Representation) }
        func signature(for signingInput: [UInt8]) async throws -> [UInt8] {
            Array(try key.signature(for: signingInput).rawRepresentation)
        }
    }

    @Test func theReadmeExampleSignsRequestsThatVerify() async throws {
        let deviceKey = try SigningKey.external(SoftwareEnclaveSigner(key: P256.Signing.PrivateKey()))
        let clock = TestClock(1_790_000_000)
        let signer = try Signer(key: deviceKey, account: "alice", clock: clock.function)
        let body = Array(#"{"item":"book"}"#.utf8)
        let headers = try await signer.signAsync(method: .post, url: "https://api.example.com/v1/orders", body: body)
        let registered = try JWK.parseKey(try JWK.serialize(deviceKey, includePrivate: false))
        let verifier = try Verifier(keys: KeySet([registered]), replayGuard: InMemoryReplayGuard(), clock: clock.function)
        let verified = try await verifier.verify(received("POST", "https://api.example.com/v1/orders", body, headers))
        #expect(verified.keyID == deviceKey.id && verified.account == "alice" && verified.algorithm == .p256)
    }
}
#endif
