#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSignBytes

extension KeySet {
    /// A key document is small: a file larger than this is not one.
    public static let maxFileSize = 1 << 20

    /// Reads a JWK Set (or a single JWK) from a file for a verifier, as `init(jwksBytes:)`.
    /// The file's bytes go into one buffer that is wiped before it is freed: secret members
    /// never become Strings and leave no copies behind. Refuses (`invalidConfiguration`) a file
    /// that cannot be read or is larger than `maxFileSize`; the message names the path, never
    /// the content.
    public init(jwksFile path: String, allowPrivateKeys: Bool = false) throws(SignCoreError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SignCoreError(.invalidConfiguration, "cannot open the key file \(path)") }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, Int(status.st_size) <= Self.maxFileSize else {
            throw SignCoreError(.invalidConfiguration, "the key file \(path) is not a readable file of at most \(Self.maxFileSize) bytes")
        }
        // One byte more than the size, to notice a file that grew while it was read.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(status.st_size) + 1, alignment: 1)
        defer {
            sc_memzero(buffer.baseAddress, buffer.count)
            buffer.deallocate()
        }
        var count = 0
        while count < buffer.count {
            let n = read(fd, buffer.baseAddress! + count, buffer.count - count)
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw SignCoreError(.invalidConfiguration, "cannot read the key file \(path)")
            }
            count += n
        }
        guard count < buffer.count else { throw SignCoreError(.invalidConfiguration, "the key file \(path) changed while it was read") }
        try self.init(jwksBytes: UnsafeRawBufferPointer(rebasing: buffer[..<count]), allowPrivateKeys: allowPrivateKeys)
    }
}
