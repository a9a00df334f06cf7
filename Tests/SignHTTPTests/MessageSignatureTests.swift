import SignCore
import Testing

/// SPEC §10 through SignCore's public API only, from a module outside it, as the challenge,
/// device and RFC 9421 modules will use it.
@Suite struct MessageSignatureTests {
    static let challenge = "signcore-challenge/1"

    @Test(arguments: SignatureAlgorithm.allCases) func eachKeyKindSignsAndVerifiesAMessage(_ algorithm: SignatureAlgorithm) async throws {
        let key = try SigningKey.generate(algorithm)
        let verifying = try key.publicOnly()
        let message = Array("nonce=7f3a;difficulty=18".utf8)
        let signature = try key.signMessage(message, context: Self.challenge)
        #expect(signature.count == algorithm.signatureByteCount)
        try verifying.verifyMessage(message, signature: signature, context: Self.challenge)
        let async = try await key.signMessageAsync(message, context: Self.challenge)
        try verifying.verifyMessage(message, signature: async, context: Self.challenge)

        // Another context, another message, another key: each is a bad signature.
        #expect(throws: SignCoreError(.badSignature, "the message signature does not verify under the key and context")) {
            try verifying.verifyMessage(message, signature: signature, context: "signcore-device/1")
        }
        #expect(throws: SignCoreError.self) { try verifying.verifyMessage(message + [0], signature: signature, context: Self.challenge) }
        #expect(throws: SignCoreError.self) {
            try SigningKey.generate(algorithm).verifyMessage(message, signature: signature, context: Self.challenge)
        }
        // A public key signs nothing; a context outside the set is refused before anything is signed.
        if algorithm != .hmacSHA256 {
            #expect(throws: SignCoreError.self) { try verifying.signMessage(message, context: Self.challenge) }
        }
        for context in ["", "Upper", "with space", String(repeating: "c", count: 65)] {
            #expect((try? key.signMessage(message, context: context)) == nil, "\(context)")
        }
        #expect((try? key.signMessage([UInt8](repeating: 1, count: SigningKey.maxMessageBytes + 1), context: Self.challenge)) == nil)
    }

    /// A holder of an external key that answers with a signature of other bytes: the signature is
    /// checked under the public key before it is returned.
    struct WrongHolder: ExternalSigner {
        let inner: SigningKey
        var algorithm: SignatureAlgorithm { inner.algorithm }
        var publicKey: [UInt8] { inner.publicKey }
        func signature(for signingInput: [UInt8]) async throws -> [UInt8] {
            try inner.signMessage(signingInput, context: "not-the-input")
        }
    }

    @Test func anExternalKeysAnswerIsCheckedBeforeUse() async throws {
        let external = try SigningKey.external(WrongHolder(inner: try SigningKey.generate(.ed25519)))
        await #expect(throws: SignCoreError.self) { _ = try await external.signMessageAsync([1, 2, 3], context: Self.challenge) }
        #expect(throws: SignCoreError.self) { _ = try external.signMessage([1, 2, 3], context: Self.challenge) }
    }
}
