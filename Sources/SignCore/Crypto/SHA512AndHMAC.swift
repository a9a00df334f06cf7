/// Incremental SHA-512 (FIPS 180-4) on the build's crypto backend, for modules built on SignCore
/// (an attestation's certificate chain, an RFC 9421 digest); a value type, so a copy forks the
/// computation.
public struct SHA512Hasher: Sendable {
    public static let byteCount = 64
    private var state = CryptoBackend.SHA512()

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) { state.update(bytes) }

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// The 64-byte digest.
    public consuming func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.byteCount)
        digest.withUnsafeMutableBytes { state.finalize(into: $0) }
        return digest
    }

    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA512Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }
}

/// HMAC-SHA256 (RFC 2104, RFC 4231) under a key of any length, for modules built on SignCore; a
/// request signing key is a `SigningKey`, not this.
public enum HMACSHA256 {
    public static let byteCount = 32

    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        authenticate(message, key: key, count: byteCount, CryptoBackend.hmacSHA256)
    }

    /// Whether `code` is the authentication code of `message`, compared in constant time.
    public static func isValidAuthenticationCode(_ code: [UInt8], for message: [UInt8], key: [UInt8]) -> Bool {
        codesMatch(code, authenticationCode(for: message, key: key))
    }
}

/// HMAC-SHA512 (RFC 2104, RFC 4231) under a key of any length, for modules built on SignCore.
public enum HMACSHA512 {
    public static let byteCount = 64

    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        authenticate(message, key: key, count: byteCount, CryptoBackend.hmacSHA512)
    }

    /// Whether `code` is the authentication code of `message`, compared in constant time.
    public static func isValidAuthenticationCode(_ code: [UInt8], for message: [UInt8], key: [UInt8]) -> Bool {
        codesMatch(code, authenticationCode(for: message, key: key))
    }
}

private func authenticate(_ message: [UInt8], key: [UInt8], count: Int,
                          _ function: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) -> Void) -> [UInt8] {
    var code = [UInt8](repeating: 0, count: count)
    key.withUnsafeBytes { key in message.withUnsafeBytes { message in code.withUnsafeMutableBytes { function(key, message, $0) } } }
    return code
}

/// Compared in constant time in the codes' bytes (their lengths are public); the expected code,
/// which would forge this message, is wiped.
private func codesMatch(_ given: [UInt8], _ expected: [UInt8]) -> Bool {
    var expected = expected
    defer { wipe(&expected) }
    return given.count == expected.count
        && given.withUnsafeBytes { given in expected.withUnsafeBytes { constantTimePrefixEqual(given, $0, $0.count) } }
}
