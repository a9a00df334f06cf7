/// Incremental SHA-256 in constant memory, on the build's crypto backend (CryptoBackend.swift);
/// a value type, so a copy forks the computation.
public struct SHA256Hasher: Sendable {
    private var state = CryptoBackend.SHA256()

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        state.update(bytes)
    }

    mutating func update(_ text: StaticString) { update(text.bytes) }

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil {
            let copy = Array(bytes)
            copy.withUnsafeBytes { update($0) }
        }
    }

    public consuming func finalize() -> SHA256Digest {
        var digest = SHA256Digest()
        digest.withUnsafeMutableBytes { state.finalize(into: $0) }
        return digest
    }

    /// SHA-256(prefix || data) in one library call (no hasher state on this side).
    static func hash(prefix: UnsafeRawBufferPointer, _ data: UnsafeRawBufferPointer) -> SHA256Digest {
        var digest = SHA256Digest()
        digest.withUnsafeMutableBytes { CryptoBackend.SHA256.hash(prefix: prefix, data, into: $0) }
        return digest
    }

    /// One-shot SHA-256.
    public static func hash(_ bytes: some Sequence<UInt8>) -> SHA256Digest {
        var hasher = SHA256Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }
}
