#if SIGNCORE_SWIFT_CRYPTO
import Crypto
internal import CSignBytes
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The backend on apple/swift-crypto: CryptoKit on Apple platforms (the one used there), BoringSSL
/// on Linux with the `SwiftCryptoBackend` trait. Its key objects wipe themselves when released
/// (swift-crypto's SecureBytes and digest contexts); the copies this file makes of secret bytes
/// are wiped here.
enum SwiftCrypto: CryptoBackendProtocol {
    static var name: String {
        #if canImport(CryptoKit)
        "swift-crypto (CryptoKit)"
        #else
        "swift-crypto (BoringSSL)"
        #endif
    }

    #if canImport(CryptoKit)
    static var ed25519IsDeterministic: Bool { false }
    #else
    static var ed25519IsDeterministic: Bool { true }
    #endif

    static func start() -> Bool { true }

    /// The operating system's CSPRNG, one call per nonce (getrandom on Linux, arc4random_buf on
    /// Apple platforms): swift-crypto offers random bytes only as a SymmetricKey, 870 ns per
    /// 16 bytes on Linux (AMD EPYC Zen 5). Like libsodium, it stops the process when the kernel
    /// refuses.
    static func randomBytes(into buffer: UnsafeMutableRawBufferPointer) {
        guard sc_os_random(buffer.baseAddress, buffer.count) == 0 else { preconditionFailure("the operating system's CSPRNG failed") }
    }

    static func nonceBytes(into buffer: UnsafeMutableRawBufferPointer) { randomBytes(into: buffer) }

    static func ed25519Verify(publicKey: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer,
                              signature: UnsafeRawBufferPointer) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    /// swift-crypto decodes a point only when it verifies, and checks neither its subgroup nor a
    /// small order: SignCore's own check (Ed25519PointCheck.swift) does what libsodium does.
    static func isValidEd25519PublicKey(_ publicKey: UnsafeRawBufferPointer) -> Bool { Ed25519PointCheck.isValid(publicKey) }

    struct SHA512: SHA512Backend {
        private var hasher = Crypto.SHA512()

        init() {}

        mutating func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }

