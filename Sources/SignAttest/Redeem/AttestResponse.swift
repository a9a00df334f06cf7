import SignCore

/// The attest endpoint's answer (ATTEST.md §4.4): the token, its TTL as a duration (a client
/// caches it by its own monotonic clock), its levels and the server's clock in seconds.
public struct AttestResponse: Sendable, Equatable {
    public static let maxBytes = 4096

    public let token: String
    public let ttl: Int
    public let levels: AttestationLevels
    /// The server's clock, whole seconds since the epoch.
    public let now: Int64

    public init(token: AttestationToken, now: UInt64) {
        self.token = token.text
        ttl = token.ttl
        levels = token.levels
        self.now = Int64(now / 1000)
    }

    /// The body, exactly as ATTEST.md §4.4 writes it.
    public var body: [UInt8] {
        Array("{\"token\":\"\(token)\",\"ttl\":\(ttl),\"levels\":\(levels.rawValue),\"now\":\(now)}".utf8)
    }

    /// Reads a response body as a client does: any JSON object with these members, in any
    /// order, others ignored. Anything else is `attestationMalformed`.
    public init(body: [UInt8]) throws(SignCoreError) {
        let object: JSONObject
        do { object = try JSONObject(bytes: body, maxBytes: Self.maxBytes) } catch {
            throw SignCoreError(.attestationMalformed, "an attest response is a JSON object")
        }
        guard case .string(let token)? = object["token"], case .integer(let ttl)? = object["ttl"],
              case .integer(let levels)? = object["levels"], case .integer(let now)? = object["now"],
              AttestationToken.ttls ~= Int(ttl), (1...Int64(UInt16.max)) ~= levels, now >= 0
        else { throw SignCoreError(.attestationMalformed, "an attest response has token, ttl, levels and now") }
        // The token goes into a header field as it came: base64url of at most 1024 bytes (§5.3, §5.4).
        let text = String(decoding: token, as: UTF8.self)
        guard token.count <= 1024, Base64URL.decode(text) != nil else {
            throw SignCoreError(.attestationMalformed, "an attest response's token is base64url of at most 1024 bytes")
        }
        self.token = text
        self.ttl = Int(ttl)
        self.levels = AttestationLevels(rawValue: UInt16(levels))
        self.now = now
    }
}
