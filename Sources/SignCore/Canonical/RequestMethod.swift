/// The request methods SignCore signs, and which content each one's whash covers (SPEC §3.1).
public enum RequestMethod: String, Sendable, CaseIterable {
    case get = "GET", head = "HEAD", options = "OPTIONS", delete = "DELETE"
    case post = "POST", put = "PUT", patch = "PATCH"

    /// What the whash of a request with this method is computed over.
    public enum ContentClass: Sendable {
        /// The method and the canonical URL: the request has no meaningful body.
        case url
        /// The body bytes exactly as sent.
        case body
    }

    public var contentClass: ContentClass {
        switch self {
        case .get, .head, .options, .delete: .url
        case .post, .put, .patch: .body
        }
    }

    /// The method as hashed into the whash and the target digest, without building a String.
    var token: StaticString {
        switch self {
        case .get: "GET"
        case .head: "HEAD"
        case .options: "OPTIONS"
        case .delete: "DELETE"
        case .post: "POST"
        case .put: "PUT"
        case .patch: "PATCH"
        }
    }

    /// Parses a method token. Methods are case-sensitive (RFC 9110 §9.1): `get` is not `GET`.
    /// The common methods first, inline, as whole small strings: one comparison of a String's
    /// bits when they are equal; the others by `parse`, which reads the bytes.
    @inline(__always)
    public init(token: borrowing String) throws(SignCoreError) {
        if token == "GET" {
            self = .get
        } else if token == "POST" {
            self = .post
        } else {
            self = try Self.parse(copy token)
        }
    }

    @inline(never)
    private static func parse(_ token: String) throws(SignCoreError) -> RequestMethod {
        var token = token
        let method = token.withUTF8 { bytes -> RequestMethod? in
            let candidate: RequestMethod
            switch (bytes.count, bytes.first) {
            case (3, UInt8(ascii: "G")): candidate = .get
            case (3, UInt8(ascii: "P")): candidate = .put
            case (4, UInt8(ascii: "H")): candidate = .head
            case (4, UInt8(ascii: "P")): candidate = .post
            case (5, _): candidate = .patch
            case (6, _): candidate = .delete
            case (7, _): candidate = .options
            default: return nil
            }
            return bytesEqual(UnsafeRawBufferPointer(bytes), candidate.token.bytes) ? candidate : nil
        }
        guard let method else {
            throw SignCoreError(.unsupportedMethod, "the method must be one of GET, HEAD, OPTIONS, DELETE, POST, PUT, PATCH")
        }
        return method
    }
}
