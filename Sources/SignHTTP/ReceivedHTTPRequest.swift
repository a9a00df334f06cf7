import HTTPTypes
import SignCore

/// Where a server is reached: the scheme and, when it is fixed, the authority that tokens must
/// be signed for. A token binds scheme, host and port, so a server never takes its scheme from
/// a header a client controls; the authority comes from the request (`:authority`, which the
/// HTTP/1 adapters of swift-http-types fill from `Host`) only when the server does not fix it.
public struct ServerOrigin: Sendable, Equatable {
    /// `https` or `http`, as the server is reached by its clients (behind a TLS-terminating load
    /// balancer: `https`).
    public var scheme: String
    /// `host` or `host:port` as clients address the server, or nil to take the request's.
    public var authority: String?

    public init(scheme: String = "https", authority: String? = nil) {
        self.scheme = scheme
        self.authority = authority
    }

    /// Refuses (`invalidURL`) an authority that is not exactly `host[:port]` (RFC 9110 §7.2,
    /// RFC 3986 §3.2.2): a host of letters, digits, `-`, `.`, `_` and `~` (a name or an IPv4
    /// address) or an IPv6 literal in brackets, then an optional port from 1 to 65535 without a
    /// leading zero. Nothing else may sit between the scheme and the path of the URL a token is checked
    /// against: a `/`, `?`, `#` or `@` in a received `Host` would end or move the authority,
    /// so the URL verified would differ from the target forwarded (SPEC §2.4).
    public static func validate(authority: String) throws(SignCoreError) {
        var authority = authority  // a native string is read in place: nothing is allocated per request
        guard authority.utf8.count <= 255 + 6, authority.withUTF8({ isHostAndPort($0) }) else { throw invalidAuthority }
        // An IPv6 literal as the canonical URL reads it (SPEC §2.4: one `::` at most, groups of
        // 1-4 digits, a dotted quad last), so no host passes here that signing refuses.
        if authority.utf8.first == UInt8(ascii: "["), let close = authority.firstIndex(of: "]") {
            do throws(SignCoreError) {
                _ = try CanonicalURL.canonicalize("http://" + authority[...close] + "/")
            } catch {
                throw invalidAuthority
            }
        }
    }

    /// `host[:port]` by its bytes: a reg-name, or `[` hex digits, `:` and `.` `]`; then nothing, or
    /// `:` and 1-65535 without a leading zero (one spelling per port, and port 0 is no port).
    private static func isHostAndPort(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > 1,
                  bytes[1..<close].allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return false }
            index = close + 1
        } else {
            while index < bytes.count, isRegNameByte(bytes[index]) { index += 1 }
            guard index > 0 else { return false }
        }
        guard index <= 255 else { return false }  // SPEC §2.4: a host of at most 255 bytes
        guard index < bytes.count else { return true }
        guard bytes[index] == UInt8(ascii: ":") else { return false }
        let port = bytes[(index + 1)...]
        guard (1...5).contains(port.count), port.first != UInt8(ascii: "0") else { return false }
        var value = 0
        for digit in port {
            guard (0x30...0x39).contains(digit) else { return false }
            value = value * 10 + Int(digit - 0x30)
        }
        return value <= 65535
    }

    private static var invalidAuthority: SignCoreError {
        SignCoreError(.invalidURL, "the authority (Host or :authority) is not host[:port]")
    }

    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// Refuses (`invalidURL`) a request target that is not an origin-form path a server would
    /// forward as it is (RFC 9112 §3.2.1): it starts with `/` and holds no `#` (a fragment is
    /// never sent, and the canonical URL would drop what follows it), no `\`, no space and no
    /// control byte, and no byte from 0x80: a request target is ASCII (RFC 9112 §3.2, RFC 3986
    /// §2), and raw UTF-8 is where a `/` or `?` followed by a combining mark reads as one
    /// character to one server and as a separator to another.
    public static func validate(target: String) throws(SignCoreError) {
        let bytes = target.utf8
        guard bytes.first == UInt8(ascii: "/") else {
            throw SignCoreError(.invalidURL, "the request target is not an absolute path")
        }
        guard !bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "\\") }) else {
            throw SignCoreError(.invalidURL, "the request target holds a byte no request target may hold")
        }
    }
}

