/// Signatures over RFC 9421 signature bases (docs/HTTPSIG.md §3), with the same keys as wtokens.
///
/// Domain separation (docs/HTTPSIG.md §3.3): a key signs only two kinds of input here, SignCore's
/// own (a wtoken's signing input and a message signing input, SPEC §4.2 and §10.1, both starting
/// with `SignCore/3 `) and an RFC 9421 signature base, which these functions accept only when its
/// first byte is `"` (every line of a base starts with a quoted component identifier) and its last
/// line is the `"@signature-params": ` line. No input is both, so a signature made for one format
/// never verifies as the other under the same key.
extension SigningKey {
    /// The longest signature base signed or verified (docs/HTTPSIG.md §2.6).
    public static let maxSignatureBaseBytes = 64 << 10

    /// Refuses (`invalidInput`) an input that is not shaped as an RFC 9421 signature base.
    public static func checkSignatureBase(_ base: [UInt8]) throws(SignCoreError) {
        guard base.count <= maxSignatureBaseBytes else {
            throw SignCoreError(.invalidInput, "a signature base is at most \(maxSignatureBaseBytes) bytes")
        }
        let last = base.lastIndex(of: 0x0A).map { base.index(after: $0) } ?? base.startIndex
        guard base.first == UInt8(ascii: "\""), base[last...].starts(with: signatureParamsLine) else {
            throw SignCoreError(.invalidInput, "the input is not an RFC 9421 signature base")
        }
    }

    private static let signatureParamsLine = Array("\"@signature-params\": ".utf8)

    /// Signs an RFC 9421 signature base (RFC 9421 §3.1 step 6) with this key's algorithm:
    /// HMAC-SHA256, Ed25519 or ECDSA P-256 with SHA-256 (r ‖ s). Refuses a key that cannot sign
    /// here (`invalidKey`; an external key signs with `signSignatureBaseAsync`) and an input that is
    /// not a base (`invalidInput`).
    public func signSignatureBase(_ base: [UInt8]) throws(SignCoreError) -> [UInt8] {
        guard canSign else { throw SignCoreError(.invalidKey, "a public key cannot sign") }
        guard externalSigner == nil else { throw SignCoreError(.invalidKey, "an external key signs asynchronously (signSignatureBaseAsync)") }
        try Self.checkSignatureBase(base)
        var signature = [UInt8](repeating: 0, count: algorithm.signatureByteCount)
        var failure: SignCoreError?
        base.withUnsafeBytes { input in
            signature.withUnsafeMutableBytes { out in
                do throws(SignCoreError) { try sign(input, into: out) } catch { failure = error }
            }
        }
        if let failure { throw failure }
        return signature
    }

    /// `signSignatureBase` with any key, external ones included: the holder signs the base, and
    /// its signature is verified under the public key before it is returned (`cryptoFailure`).
    public func signSignatureBaseAsync(_ base: [UInt8]) async throws(SignCoreError) -> [UInt8] {
        guard let externalSigner else { return try signSignatureBase(base) }
        try Self.checkSignatureBase(base)
        let signature: [UInt8]
        do {
            signature = try await externalSigner.signature(for: base)
        } catch {
            throw SignCoreError(.cryptoFailure, "the external signer failed (\(type(of: error)))")
        }
        guard isValidSignature(signature, forBase: base) else {
            throw SignCoreError(.cryptoFailure, "the external signer's signature does not verify under its public key")
        }
        return signature
    }

    /// Whether `signature` is this key's signature of the signature base `base` (RFC 9421 §3.2
    /// step 8): false for an input that is not a base and for any signature, of any length, that
    /// does not verify. HMAC tags are compared in constant time.
    public func isValidSignature(_ signature: [UInt8], forBase base: [UInt8]) -> Bool {
        do throws(SignCoreError) { try Self.checkSignatureBase(base) } catch { return false }
        return signature.withUnsafeBytes { signature in base.withUnsafeBytes { isValidSignature(signature, for: $0) } }
    }
}
