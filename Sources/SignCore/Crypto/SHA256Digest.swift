/// A SHA-256 output as a fixed-size value: no heap, constant-time `==`.
public struct SHA256Digest: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    init() {}

    /// Exactly 32 bytes, or nil.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        withUnsafeMutableBytes { out in
            for (i, byte) in bytes.enumerated() { out[i] = byte }
        }
    }

    /// Exactly 43 characters of canonical base64url (a `whash` header), or nil.
    public init?(base64url text: borrowing String) {  // borrowed: no reference count taken
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let valid = try? withUTF8(of: text) { utf8 in
            Swift.withUnsafeMutableBytes(of: &words) { Base64URL.decodeDigest(utf8, into: $0) }
        }
        guard valid == true else { return nil }
        self.words = words
    }

    /// Whether `text` is this digest's base64url (43 characters, the canonical spelling),
    /// compared in constant time (`Base64URL.isEncoding`): the verifier's whash check.
    /// (Inlined: a call would cost a frame of its own per verify.)
    @inline(__always)
    func isEncoded(as text: borrowing String) -> Bool {
        var digest = self
        let matches = text.utf8.withContiguousStorageIfAvailable { sent in
            Swift.withUnsafeBytes(of: &digest.words) { Base64URL.isEncoding(sent, ofDigest: $0) }
        }
        return matches ?? (SHA256Digest(base64url: text) == self)  // a bridged, non-contiguous string
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: words, body)
    }

    mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeMutableBytes(of: &words, body)
    }

    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Constant-time: the time taken does not depend on where the digests differ.
    public static func == (lhs: SHA256Digest, rhs: SHA256Digest) -> Bool {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in constantTimePrefixEqual(a, b, 32) } }
    }

    public func hash(into hasher: inout Hasher) { withUnsafeBytes { hasher.combine(bytes: $0) } }

    /// Base64url without padding (43 characters), the form used in headers.
    public var description: String { withUnsafeBytes { Base64URL.encode($0) } }
}
