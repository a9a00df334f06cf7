import HTTPTypes
import SignCore

extension Signer {
    /// Signs `request` in place (SPEC §4): the URL from its scheme, authority and path, the
    /// header fields it carries for the names this signer covers, and `body` as it will be
    /// sent; sets the whash and wtoken fields, replacing any there were. Call it again for every
    /// attempt (a retry is a new request and needs a fresh nonce).
    ///
    /// Refuses a request without a scheme, authority or absolute path (`invalidURL`), and what
    /// `sign` refuses.
    public func sign(_ request: inout HTTPRequest, body: [UInt8] = [], names: SignHeaderNames = .standard) throws(SignCoreError) {
        let headers = try sign(method: try Self.method(of: request), url: try Self.url(of: request), body: body,
                               headers: request.headerFields.map { HeaderField($0.name.rawName, $0.value) })
        Self.set(headers, on: &request, names: names)
    }

    /// The same for a body hashed elsewhere (streamed): its whash.
    public func sign(_ request: inout HTTPRequest, bodyWHash: SHA256Digest, names: SignHeaderNames = .standard) throws(SignCoreError) {
        let headers = try sign(method: try Self.method(of: request), url: try Self.url(of: request), bodyWHash: bodyWHash,
                               headers: request.headerFields.map { HeaderField($0.name.rawName, $0.value) })
        Self.set(headers, on: &request, names: names)
    }

    /// `sign(_:body:names:)` with any key, external ones included (`Signer.signAsync`).
    public func signAsync(_ request: inout HTTPRequest, body: [UInt8] = [], names: SignHeaderNames = .standard) async throws(SignCoreError) {
        let headers = try await signAsync(method: try Self.method(of: request), url: try Self.url(of: request), body: body,
                                          headers: request.headerFields.map { HeaderField($0.name.rawName, $0.value) })
        Self.set(headers, on: &request, names: names)
    }

    /// `sign(_:bodyWHash:names:)` with any key, external ones included (`Signer.signAsync`).
    public func signAsync(_ request: inout HTTPRequest, bodyWHash: SHA256Digest, names: SignHeaderNames = .standard) async throws(SignCoreError) {
        let headers = try await signAsync(method: try Self.method(of: request), url: try Self.url(of: request), bodyWHash: bodyWHash,
                                          headers: request.headerFields.map { HeaderField($0.name.rawName, $0.value) })
        Self.set(headers, on: &request, names: names)
    }

    static func method(of request: HTTPRequest) throws(SignCoreError) -> RequestMethod {
        try RequestMethod(token: request.method.rawValue)
    }

    static func url(of request: HTTPRequest) throws(SignCoreError) -> String {
        guard let scheme = request.scheme, let authority = request.authority,
              let path = request.path, path.utf8.first == UInt8(ascii: "/") else {
            throw SignCoreError(.invalidURL, "the request needs a scheme, an authority and an absolute path to be signed")
        }
        return scheme + "://" + authority + path
    }

    static func set(_ headers: SignedHeaders, on request: inout HTTPRequest, names: SignHeaderNames) {
        request.headerFields[names.whash] = headers.whash
        request.headerFields[names.wtoken] = headers.wtoken
    }
}

extension HTTPRequest {
    /// A request to `url` as it is written: the scheme before `://`, the authority up to the
    /// first `/`, `?` or `#`, the rest as the path (`/` when empty, and before a bare query), so
    /// the URL a signer reads back is the URL given, not one a URL parser rewrote. For clients
    /// whose requests carry their URL as a string (AsyncHTTPClient, the OpenAPI runtime).
    public init(method: Method, urlString url: String, headerFields: HTTPFields = HTTPFields()) throws(SignCoreError) {
        guard let separator = url.range(of: "://"), separator.lowerBound > url.startIndex else {
            throw SignCoreError(.invalidURL, "the request's URL has no scheme")
        }
        let afterScheme = url[separator.upperBound...]
        let pathStart = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        // A user part would be signed, kept as the origin's name, and sent: a password never is.
        guard !afterScheme[..<pathStart].contains("@") else {
            throw SignCoreError(.invalidURL, "the request's URL has a user part; credentials go in a header field")
        }
        let path = afterScheme[pathStart...]
        self.init(method: method, scheme: String(url[..<separator.lowerBound]), authority: String(afterScheme[..<pathStart]),
                  path: path.hasPrefix("/") ? String(path) : "/" + path, headerFields: headerFields)
    }
}
