/// Signatures over messages that are not requests (SPEC §10): a challenge's answer, a device's
/// registration, an attestation's binding. The same keys and algorithms as wtokens, over an input
/// of their own (`"SignCore/3 message\n"`, the key's algorithm and id, a context, the message)
/// that no wtoken signing input can equal; the context names the use, so a signature made for
/// one use never verifies for another.
extension SigningKey {
    /// The longest message signed (SPEC §10.1).
    public static let maxMessageBytes = 1 << 20
    /// The longest context (SPEC §10.1).
    public static let maxMessageContextBytes = 64

    /// The message signing input of `message` under `context` (SPEC §10.1), as a key held
    /// elsewhere signs it. Refuses a context that is not 1–64 bytes of `a-z 0-9 - _ . /`, and a
    /// message over 1 MiB (`invalidInput`).
    public func messageSigningInput(_ message: [UInt8], context: String) throws(SignCoreError) -> [UInt8] {
        let contextBytes = Array(context.utf8)
        guard (1...Self.maxMessageContextBytes).contains(contextBytes.count), contextBytes.allSatisfy(Self.isContextByte) else {
            throw SignCoreError(.invalidInput, "a message context is 1 to 64 bytes of a-z 0-9 - _ . /")
        }
        guard message.count <= Self.maxMessageBytes else {
            throw SignCoreError(.invalidInput, "a signed message is at most 1048576 bytes")
        }
        let algorithm = Array(algorithm.rawValue.utf8), keyID = Array(id.utf8)
        var input = Array("SignCore/3 message\n".utf8)
        input.reserveCapacity(input.count + 4 + algorithm.count + keyID.count + contextBytes.count + 4 + message.count)
        input.append(UInt8(algorithm.count))
        input += algorithm
        input.append(UInt8(keyID.count))
        input += keyID
        input.append(UInt8(contextBytes.count))
        input += contextBytes
        let length = UInt32(message.count)
        input += [UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
                  UInt8(truncatingIfNeeded: length)]
        input += message
        return input
    }

    /// Signs `message` under `context` (SPEC §10.2). Refuses, in this order: a key that cannot
    /// sign here, a public or an external key (`invalidKey`; an external key signs with
    /// `signMessageAsync`); then the context and the message as `messageSigningInput` does.
    public func signMessage(_ message: [UInt8], context: String) throws(SignCoreError) -> [UInt8] {
        guard canSign else { throw SignCoreError(.invalidKey, "a public key cannot sign") }
        guard externalSigner == nil else {
            throw SignCoreError(.invalidKey, "an external key signs asynchronously (signMessageAsync)")
        }
        let input = try messageSigningInput(message, context: context)
        var signature = [UInt8](repeating: 0, count: algorithm.signatureByteCount)
        var failure: SignCoreError?
        input.withUnsafeBytes { input in
            signature.withUnsafeMutableBytes { out in
                do throws(SignCoreError) { try sign(input, into: out) } catch { failure = error }
            }
        }
        if let failure { throw failure }
        return signature
    }

    /// `signMessage` with any key, external ones included: the holder is given the message
    /// signing input, and its signature is verified under the public key before it is returned
    /// (a holder that fails, is cancelled or answers with a signature that does not verify is
    /// `cryptoFailure`).
    public func signMessageAsync(_ message: [UInt8], context: String) async throws(SignCoreError) -> [UInt8] {
        guard let externalSigner else { return try signMessage(message, context: context) }
        let input = try messageSigningInput(message, context: context)
        let signature: [UInt8]
        do {
            signature = try await externalSigner.signature(for: input)
        } catch {
            throw SignCoreError(.cryptoFailure, "the external signer failed (\(type(of: error)))")
        }
        guard isValid(signature, for: input) else {
            throw SignCoreError(.cryptoFailure, "the external signer's signature does not verify under its public key")
        }
        return signature
    }

    /// Checks that `signature` is this key's signature of `message` under `context` (SPEC §10.3):
    /// the context and message as `messageSigningInput` checks them (`invalidInput`), then
    /// `badSignature` for any signature, of any length, that does not verify. HMAC tags are
    /// compared in constant time.
    public func verifyMessage(_ message: [UInt8], signature: [UInt8], context: String) throws(SignCoreError) {
        let input = try messageSigningInput(message, context: context)
        guard isValid(signature, for: input) else {
            throw SignCoreError(.badSignature, "the message signature does not verify under the key and context")
        }
    }

    private func isValid(_ signature: [UInt8], for input: [UInt8]) -> Bool {
        signature.withUnsafeBytes { signature in input.withUnsafeBytes { isValidSignature(signature, for: $0) } }
    }

    private static func isContextByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "/"): true
        default: false
        }
    }
}
