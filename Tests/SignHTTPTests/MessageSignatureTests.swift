import Foundation
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

    /// A key whose private half the `openssl` command holds (an independent implementation, as a
    /// KMS or a Secure Enclave would be): it is handed the SPEC §10.1 input and signs it.
    struct OpenSSLHolder: ExternalSigner {
        let algorithm: SignatureAlgorithm
        let keyFile: URL
        let publicKey: [UInt8]

        init(_ algorithm: SignatureAlgorithm, in folder: URL) throws {
            self.algorithm = algorithm
            keyFile = folder.appendingPathComponent(algorithm == .ed25519 ? "ed25519.pem" : "p256.pem")
            let generate = algorithm == .ed25519 ? ["genpkey", "-algorithm", "ed25519", "-out", keyFile.path]
                : ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", keyFile.path]
            _ = try Self.openssl(generate)
            // The public key's DER ends with the raw key: 32 bytes (Ed25519) or the 65-byte point.
            let der = try Self.openssl(["pkey", "-in", keyFile.path, "-pubout", "-outform", "DER"])
            publicKey = Array(der.suffix(algorithm == .ed25519 ? 32 : 65))
        }

        func signature(for signingInput: [UInt8]) async throws -> [UInt8] {
            let input = keyFile.deletingLastPathComponent().appendingPathComponent(UUID().uuidString)
            try Data(signingInput).write(to: input)
            defer { try? FileManager.default.removeItem(at: input) }
            if algorithm == .ed25519 {
                return Array(try Self.openssl(["pkeyutl", "-sign", "-rawin", "-inkey", keyFile.path, "-in", input.path]))
            }
            return try Self.rawSignature(fromDER: Array(try Self.openssl(["dgst", "-sha256", "-sign", keyFile.path, input.path])))
        }

        static func openssl(_ arguments: [String]) throws -> Data {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw CocoaError(.executableLoad) }
            return data
        }

        /// ECDSA-Sig-Value (SEQUENCE of two INTEGERs, short lengths) as r || s, 32 bytes each.
        static func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
            var index = 2
            var parts: [[UInt8]] = []
            for _ in 0..<2 {
                guard der.count > index + 1, der[index] == 0x02 else { throw CocoaError(.coderInvalidValue) }
                let length = Int(der[index + 1])
                guard der.count >= index + 2 + length else { throw CocoaError(.coderInvalidValue) }
                let integer = Array(der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 })
                guard integer.count <= 32 else { throw CocoaError(.coderInvalidValue) }
                parts.append([UInt8](repeating: 0, count: 32 - integer.count) + integer)
                index += 2 + length
            }
            return parts[0] + parts[1]
        }
    }

    @Test(arguments: [SignatureAlgorithm.ed25519, .p256]) func anExternalKeySignsMessagesThroughItsHolder(_ algorithm: SignatureAlgorithm) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("signcore-holder-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let holder = try OpenSSLHolder(algorithm, in: folder)
        let key = try SigningKey.external(holder)
        let message = Array("register device 42".utf8)
        let signature = try await key.signMessageAsync(message, context: "signcore-device/1")
        let verifying = algorithm == .ed25519 ? try SigningKey.ed25519(publicKey: holder.publicKey)
            : try SigningKey.p256(publicKey: holder.publicKey)
        try verifying.verifyMessage(message, signature: signature, context: "signcore-device/1")
        #expect(throws: SignCoreError.self) { try verifying.verifyMessage(message, signature: signature, context: "signcore-device/2") }
    }
}

