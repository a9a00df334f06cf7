/// A request as the server received it: the inputs a verifier recomputes everything from.
public struct ReceivedRequest: Sendable {
    /// The method token as received (case-sensitive, SPEC §3.1).
    public var method: String
    /// The absolute URL the server serves this request under: its own scheme, the `Host` /
    /// `:authority` it received, and the request target.
    public var url: String
    /// The body, whole or already hashed with `WHash.BodyHasher` while it streamed in.
    public var body: RequestBody
    /// The `whash` header value, if sent.
    public var whash: String?
    /// The `wtoken` header value, if sent.
    public var wtoken: String?
    /// The request's header fields in the order received; read only for the fields a token
    /// covers (SPEC §4.3).
    public var headers: [HeaderField]

    public init(method: String, url: String, body: RequestBody = .bytes([]), headers: [HeaderField] = [],
                whash: String?, wtoken: String?) {
        self.method = method
        self.url = url
        self.body = body
        self.headers = headers
        self.whash = whash
        self.wtoken = wtoken
    }

    public init(method: RequestMethod, url: String, body: RequestBody = .bytes([]), headers: [HeaderField] = [],
                whash: String?, wtoken: String?) {
        self.init(method: method.rawValue, url: url, body: body, headers: headers, whash: whash, wtoken: wtoken)
    }
}