extension ServerOrigin {
    /// The authority and target a request received here is verified for, as every proof format
    /// reads them: the origin's authority, else the request's (`:authority` / `Host`), checked
    /// as `host[:port]`; the origin-form target. Refuses a second `Host` line (`invalidHeader`)
    /// and anything else (`invalidURL`), so what is verified is what is forwarded.
    public func addressed(_ request: HTTPRequest) throws(SignCoreError) -> (authority: String, target: String) {
        try ReceivedRequest.checkHost(request)
        guard let authority = authority ?? request.authority, !authority.isEmpty else {
            throw SignCoreError(.invalidURL, "the request names no authority (:authority or Host)")
        }
        try Self.validate(authority: authority)
        guard let path = request.path else { throw SignCoreError(.invalidURL, "the request target is not an absolute path") }
        try Self.validate(target: path)
        return (authority, path)
    }
}

extension ReceivedRequest {
    /// The request as SignCore verifies it (SPEC §5), from what an HTTP server received: the
    /// absolute URL from the server's scheme, the authority (the origin's, else the request's
    /// `:authority` / `Host`) and the path with its query; the whash and wtoken from their fields; every
    /// header field, for the ones a token covers.
    ///
    /// The URL verified is exactly what a server forwards: the authority is `host[:port]` and
    /// the target an origin-form path (`ServerOrigin.validate`), so no byte of either can move
    /// the boundary between them.
    ///
    /// Refuses, as SignCore errors: no authority, an authority that is not `host[:port]`, or a
    /// target that is not an origin-form path (`invalidURL`); a second `Host` line
    /// (`invalidHeader`, `checkHost`); the whash or wtoken field sent more than once
    /// (`invalidHeader`: two tokens are never one).
    public init(_ request: HTTPRequest, body: RequestBody = .bytes([]), origin: ServerOrigin,
                names: SignHeaderNames = .standard) throws(SignCoreError) {
        let (authority, path) = try origin.addressed(request)
        self.init(method: request.method.rawValue, url: origin.scheme + "://" + authority + path, body: body,
                  headers: request.headerFields.map { HeaderField($0.name.rawName, $0.value) },
                  whash: try Self.single(names.whash, in: request.headerFields),
                  wtoken: try Self.single(names.wtoken, in: request.headerFields))
    }

    /// `Host` as a field (swift-http-types names it only as `:authority`).
    public static let hostField = HTTPField.Name("host")!

    /// One host per request (RFC 9112 §3.2: more than one `Host` line is a 400): the HTTP/1
    /// adapters move the first into `:authority` and leave any other as a field, which an
    /// upstream could route by, so a `Host` field is refused whatever its value. Over HTTP/2 a
    /// `host` field with no `:authority` (RFC 9113 §8.3.1 allows it) is refused too: the host is
    /// read from `:authority` alone.
    public static func checkHost(_ request: HTTPRequest) throws(SignCoreError) {
        guard !request.headerFields.contains(where: { $0.name == hostField }) else {
            throw SignCoreError(.invalidHeader, request.authority == nil ? "the request names its host in a Host field, not as its authority"
                                                                         : "the request names more than one host")
        }
    }

    /// The one value of a field, nil when absent; two or more are refused.
    static func single(_ name: HTTPField.Name, in fields: HTTPFields) throws(SignCoreError) -> String? {
        let values = fields[values: name]
        guard values.count <= 1 else { throw SignCoreError(.invalidHeader, "a signature header field is sent more than once") }
        return values.first
    }
}
