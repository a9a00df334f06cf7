import HTTPTypes
import SignCore

/// The request a proxy's forward-auth call describes (docs/SIGND.md, "Forward auth"): nginx
/// `auth_request`, Caddy `forward_auth` and Traefik ForwardAuth ask an authorization service about
/// each request before they send it on, naming its method, target, host and scheme in fields of
/// their own. Read here from those fields alone, with no server around it, so that it is fuzzed
/// (FuzzTesting's `FuzzForwardAuth`); signd believes it from its trusted proxies only.
public enum ForwardAuthDescription {
    /// The fields a kind of proxy describes a request with, and how it returns a refusal.
    public struct Style: Sendable, Equatable {
        public let method: HTTPField.Name
        public let uri: HTTPField.Name
        /// nginx's `auth_request` passes a 401 or 403 on and turns any other status into a 500:
        /// every refusal is answered 401, its own status and problem in fields.
        public let refusalsAs401: Bool

        public static let nginx = Style(method: HTTPField.Name("x-original-method")!, uri: HTTPField.Name("x-original-uri")!, refusalsAs401: true)
        /// Caddy's `forward_auth` and Traefik's ForwardAuth: a refusal is returned as it is.
        public static let forwarded = Style(method: HTTPField.Name("x-forwarded-method")!, uri: HTTPField.Name("x-forwarded-uri")!, refusalsAs401: false)

        /// The other style's description fields: a request carrying them has them from a client.
        public var foreign: [HTTPField.Name] { uri == Self.nginx.uri ? [Self.forwarded.method, Self.forwarded.uri] : [Self.nginx.method, Self.nginx.uri] }
    }

    public static let forwardedHost = HTTPField.Name("x-forwarded-host")!
    public static let forwardedProto = HTTPField.Name("x-forwarded-proto")!
    /// What the nginx configuration of docs/SIGND.md sends of the original body's framing, as it
    /// clears the subrequest's own (`proxy_pass_request_body off`).
    public static let originalContentLength = HTTPField.Name("x-original-content-length")!
    public static let originalTransferEncoding = HTTPField.Name("x-original-transfer-encoding")!

    /// What a description says.
    public struct Described: Sendable {
        /// The request: the method, target and host the proxy names, the client's other fields,
        /// without the proxy's description fields and any framing field (it has no body here).
        public var head: HTTPRequest
        public var method: RequestMethod
        /// Whether the request described had a body (a framing field that is not empty or 0).
        public var announcesBody: Bool
    }

    /// Reads the request `fields` describe.
    /// - Parameters:
    ///   - scheme: the scheme the verifier's origin has; a request the proxy received over
    ///     another was signed for another origin, or is a downgrade.
    ///   - refused: fields a client may not send through forward auth (identity fields, method
    ///     or URL overrides: the proxy, not signd, sends the request on, so they would arrive).
    /// - Throws: `invalidHeader` for a description field given twice, the other proxy's
    ///   fields or a refused field; `invalidInput` for one missing; `unsupportedMethod` for a
    ///   method that is not one; `invalidURL` for another scheme.
    public static func describe(_ fields: HTTPFields, style: Style, scheme: String,
                                refused: (HTTPField.Name) -> Bool) throws(SignCoreError) -> Described {
        func single(_ name: HTTPField.Name) throws(SignCoreError) -> String? {
            let values = fields[values: name]
            guard values.count <= 1 else { throw SignCoreError(.invalidHeader, "forward auth: the proxy's \(name.canonicalName) appears more than once") }
            return values.first
        }
        // The fields of another kind of proxy come from the client (the proxy sets its own only).
        if let foreign = style.foreign.first(where: { fields[$0] != nil }) {
            throw SignCoreError(.invalidHeader, "forward auth: the request carries \(foreign.canonicalName), which this proxy does not send")
        }
        guard let methodText = try single(style.method), let uri = try single(style.uri), let host = try single(forwardedHost) else {
            throw SignCoreError(.invalidInput, "forward auth: the proxy sent no \(style.method.canonicalName), \(style.uri.canonicalName) or x-forwarded-host")
        }
        guard let method = HTTPRequest.Method(methodText), let signed = try? RequestMethod(token: methodText) else {
            throw SignCoreError(.unsupportedMethod, "forward auth: the proxy's method is not a method")
        }
        guard let proto = try single(forwardedProto) else {
            throw SignCoreError(.invalidInput, "forward auth: the proxy sent no x-forwarded-proto")
        }
        guard proto.lowercased() == scheme else {
            throw SignCoreError(.invalidURL, "forward auth: the request came over \(proto == "http" ? "http" : "another scheme"), signd verifies \(scheme) requests")
        }
        if fields.contains(where: { refused($0.name) }) {
            throw SignCoreError(.invalidHeader, "forward auth: the request carries an identity field or a method or URL override, which would reach the upstream")
        }
        let removed: Set<HTTPField.Name> = [style.method, style.uri, forwardedHost, forwardedProto, originalContentLength,
                                            originalTransferEncoding, .contentLength, .transferEncoding, ReceivedRequest.hostField]
        let head = HTTPRequest(method: method, scheme: nil, authority: host, path: uri,
                               headerFields: HTTPFields(fields.filter { !removed.contains($0.name) }))
        // (An empty field is none: a proxy fills it from a field the request may not have.)
        let framing = [originalContentLength, .contentLength, originalTransferEncoding, .transferEncoding].flatMap { fields[values: $0] }
        let announcesBody = framing.contains { value in !["", "0"].contains(value.filter { $0 != " " && $0 != "\t" }) }
        return Described(head: head, method: signed, announcesBody: announcesBody)
    }
}