        mutating func finalize(into digest: UnsafeMutableRawBufferPointer) {
            hasher.finalize().withUnsafeBytes { digest.copyMemory(from: $0) }
        }
    }

    static func hmacSHA256(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
        Crypto.HMAC<Crypto.SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)).withUnsafeBytes { tag.copyMemory(from: $0) }
    }

    static func hmacSHA512(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
        Crypto.HMAC<Crypto.SHA512>.authenticationCode(for: message, using: SymmetricKey(data: key)).withUnsafeBytes { tag.copyMemory(from: $0) }
    }

    static func firstCounter(head: UnsafeRawBufferPointer, in counters: Range<UInt64>, leadingZeroBits: Int) -> UInt64? {
        guard head.count <= 47, (1...32).contains(leadingZeroBits) else { return nil }
        var input = [UInt8](head) + [UInt8](repeating: 0, count: 8)
        let limit = UInt32.max >> leadingZeroBits  // the digest's first word must be at most this
        for counter in counters {
            for byte in 0..<8 { input[head.count + byte] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * byte)) }
            let first = Crypto.SHA256.hash(data: input).withUnsafeBytes { digest in
                UInt32(digest[0]) << 24 | UInt32(digest[1]) << 16 | UInt32(digest[2]) << 8 | UInt32(digest[3])
            }
            if first <= limit { return counter }
        }
        return nil
    }

    struct SHA256: SHA256Backend {
        private var hasher = Crypto.SHA256()

        init() {}

        mutating func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }

        mutating func finalize(into digest: UnsafeMutableRawBufferPointer) {
            hasher.finalize().withUnsafeBytes { digest.copyMemory(from: $0) }
        }

        static func hash(prefix: UnsafeRawBufferPointer, _ data: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer) {
            var hasher = Self()
            hasher.update(prefix)
            hasher.update(data)
            hasher.finalize(into: digest)
        }
    }

    /// HMAC (RFC 2104) from SHA-256 states prepared once: after the key XOR ipad block, after that
    /// and the signing-input prefix, and after the key XOR opad block. (swift-crypto's own
    /// HMAC hashes the outer key block again for every message.)
    struct HMACKey: HMACKeyBackend {
        private let inner: Crypto.SHA256
        private let prefixedInner: Crypto.SHA256
        private let outer: Crypto.SHA256
        /// The secret, for export; SymmetricKey wipes its bytes when released.
        private let key: SymmetricKey

        init(secret: UnsafeRawBufferPointer, signingInputPrefix prefix: UnsafeRawBufferPointer) {
            key = SymmetricKey(data: secret)
            var inner = Crypto.SHA256(), outer = Crypto.SHA256()
            withUnsafeTemporaryAllocation(byteCount: 64, alignment: 16) { block in
                block.initializeMemory(as: UInt8.self, repeating: 0)
                if secret.count > 64 {  // RFC 2104: a long key is hashed first; that hash is as secret
                    var digest = Crypto.SHA256.hash(data: secret)
                    digest.withUnsafeBytes { block.copyMemory(from: $0) }
                    withUnsafeMutableBytes(of: &digest) { sc_memzero($0.baseAddress, $0.count) }
                } else {
                    block.copyMemory(from: secret)
                }
                for i in 0..<64 { block[i] ^= 0x36 }
                inner.update(bufferPointer: UnsafeRawBufferPointer(block))
                for i in 0..<64 { block[i] ^= 0x36 ^ 0x5C }
                outer.update(bufferPointer: UnsafeRawBufferPointer(block))
                sc_memzero(block.baseAddress, block.count)
            }
            self.inner = inner
            self.outer = outer
            var prefixed = inner
            prefixed.update(bufferPointer: prefix)
            prefixedInner = prefixed
        }

        private func finish(_ inner: consuming Crypto.SHA256, into tag: UnsafeMutableRawBufferPointer) {
            var outer = self.outer
            inner.finalize().withUnsafeBytes { outer.update(bufferPointer: $0) }
            outer.finalize().withUnsafeBytes { tag.copyMemory(from: $0) }
        }

        func authenticate(_ message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
            var hasher = inner
            hasher.update(bufferPointer: message)
            finish(hasher, into: tag)
        }

        func authenticate(afterPrefix rest: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
            var hasher = prefixedInner
            hasher.update(bufferPointer: rest)
            finish(hasher, into: tag)
        }

        func authenticate(signingInputRest rest: UnsafePointer<sc_signing_input_rest>, into tag: UnsafeMutableRawBufferPointer) {
            withUnsafeTemporaryAllocation(byteCount: Int(SC_SIGNING_INPUT_REST_MAX), alignment: 16) { scratch in
                let count = sc_signing_input_rest_write(rest, scratch.baseAddress)
                authenticate(afterPrefix: UnsafeRawBufferPointer(rebasing: scratch[..<count]), into: tag)
            }
        }

        var secret: [UInt8] { key.withUnsafeBytes { Array($0) } }

        var preparedStates: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }
        func destroy() {}
    }

    struct Ed25519PrivateKey: Ed25519PrivateKeyBackend {
        private let key: Curve25519.Signing.PrivateKey
        let publicKey: [UInt8]

        init(seed: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard seed.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: seed) else {
                throw SignCoreError(.invalidKey, "an Ed25519 seed must be 32 bytes")
            }
            self.key = key
            publicKey = Array(key.publicKey.rawRepresentation)
        }

        /// (swift-crypto hands the seed out as a Data of its own, released unwiped: only JWK
        /// export asks for it.)
        var seed: [UInt8] { Array(key.rawRepresentation) }

        func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer) -> Bool {
            guard let signed = try? key.signature(for: message), signed.count == 64 else { return false }
            signed.withUnsafeBytes { signature.copyMemory(from: $0) }
            return true
        }

        func destroy() {}
    }

    struct P256Key: P256KeyBackend {
        private let privateKeyObject: P256.Signing.PrivateKey?
        private let publicKeyObject: P256.Signing.PublicKey
        let publicKey: [UInt8]

        init(privateKey scalar: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard scalar.count == 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: scalar) else {
                throw SignCoreError(.invalidKey, "the P-256 private key is not in [1, n-1]")
            }
            privateKeyObject = key
            publicKeyObject = key.publicKey
            publicKey = Array(key.publicKey.x963Representation)
        }

        init(publicKey point: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard point.count == 65, point.first == 0x04, let key = try? P256.Signing.PublicKey(x963Representation: point) else {
                throw SignCoreError(.invalidKey, "the P-256 public key is not a point on the curve")
            }
            privateKeyObject = nil
            publicKeyObject = key
            publicKey = Array(point)
        }

        /// 32 random bytes until they are a scalar in [1, n-1] (a retry has odds below 2⁻³²):
        /// uniform, and drawn straight into `scalar` (the key object made to check it wipes its
        /// own copy when released).
        static func generatePrivateKey(into scalar: UnsafeMutableRawBufferPointer) -> Bool {
            guard scalar.count == 32 else { return false }
            for _ in 0..<8 {
                randomBytes(into: scalar)
                if (try? P256.Signing.PrivateKey(rawRepresentation: UnsafeRawBufferPointer(scalar))) != nil { return true }
            }
            return false
        }

        var isPrivate: Bool { privateKeyObject != nil }
        /// (As the Ed25519 seed: a Data of swift-crypto's own, only for JWK export.)
        var privateKey: [UInt8]? { privateKeyObject.map { Array($0.rawRepresentation) } }

        func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer) -> Bool {
            guard let signed = try? privateKeyObject?.signature(for: message) else { return false }
            signed.rawRepresentation.withUnsafeBytes { signature.copyMemory(from: $0) }
            return true
        }

        func verify(_ signature: UnsafeRawBufferPointer, for message: UnsafeRawBufferPointer) -> Bool {
            guard let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return publicKeyObject.isValidSignature(parsed, for: message)
        }

        func destroy() {}
    }
}

#endif
