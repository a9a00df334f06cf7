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

extension SigningKey {
    /// An install's own key (a device key, docs/ATTEST.md §9): the private JWK in the file at
    /// `path`, or, when there is none, a new `algorithm` key (Ed25519 or P-256) written there
    /// first: created exclusively with mode 0600, the secret assembled and written from memory
    /// that is wiped, never a String. Refuses (`invalidConfiguration`) a file that is readable
    /// or writable by others than its owner, one that does not hold one private Ed25519 or P-256
    /// key, and a file that cannot be created.
    public static func loadOrCreate(file path: String, algorithm: SignatureAlgorithm = .ed25519) throws(SignCoreError) -> SigningKey {
        guard algorithm != .hmacSHA256 else { throw SignCoreError(.invalidConfiguration, "an install's key is Ed25519 or P-256") }
        var status = stat()
        if stat(path, &status) == 0 {
            guard status.st_mode & 0o077 == 0 else {
                throw SignCoreError(.invalidConfiguration, "the key file \(path) is open to others than its owner (make it 0600)")
            }
            let keys = try JWK.parseKeys(file: path)
            guard keys.count == 1, let key = keys.first, key.algorithm != .hmacSHA256, key.canSign else {
                throw SignCoreError(.invalidConfiguration, "the key file \(path) does not hold one private Ed25519 or P-256 key")
            }
            return key
        }
        let key = try generate(algorithm)
        try writeNew(key, to: path)
        return key
    }

    /// The private JWK of `key` in a new file (O_EXCL, 0600), synced.
    private static func writeNew(_ key: SigningKey, to path: String) throws(SignCoreError) {
        guard var secret = key.exportSecret() else { throw SignCoreError(.invalidKey, "the key has no private part to write") }
        defer { wipe(&secret) }
        let publicJWK = try JWK.serialize(key, includePrivate: false)  // public text, ends with "}"
        let head = Array(publicJWK.utf8.dropLast()) + Array(#","d":""#.utf8)
        let tail = Array("\"}\n".utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SignCoreError(.invalidConfiguration, "cannot create the key file \(path)") }
        let length = head.count + Base64URL.encodedLength(secret.count) + tail.count
        let written = withHeapBuffer(byteCount: length, wiped: true) { (buffer) -> Bool in
            var writer = ByteWriter(buffer)
            head.withUnsafeBytes { writer.append($0) }
            secret.withUnsafeBytes { Base64URL.appendSecret($0, to: &writer) }
            tail.withUnsafeBytes { writer.append($0) }
            return write(fd, buffer.baseAddress, writer.count) == writer.count && fsync(fd) == 0
        }
        close(fd)
        guard written else {
            unlink(path)
            throw SignCoreError(.invalidConfiguration, "cannot write the key file \(path)")
        }
    }
}
