/// whash: the digest that binds a request's content (SPEC §3).
///
/// GET, HEAD, OPTIONS and DELETE hash the method and the canonical URL; POST, PUT and PATCH
/// hash the body bytes exactly as sent (an empty body is allowed). A fixed prefix per content
/// class is hashed first, so a body can never produce the whash of a URL or the other way round:
///
///     whash = SHA-256("SignCore/3 whash url\n"  || method || " " || canonical URL)
///     whash = SHA-256("SignCore/3 whash body\n" || body)
///
/// A URL-class whash covers everything the target digest would, so it is the target digest
/// too (SPEC §4.2): the canonical URL is hashed once per sign and per verify.
public enum WHash {
    static let urlPrefix: StaticString = "SignCore/3 whash url\n"
    static let bodyPrefix: StaticString = "SignCore/3 whash body\n"

    /// The whash of a URL-class request, from its method and canonical URL bytes.
    public static func ofCanonicalURL(_ canonicalURL: UnsafeRawBufferPointer, method: RequestMethod) -> SHA256Digest {
        SigningInput.digest(prefix: urlPrefix, method: method, canonicalURL: canonicalURL)
    }

    /// The whash of a body-class request with the whole body in memory.
    public static func ofBody(_ body: UnsafeRawBufferPointer) -> SHA256Digest {
        var hasher = BodyHasher()
        hasher.update(body)
        return hasher.finalize()
    }

    public static func ofBody(_ body: [UInt8]) -> SHA256Digest { body.withUnsafeBytes { ofBody($0) } }

    /// The whash of no body bytes: how a streamed body is known to have had none (an empty POST).
    public static let ofEmptyBody = ofBody(UnsafeRawBufferPointer(start: nil, count: 0))

    /// The whash for `method` and `url` (and `body` for body-class methods). The body of a
    /// URL-class method is not part of its whash (SPEC §3.2; a signer and a verifier refuse a
    /// non-empty one unless told to allow it unsigned).
    public static func compute(method: RequestMethod, url: String, body: [UInt8] = []) throws(SignCoreError) -> SHA256Digest {
        if method.contentClass == .body { return ofBody(body) }
        // A URL-class method's whash is its target digest (SPEC §3.2, §4.2).
        return try withUTF8(of: url) { (raw) throws(SignCoreError) in try SigningInput.targetDigest(method: method, url: raw) }
    }

    /// Incremental whash of a body of any size in constant memory; feed the chunks as they
    /// arrive. Refuses more than `limit` bytes so a server can bound its work.
    public struct BodyHasher: Sendable {
        private var hasher = SHA256Hasher()
        public private(set) var byteCount: UInt64 = 0
        public let limit: UInt64

        public init(limit: UInt64 = .max) {
            self.limit = limit
            hasher.update(WHash.bodyPrefix)
        }

        /// Adds a chunk; throws `bodyTooLarge` once the total passes `limit` (nothing is lost:
        /// the hasher state is unchanged by the refused chunk).
        public mutating func append(_ chunk: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard UInt64(chunk.count) <= limit - byteCount else {
                throw SignCoreError(.bodyTooLarge, "the body is larger than the configured limit")
            }
            update(chunk)
        }

        mutating func update(_ chunk: UnsafeRawBufferPointer) {
            hasher.update(chunk)
            byteCount += UInt64(chunk.count)
        }

        public mutating func append(_ chunk: [UInt8]) throws(SignCoreError) {
            try withBytes(of: chunk) { (raw) throws(SignCoreError) in try append(raw) }
        }

        public consuming func finalize() -> SHA256Digest { hasher.finalize() }
    }
}
