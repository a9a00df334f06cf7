#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension KeySet {
    /// A key document is small: a file larger than this is not one.
    public static let maxFileSize = 1 << 20

    /// Reads a JWK Set (or a single JWK) from a file for a verifier, as `init(jwksBytes:)`.
    /// The file's bytes go into one buffer that is wiped before it is freed: secret members
    /// never become Strings and leave no copies behind. Refuses (`invalidConfiguration`) a file
    /// that cannot be read or is larger than `maxFileSize`; the message names the path, never
    /// the content.
    public init(jwksFile path: String, allowPrivateKeys: Bool = false) throws(SignCoreError) {
        self = try JWK.withFile(path) { (bytes) throws(SignCoreError) in try KeySet(jwksBytes: bytes, allowPrivateKeys: allowPrivateKeys) }
    }
}

extension JWK {
    /// The keys of a JWK Set (or a single JWK) in a file, in the order of its array, private
    /// members kept (a server's own keys: ATTEST.md §1). Read as `KeySet(jwksFile:)` reads it.
    public static func parseKeys(file path: String) throws(SignCoreError) -> [SigningKey] {
        try withFile(path) { (bytes) throws(SignCoreError) in try parseKeys(bytes: bytes) }
    }

    /// Calls `body` with the bytes of the file at `path`, read into one buffer that is wiped
    /// before it is freed: secret members never become Strings and leave no copies behind.
    /// Refuses (`invalidConfiguration`) a file that cannot be read or is larger than
    /// `KeySet.maxFileSize`; the message names the path, never the content.
    static func withFile<R>(_ path: String, _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SignCoreError(.invalidConfiguration, "cannot open the key file \(path)") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, Int(status.st_size) <= KeySet.maxFileSize else {
            throw SignCoreError(.invalidConfiguration, "the key file \(path) is not a readable file of at most \(KeySet.maxFileSize) bytes")
        }
        // One byte more than the size, to notice a file that grew while it was read.
        return try withHeapBuffer(byteCount: Int(status.st_size) + 1, wiped: true) { (buffer) throws(SignCoreError) -> R in
            var count = 0
            while count < buffer.count, let base = buffer.baseAddress {
                let n = read(fd, base + count, buffer.count - count)
                if n == 0 { break }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SignCoreError(.invalidConfiguration, "cannot read the key file \(path)")
                }
                count += n
            }
            guard count < buffer.count else { throw SignCoreError(.invalidConfiguration, "the key file \(path) changed while it was read") }
            return try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }
}
