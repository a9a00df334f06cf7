import Foundation
import SignCore
import SignAttest
import SignDevice
import X509
import SignHTTP
import SignHTTPSignatures

/// signd's configuration: one JSON file (README "signd"). Every member but `upstream` and `keys`
/// has a default; an unknown member is an error, so a misspelt setting is never silently ignored.
public struct GatewayConfiguration: Sendable, Decodable {
    /// Where signd listens: `host:port`.
    public var listen = "127.0.0.1:8080"
    /// The service behind signd: `http://host:port`, requests forwarded with their path and query;
    /// nil (absent) only with `forwardAuth`, for a signd that answers forward auth alone.
    public var upstream: String?
    /// The scheme (and, when fixed, the authority) clients sign for.
    public var origin = Origin()
    public var keys: Keys
    public var replay = Replay()
    /// Seconds of clock difference tolerated between clients and signd (SPEC §5).
    public var skew: Int64 = 30
    /// The longest token lifetime accepted, in seconds.
    public var maxLifetime: Int64 = 300
    public var policy = Policy()
    public var body = Body()
    public var headerNames = HeaderNames()
    public var identityHeaders = IdentityHeaders()
    /// Answered by signd itself, never verified or forwarded: liveness.
    public var healthPath = "/.well-known/signcore/health"
    /// Answered by signd itself: readiness (keys, last reload, store, upstream).
    public var readyPath = "/.well-known/signcore/ready"
    /// Networks of the proxies in front of signd (CIDR): only their `trustedProxyField` is
    /// read, to find the client's address.
    public var trustedProxies: [String] = []
    /// The field the trusted proxies write: `x-forwarded-for` or `forwarded`.
    public var trustedProxyField = ProxyField.xForwardedFor
    /// The Prometheus endpoint, on a listener of its own; nil (JSON `null`) for none.
    public var metrics: Metrics? = Metrics()
    /// One log line per request at `info`.
    public var accessLog = true
    /// Seconds an upstream may take to start its response.
    public var upstreamTimeout: Int64 = 300
    /// Seconds signd keeps trying to open a connection to the upstream before answering 502.
    public var upstreamConnectTimeout: Int64 = 5
    public var upstreamConnections = 64
    /// trace, debug, info, notice, warning, error or critical.
    public var logLevel = "info"
    public var limits = Limits()
    /// 428 challenges and attestation tokens (docs/ATTEST.md); nil: none.
    public var attestation: Attestation?
    /// Rate limits and their bypass (docs/ATTEST.md §10, docs/SIGND.md "Rate limits"); nil: none.
    public var rateLimits: RateLimits?
    /// Web Bot Auth's key directories (docs/HTTPSIG.md §7.3); nil: none is fetched.
    public var webBotAuth: WebBotAuthSettings?
    /// The forward-auth endpoint (docs/SIGND.md "Forward auth"); nil: none.
    public var forwardAuth: ForwardAuth?
    /// TLS on signd's listener, with HTTP/2 (docs/SIGND.md "TLS"); nil: plain HTTP/1.1.
    public var tls: TLS?

    public struct ForwardAuth: Sendable, Decodable {
        /// The path the proxy sends its questions to.
        public var path = "/.well-known/signcore/auth"
        /// The proxy in front: `nginx` (`auth_request`: `X-Original-URI` and `X-Original-Method`,
        /// refusals answered 401), `caddy` or `traefik` (`X-Forwarded-Uri` and
        /// `X-Forwarded-Method`, refusals as they are).
        public var proxy: ForwardAuthProxy
    }

    public enum ForwardAuthProxy: String, Sendable, CaseIterable, ConfigurationChoice { case nginx, caddy, traefik }

    public struct TLS: Sendable, Decodable {
        /// PEM files: the certificate chain (the leaf first) and its private key.
        public var certificateChain: String
        public var privateKey: String
        /// HTTP/2 offered by ALPN beside HTTP/1.1.
        public var http2 = true
        /// Seconds between checks of the two files for a new certificate (SIGHUP checks at once).
        public var reloadInterval: Int64 = 60
    }

    public struct WebBotAuthSettings: Sendable, Decodable {
        /// The https origins whose `/.well-known/http-message-signatures-directory` may be fetched.
        public var directories: [String] = []
        /// Seconds a fetch may take (1-30).
        public var fetchTimeout = 5
        /// A PEM file of the roots the directories' certificates are checked against; nil: the system's.
        public var trustRoots: String?
    }

    public struct Metrics: Sendable, Decodable {
        /// `host:port` of the metrics listener: keep it private (loopback by default).
        public var listen = "127.0.0.1:9464"
        public var path = "/metrics"
    }

    /// What one client may hold of signd: connections, time and header bytes.
    public struct Limits: Sendable, Decodable {
        /// Connections open at once; past it new ones wait in the listen backlog.
        public var maxConnections = 4096
        /// Seconds a connection may go without completing a request part (a head, a body chunk)
        /// or a response part: silent clients and slow-header clients are closed alike.
        public var idleTimeout: Int64 = 30
        /// Bytes of header fields one request may send (each field and all of them).
        public var maxHeaderBytes = 32 << 10
        /// Bytes a second a request body must average over each `bodyRateWindow` seconds that
        /// signd reads it; 0 turns the check off. A body sent a byte at a time completes a part
        /// each time and would pass `idleTimeout` forever.
        public var minBodyRate = 1024
        public var bodyRateWindow: Int64 = 10
    }

    public struct Origin: Sendable, Decodable {
        public var scheme = "https"
        public var authority: String?
    }

    public struct Keys: Sendable, Decodable {
        /// JWK Set files (or single JWKs); their keys together are the accepted set.
        public var files: [String]
        /// Seconds between checks of the files for changes (reloaded without a restart; SIGHUP
        /// reloads at once).
        public var reloadInterval: Int64 = 5
        /// Private EdDSA/ES256 keys accepted in the files (a verifier needs only public ones).
        public var allowPrivateKeys = false
    }

    public enum Store: String, Sendable, CaseIterable, ConfigurationChoice {
        case memory, postgres
    }

    /// `x-forwarded-for` or `forwarded`.
    public typealias ProxyField = TrustedProxies.Field

    /// `address`, `key` or `account`.
    public typealias RateLimitKey = RateLimit.Key

    public enum BodyMode: String, Sendable, CaseIterable, ConfigurationChoice {
        case buffered, streamed
    }

    public struct Replay: Sendable, Decodable {
        /// `memory` (one signd alone) or `postgres` (a fleet sharing one database).
        public var store = Store.memory
        /// For `memory`: live nonces held (peak accepted rate × longest lifetime).
        public var capacity = 6_000_000
        /// For `memory`: the largest fraction of `capacity` one key id may hold, in (0, 1]; 1 when
        /// one key carries all traffic (a shared HMAC key).
        public var maxShare = 0.5
        public var postgres: Postgres?
    }

    public struct Postgres: Sendable, Decodable {
        public var host = "127.0.0.1"
        public var port = 5432
        public var username = "signd"
        /// A file holding the password (not the password itself: configs get copied around).
        public var passwordFile: String?
        public var database = "signd"
        public var table = "signcore_nonces"
        public var connections = 20
        /// Seconds a record may wait for the database before the request is refused 503.
        public var timeout: Double = 2
    }

    public struct Policy: Sendable, Decodable {
        /// `require`, `monitor` or `off` for requests no rule matches.
        public var fallback = SignatureRequirement.require
        /// The proof formats of requests no rule matches (`wtoken`, `httpSignature`).
        public var formats: [ProofFormat] = [.wtoken]
        /// The RFC 9421 policy of routes that read `httpSignature` and set none (docs/HTTPSIG.md §5.1).
        public var httpSignature = HTTPSignatureSettings()
        public var routes: [Route] = []
    }

    /// A proof format a route reads (docs/HTTPSIG.md §5.4).
    public enum ProofFormat: String, Sendable, CaseIterable, ConfigurationChoice {
        case wtoken, httpSignature
    }

    /// An RFC 9421 policy (docs/HTTPSIG.md §5.1), as `HTTPSignaturePolicy` with its defaults.
    public struct HTTPSignatureSettings: Sendable, Decodable {
        public var coverage = HTTPSignatureCoverage.request
        /// Component identifiers as written in `Signature-Input` (`"content-type"` or `content-type`).
        public var requiredComponents: [String] = []
        public var maxAge: Int64 = 300
        public var skew: Int64 = 30
        public var nonce = HTTPSignatureNonce.required
        public var label: String?
        public var tag: String?
        /// `webBotAuth`: Web Bot Auth's settings (agent coverage, tag web-bot-auth, nonces optional, 60 s).
        public var preset: String?
    }

    public enum HTTPSignatureCoverage: String, Sendable, CaseIterable, ConfigurationChoice { case request, agent }
    public enum HTTPSignatureNonce: String, Sendable, CaseIterable, ConfigurationChoice { case required, optional }

    public struct Route: Sendable, Decodable {
        /// `"GET /api/**"`, `"/health"`...: see RoutePolicy.
        public var route: String
        public var signature: SignatureRequirement
        /// This route's body mode and limit, in place of the top-level `body`'s (a member not
        /// set is the top-level one).
        public var body: RouteBody?
        /// This route's upstream timeout, in place of the top-level one.
        public var upstreamTimeout: Int64?
        /// What this route asks of a request's attestation; nil: nothing.
        public var attestation: RouteAttestation?
        /// The buckets of `rateLimits.buckets` this route's requests count against.
        public var rateLimits: [String] = []
        /// The proof formats this route reads; nil: `policy.formats`.
        public var formats: [ProofFormat]?
        /// This route's RFC 9421 policy; nil: `policy.httpSignature`.
        public var httpSignature: HTTPSignatureSettings?
    }

    /// The rate limits (docs/ATTEST.md §10): named buckets that routes count against.
    public struct RateLimits: Sendable, Decodable {
        /// Each limit by its bucket's name (seed 001's `rateLimitingBucket`).
        public var buckets: [String: Bucket]
        /// The most clients each limit keeps (past it, full buckets are forgotten, then new
        /// clients share one).
        public var capacity = 100_000
        /// The names of an answer's fields.
        public var fields = BypassFields()
    }

    public struct Bucket: Sendable, Decodable {
        public var quota: Int
        /// Seconds.
        public var window: Int
        /// At most `quota`; nil: `quota`.
        public var burst: Int?
        /// `address` (before the signature is checked), `key` or `account` (after).
        public var key = RateLimitKey.address
        /// The ways past the limit it offers; nil: none (a 429 with `Retry-After` only).
        public var bypass: Bypass?
    }

    public struct Bypass: Sendable, Decodable {
        /// `SIGNCORE_DEVICE_KEY`, `APPLE_DEVICE_CHECK`, `ANDROID_PLAY_INTEGRITY`, `SIGNCORE_POW`, in the order offered.
        public var types: [String] = BypassType.all.map(\.rawValue)
        /// Seconds an offer may be answered in (1-3600).
        public var offerTTL = 60
        /// Seconds a pass lasts (1-86400).
        public var passTTL = 300
        /// The levels (0-15) a pass holds: none a route's attestation asks for.
        public var passLevels = [15]
        /// `SIGNCORE_POW`'s work (12-26 bits, 1-16 sub-solutions).
        public var difficulty = 18
        public var count = 4
    }

    public struct BypassFields: Sendable, Decodable {
        public var type = "x-captcha-type"
        public var response = "x-captcha-response"
        public var siteKey = "x-captcha-site-key"
        public var keyId = "x-captcha-key-id"
    }


    /// The attestation flow (docs/ATTEST.md, docs/SIGND.md "Attestation").
    public struct Attestation: Sendable, Decodable {
        /// The JWK Set file of the server's keys, the same on every node: `oct` keys authenticate
        /// challenges, `OKP`/`EC` keys sign tokens; the first of each kind issues.
        public var keys: String
        /// The challenges that earn levels; a missing level is asked for with the first that grants it.
        public var challenges: [Challenge]
        public var challengeField = "attest-challenge"
        public var tokenField = "attest-token"
        public var endpoint = AttestationGate.defaultEndpoint
        /// Milliseconds allowed between the clocks of the fleet's nodes (0-60000).
        public var skew: UInt64 = 5000
        /// Seconds a token is valid for (1-86400).
        public var tokenTTL = 900
        /// Where redeemed challenges are recorded: `memory` (one node) or `postgres` (the replay
        /// store's database, `replay.postgres`, in `table`), for a fleet.
        public var store = Store.memory
        public var table = "signcore_redemptions"
        /// The most challenges the memory store holds unexpired.
        public var capacity = 1_000_000
        /// Registered device keys (docs/ATTEST.md §9); nil: none.
        public var devices: Devices?
    }

    /// Device keys (docs/ATTEST.md §9, docs/SIGND.md "Device keys").
    public struct Devices: Sendable, Decodable {
        /// The registration formats accepted: `signcore` (and, as they are verified, the platform formats).
        public var formats: [String] = ["signcore"]
        /// The app ids a registration may name.
        public var appIds: [String]
        /// Seconds a registration challenge may be answered in (1-3600).
        public var registrationTTL = 300
        /// Levels (0-15) only a platform-attested device earns.
        public var platformLevels: [Int] = []
        public var endpoint = AttestationGate.defaultDeviceEndpoint
        public var counterField = "signcore-counter"
        /// Where registered keys live: `memory` (one node) or `postgres` (the replay store's
        /// database, in `table`), for a fleet.
        public var store = Store.memory
        public var table = "signcore_devices"
        /// The most keys the memory registry holds, and the verifier's key cache holds.
        public var capacity = 1_000_000
        public var cacheCapacity = 100_000
        /// Apple App Attest (format `apple-app-attest`).
        public var appAttest = AppAttest()
        /// Google Play Integrity (format `android-play-integrity`); needed when that format is accepted.
        public var playIntegrity: PlayIntegrity?
    }

    public struct PlayIntegrity: Sendable, Decodable {
        /// Files holding the Play Console's decryption key and verification key (base64, as the console shows them).
        public var decryptionKeyFile: String
        public var verificationKeyFile: String
        /// SHA-256 digests of the app's signing certificates (base64url, no padding); none: not checked.
        public var certificateDigests: [String] = []
        public var appVerdicts: [String] = ["PLAY_RECOGNIZED"]
        public var deviceVerdict = "MEETS_DEVICE_INTEGRITY"
    }

    public struct AppAttest: Sendable, Decodable {
        /// PEM files of the roots trusted; none: Apple's App Attest root.
        public var roots: [String] = []
        /// `production`, `development`, or both.
        public var environments: [String] = ["production"]
    }

    public struct Challenge: Sendable, Decodable {
        /// `proofOfWork` (the default) or `device`: answered by a registered device key.
        public var kind = ChallengeKind.proofOfWork
        /// The levels (0-15) a redemption grants.
        public var levels: [Int]
        public var difficulty = 18
        public var count = 4
        /// Seconds.
        public var ttl = 120
        /// Milliseconds between issue and redemption.
        public var minElapsed = 0
    }

    public struct RouteAttestation: Sendable, Decodable {
        public var mode: AttestationMode
        /// The levels (0-15) a token must hold.
        public var levels: [Int] = []
    }

    public enum AttestationMode: String, Sendable, CaseIterable, ConfigurationChoice {
        case require, monitor, off
    }

    public enum ChallengeKind: String, Sendable, CaseIterable, ConfigurationChoice {
        case proofOfWork, device
    }

    public struct RouteBody: Sendable, Decodable {
        public var mode: BodyMode?
        public var limit: Int64?
    }

    public struct Body: Sendable, Decodable {
        /// `buffered` (the default: collected up to `limit`, verified, then forwarded) or
        /// `streamed` (large bodies verified as they pass upstream; docs/SIGND.md, body).
        public var mode = BodyMode.buffered
        public var limit: Int64 = 1 << 20
    }

    public struct HeaderNames: Sendable, Decodable {
        public var whash = "whash"
        public var wtoken = "wtoken"
    }

    /// The fields signd sets on forwarded requests from the verified token, after removing any
    /// the client sent under these names.
    public struct IdentityHeaders: Sendable, Decodable {
        public var keyID = "signcore-key-id"
        public var account = "signcore-account"
        public var algorithm = "signcore-algorithm"
        /// What signd decided: `off`, `verified`, `verified;body=streamed` or `failed;error=<name>`.
        public var verdict = "signcore-verdict"
        /// The levels of the attestation token that met the route, as an integer.
        public var attestation = "signcore-attestation"
    }

    /// Reads and checks a configuration file.
    public static func load(path: String) throws(SignCoreError) -> GatewayConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SignCoreError(.invalidConfiguration, "cannot read the configuration file \(path)")
        }
        return try parse(data)
    }

    public static func parse(_ data: Data) throws(SignCoreError) -> GatewayConfiguration {
        if let offset = trailingComma(in: data) {
            throw SignCoreError(.invalidConfiguration, "the configuration is not valid JSON (a trailing comma at byte \(offset))")
        }
        do {
            return try JSONDecoder().decode(GatewayConfiguration.self, from: data)
        } catch let error as SignCoreError {
            throw error
        } catch let DecodingError.keyNotFound(key, context) {
            throw SignCoreError(.invalidConfiguration, "configuration: \(Self.path(context.codingPath + [key])) is missing")
        } catch let DecodingError.typeMismatch(_, context) where !context.codingPath.isEmpty {
            throw SignCoreError(.invalidConfiguration, "configuration: \(Self.path(context.codingPath)) has the wrong type or value")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw SignCoreError(.invalidConfiguration, "configuration: \(Self.path(context.codingPath)) has the wrong type or value")
        } catch {
            throw SignCoreError(.invalidConfiguration, "the configuration is not valid JSON")
        }
    }

    /// Where a `,` is followed (after whitespace) by `}` or `]`, outside strings: JSON (RFC 8259)
    /// has no trailing commas, whatever a lenient decoder accepts.
    static func trailingComma(in data: Data) -> Int? {
        var inString = false, escaped = false, comma: Int?
        for (offset, byte) in data.enumerated() {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true; comma = nil
            case UInt8(ascii: ","): comma = offset
            case UInt8(ascii: "}"), UInt8(ascii: "]"): if let comma { return comma }
            case 0x20, 0x09, 0x0A, 0x0D: break
            default: comma = nil
            }
        }
        return nil
    }

    static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
    }
}

// MARK: - Decoding with defaults, unknown members refused

/// A member with a fixed set of string values: any other is refused naming them.
public protocol ConfigurationChoice: RawRepresentable<String>, CaseIterable, Decodable {}

extension TrustedProxies.Field: ConfigurationChoice {}
extension RateLimit.Key: ConfigurationChoice {}

extension ConfigurationChoice {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = Self(rawValue: text) else {
            throw SignCoreError(.invalidConfiguration, "configuration: \(GatewayConfiguration.path(decoder.codingPath)) is "
                                + Self.allCases.map(\.rawValue).joined(separator: " or "))
        }
        self = value
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// The object's members, refusing any not in `known`.
    func members(_ known: Set<String>) throws -> KeyedDecodingContainer<AnyKey> {
        let container = try container(keyedBy: AnyKey.self)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw SignCoreError(.invalidConfiguration,
                                "configuration: unknown member \(GatewayConfiguration.path(codingPath + [key])) (known: \(known.sorted().joined(separator: ", ")))")
        }
        return container
    }
}

extension KeyedDecodingContainer<AnyKey> {
    func set<T: Decodable>(_ value: inout T, _ name: String) throws {
        if let decoded = try decodeIfPresent(T.self, forKey: AnyKey(stringValue: name)) { value = decoded }
    }

    func required<T: Decodable>(_ name: String) throws -> T {
        try decode(T.self, forKey: AnyKey(stringValue: name))
    }
}

extension GatewayConfiguration {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["listen", "upstream", "origin", "keys", "replay", "skew", "maxLifetime", "policy", "body",
                                     "headerNames", "identityHeaders", "healthPath", "readyPath", "trustedProxies", "trustedProxyField", "metrics", "accessLog", "upstreamTimeout", "upstreamConnectTimeout", "upstreamConnections", "logLevel",
                                     "limits", "attestation", "rateLimits", "webBotAuth", "forwardAuth", "tls"])
        upstream = try c.decodeIfPresent(String.self, forKey: AnyKey(stringValue: "upstream"))
        keys = try c.required("keys")
        try c.set(&listen, "listen"); try c.set(&origin, "origin"); try c.set(&replay, "replay"); try c.set(&skew, "skew")
        try c.set(&maxLifetime, "maxLifetime"); try c.set(&policy, "policy"); try c.set(&body, "body")
        try c.set(&headerNames, "headerNames"); try c.set(&identityHeaders, "identityHeaders"); try c.set(&healthPath, "healthPath")
        try c.set(&upstreamTimeout, "upstreamTimeout"); try c.set(&upstreamConnectTimeout, "upstreamConnectTimeout")
        try c.set(&upstreamConnections, "upstreamConnections"); try c.set(&logLevel, "logLevel")
        try c.set(&limits, "limits"); try c.set(&readyPath, "readyPath"); try c.set(&trustedProxies, "trustedProxies")
        try c.set(&trustedProxyField, "trustedProxyField")
        try c.set(&accessLog, "accessLog")
        attestation = try c.decodeIfPresent(Attestation.self, forKey: AnyKey(stringValue: "attestation"))
        rateLimits = try c.decodeIfPresent(RateLimits.self, forKey: AnyKey(stringValue: "rateLimits"))
        webBotAuth = try c.decodeIfPresent(WebBotAuthSettings.self, forKey: AnyKey(stringValue: "webBotAuth"))
        forwardAuth = try c.decodeIfPresent(ForwardAuth.self, forKey: AnyKey(stringValue: "forwardAuth"))
        tls = try c.decodeIfPresent(TLS.self, forKey: AnyKey(stringValue: "tls"))
        let metricsKey = AnyKey(stringValue: "metrics")
        if c.contains(metricsKey) { metrics = try c.decodeNil(forKey: metricsKey) ? nil : c.decode(Metrics.self, forKey: metricsKey) }
        try checkValues()
    }

    /// Values each member's type allows but signd does not: refused with the member's path and
    /// what it may be, never clamped or taken as a default.
    func checkValues() throws(SignCoreError) {
        func refuse(_ member: String, _ allowed: String) -> SignCoreError {
            SignCoreError(.invalidConfiguration, "configuration: \(member) is \(allowed)")
        }
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        guard levels.contains(logLevel) else { throw refuse("logLevel", levels.joined(separator: ", ")) }
        guard upstreamConnections >= 1 else { throw refuse("upstreamConnections", "at least 1") }
        guard upstreamTimeout >= 1 else { throw refuse("upstreamTimeout", "at least 1 second") }
        guard upstreamConnectTimeout >= 1 else { throw refuse("upstreamConnectTimeout", "at least 1 second") }
        guard skew >= 0 else { throw refuse("skew", "0 seconds or more") }
        guard maxLifetime >= 1 else { throw refuse("maxLifetime", "at least 1 second") }
        guard keys.reloadInterval >= 1 else { throw refuse("keys.reloadInterval", "at least 1 second") }
        guard replay.capacity >= 1 else { throw refuse("replay.capacity", "at least 1") }
        for (member, path) in [("healthPath", healthPath), ("readyPath", readyPath)] + (metrics.map { [("metrics.path", $0.path)] } ?? []) {
            guard path.hasPrefix("/"), (try? ServerOrigin.validate(target: path)) != nil, !path.contains("?") else {
                throw refuse(member, "an absolute path (starting with /, no query)")
            }
        }
        guard healthPath != readyPath else { throw refuse("readyPath", "a path other than healthPath") }
        guard upstream != nil || forwardAuth != nil else {
            throw SignCoreError(.invalidConfiguration, "configuration: upstream is missing (it may be left out only with forwardAuth)")
        }
        if let forwardAuth {
            guard forwardAuth.path.hasPrefix("/"), (try? ServerOrigin.validate(target: forwardAuth.path)) != nil, !forwardAuth.path.contains("?"),
                  ![healthPath, readyPath].contains(forwardAuth.path) else {
                throw refuse("forwardAuth.path", "an absolute path (starting with /, no query) other than healthPath and readyPath")
            }
            // The proxy's description of a request is believed from the proxies alone.
            guard !trustedProxies.isEmpty else { throw refuse("trustedProxies", "the proxies' addresses when forwardAuth is set") }
        }
        if let tls {
            guard tls.reloadInterval >= 1 else { throw refuse("tls.reloadInterval", "at least 1 second") }
            // The scheme of a TLS listener is https: a token signed for http:// was not sent over it.
            guard origin.scheme == "https" else { throw refuse("origin.scheme", "https when signd terminates TLS") }
        }
        for (index, network) in trustedProxies.enumerated() where IPNetwork(network) == nil {
            throw refuse("trustedProxies[\(index)]", "an IP address or a network in CIDR notation (10.0.0.0/8, fd00::/8), not \(network)")
        }
        // Identity fields are signd's own: never a field a client sends for its own purposes.
        let reserved: Set<String> = ["authorization", "cookie", "host", "content-type", "content-length", "transfer-encoding", "connection",
                                     headerNames.whash.lowercased(), headerNames.wtoken.lowercased()]
        var taken = Set<String>()
        for (member, name) in [("keyID", identityHeaders.keyID), ("account", identityHeaders.account), ("algorithm", identityHeaders.algorithm),
                               ("verdict", identityHeaders.verdict), ("attestation", identityHeaders.attestation)] {
            // Compared as signd removes them: any case, `_` for `-`.
            let spelling = name.lowercased().replacingOccurrences(of: "_", with: "-")
            guard !reserved.contains(name.lowercased()), !["forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"].contains(spelling)
            else { throw refuse("identityHeaders.\(member)", "a field of signd's own, not \(name)") }
            guard taken.insert(spelling).inserted else { throw refuse("identityHeaders.\(member)", "a name no other identity field has") }
        }
    }
}

extension GatewayConfiguration.Metrics {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["listen", "path"])
        try c.set(&listen, "listen"); try c.set(&path, "path")
    }
}

extension GatewayConfiguration.Limits {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["maxConnections", "idleTimeout", "maxHeaderBytes", "minBodyRate", "bodyRateWindow"])
        try c.set(&maxConnections, "maxConnections"); try c.set(&idleTimeout, "idleTimeout"); try c.set(&maxHeaderBytes, "maxHeaderBytes")
        try c.set(&minBodyRate, "minBodyRate"); try c.set(&bodyRateWindow, "bodyRateWindow")
        guard maxConnections >= 1 else { throw SignCoreError(.invalidConfiguration, "configuration: limits.maxConnections is at least 1") }
        guard idleTimeout >= 1 else { throw SignCoreError(.invalidConfiguration, "configuration: limits.idleTimeout is at least 1 second") }
        guard (1024...(1 << 20)).contains(maxHeaderBytes) else {
            throw SignCoreError(.invalidConfiguration, "configuration: limits.maxHeaderBytes is 1024 to 1048576")
        }
        guard (0...(1 << 30)).contains(minBodyRate) else {
            throw SignCoreError(.invalidConfiguration, "configuration: limits.minBodyRate is 0 (off) to 1073741824 bytes a second")
        }
        guard (1...3600).contains(bodyRateWindow) else {
            throw SignCoreError(.invalidConfiguration, "configuration: limits.bodyRateWindow is 1 to 3600 seconds")
        }
    }
}

extension GatewayConfiguration.Origin {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["scheme", "authority"])
        try c.set(&scheme, "scheme"); authority = try c.decodeIfPresent(String.self, forKey: AnyKey(stringValue: "authority"))
    }
}

extension GatewayConfiguration.Keys {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["files", "reloadInterval", "allowPrivateKeys"])
        files = try c.required("files")
        try c.set(&reloadInterval, "reloadInterval"); try c.set(&allowPrivateKeys, "allowPrivateKeys")
    }
}

extension GatewayConfiguration.Replay {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["store", "capacity", "maxShare", "postgres"])
        try c.set(&store, "store"); try c.set(&capacity, "capacity"); try c.set(&maxShare, "maxShare")
        guard maxShare > 0, maxShare <= 1 else { throw SignCoreError(.invalidConfiguration, "configuration: replay.maxShare is more than 0 and at most 1") }
        postgres = try c.decodeIfPresent(GatewayConfiguration.Postgres.self, forKey: AnyKey(stringValue: "postgres"))
    }
}

extension GatewayConfiguration.Postgres {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["host", "port", "username", "passwordFile", "database", "table", "connections", "timeout"])
        try c.set(&host, "host"); try c.set(&port, "port"); try c.set(&username, "username"); try c.set(&database, "database")
        passwordFile = try c.decodeIfPresent(String.self, forKey: AnyKey(stringValue: "passwordFile"))
        try c.set(&table, "table"); try c.set(&connections, "connections"); try c.set(&timeout, "timeout")
    }
}

extension GatewayConfiguration.Policy {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["fallback", "formats", "httpSignature", "routes"])
        try c.set(&fallback, "fallback"); try c.set(&formats, "formats"); try c.set(&httpSignature, "httpSignature"); try c.set(&routes, "routes")
    }
}

extension GatewayConfiguration.Route {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["route", "signature", "body", "upstreamTimeout", "attestation", "rateLimits", "formats", "httpSignature"])
        route = try c.required("route"); signature = try c.required("signature")
        try c.set(&rateLimits, "rateLimits")
        formats = try c.decodeIfPresent([GatewayConfiguration.ProofFormat].self, forKey: AnyKey(stringValue: "formats"))
        httpSignature = try c.decodeIfPresent(GatewayConfiguration.HTTPSignatureSettings.self, forKey: AnyKey(stringValue: "httpSignature"))
        attestation = try c.decodeIfPresent(GatewayConfiguration.RouteAttestation.self, forKey: AnyKey(stringValue: "attestation"))
        body = try c.decodeIfPresent(GatewayConfiguration.RouteBody.self, forKey: AnyKey(stringValue: "body"))
        upstreamTimeout = try c.decodeIfPresent(Int64.self, forKey: AnyKey(stringValue: "upstreamTimeout"))
        if let upstreamTimeout, upstreamTimeout < 1 {
            throw SignCoreError(.invalidConfiguration, "configuration: \(GatewayConfiguration.path(decoder.codingPath)).upstreamTimeout is at least 1 second")
        }
    }
}

extension GatewayConfiguration.ForwardAuth {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["path", "proxy"])
        proxy = try c.required("proxy"); try c.set(&path, "path")
    }
}

extension GatewayConfiguration.TLS {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["certificateChain", "privateKey", "http2", "reloadInterval"])
        certificateChain = try c.required("certificateChain"); privateKey = try c.required("privateKey")
        try c.set(&http2, "http2"); try c.set(&reloadInterval, "reloadInterval")
    }
}

extension GatewayConfiguration.WebBotAuthSettings {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["directories", "fetchTimeout", "trustRoots"])
        directories = try c.required("directories"); try c.set(&fetchTimeout, "fetchTimeout"); try c.set(&trustRoots, "trustRoots")
        guard !directories.isEmpty, (1...30).contains(fetchTimeout) else {
            throw SignCoreError(.invalidConfiguration, "configuration: webBotAuth.directories names at least one origin and fetchTimeout is 1-30 seconds")
        }
    }
}

extension GatewayConfiguration.HTTPSignatureSettings {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["coverage", "requiredComponents", "maxAge", "skew", "nonce", "label", "tag", "preset"])
        try c.set(&preset, "preset")
        if let preset {
            guard preset == "webBotAuth" else {
                throw SignCoreError(.invalidConfiguration, "configuration: \(GatewayConfiguration.path(decoder.codingPath)).preset is webBotAuth")
            }
            let bot = HTTPSignaturePolicy.webBotAuth
            (coverage, maxAge, nonce, tag) = (.agent, bot.maxAge, .optional, bot.tag)
        }
        try c.set(&coverage, "coverage"); try c.set(&requiredComponents, "requiredComponents"); try c.set(&maxAge, "maxAge")
        try c.set(&skew, "skew"); try c.set(&nonce, "nonce"); try c.set(&label, "label"); try c.set(&tag, "tag")
    }

    /// The policy, its values checked: ages of 1-86400 s, a skew of 0-3600 s, a label that is a
    /// structured-field key, components that parse (docs/HTTPSIG.md §2.2).
    func policy(member: String) throws(SignCoreError) -> HTTPSignaturePolicy {
        guard (1...86_400).contains(maxAge), (0...3600).contains(skew) else {
            throw SignCoreError(.invalidConfiguration, "configuration: \(member): maxAge is 1-86400 seconds and skew 0-3600")
        }
        if let label, !SignatureFields.isLabel(label) {
            throw SignCoreError(.invalidConfiguration, "configuration: \(member).label is a structured-field key (a-z, 0-9, _ - . *)")
        }
        var components: [ComponentIdentifier] = []
        for written in requiredComponents {
            do {
                components.append(try ComponentIdentifier(written: written))
            } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: \(member).requiredComponents: \(written) is no component identifier")
            }
        }
        return HTTPSignaturePolicy(coverage: coverage == .request ? .request : .agent, requiredComponents: components, maxAge: maxAge,
                                   skew: skew, nonce: nonce == .required ? .required : .optional, label: label, tag: tag)
    }
}

extension GatewayConfiguration.RateLimits {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["buckets", "capacity", "fields"])
        buckets = try c.required("buckets")
        try c.set(&capacity, "capacity"); try c.set(&fields, "fields")
        guard capacity >= 1 else { throw SignCoreError(.invalidConfiguration, "configuration: rateLimits.capacity is at least 1") }
        for name in buckets.keys where !RateBucket.isName(name) {
            throw SignCoreError(.invalidConfiguration, "configuration: rateLimits.buckets names are 1-64 bytes of A-Z a-z 0-9 - _")
        }
    }

    /// The limit of each bucket, checked.
    func limits() throws(SignCoreError) -> [String: RateLimit] {
        var limits: [String: RateLimit] = [:]
        for (name, bucket) in buckets {
            do {
                let bypass = try bucket.bypass.map { (bypass) throws(SignCoreError) in
                    guard bypass.types.allSatisfy({ BypassType.all.map(\.rawValue).contains($0) }) else {
                        throw SignCoreError(.invalidConfiguration, "bypass.types are among " + BypassType.all.map(\.rawValue).joined(separator: ", "))
                    }
                    return try BypassPolicy(types: bypass.types.map { BypassType(rawValue: $0) }, offerTTL: bypass.offerTTL, passTTL: bypass.passTTL,
                                            passLevels: GatewayConfiguration.levels(bypass.passLevels, member: "bypass.passLevels"),
                                            difficulty: bypass.difficulty, count: bypass.count)
                }
                limits[name] = try RateLimit(bucket: name, quota: bucket.quota, window: bucket.window, burst: bucket.burst,
                                             key: bucket.key, bypass: bypass)
            } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: rateLimits.buckets.\(name): \(error.detail)")
            }
        }
        return limits
    }
}

extension GatewayConfiguration.Bucket {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["quota", "window", "burst", "key", "bypass"])
        quota = try c.required("quota"); window = try c.required("window")
        burst = try c.decodeIfPresent(Int.self, forKey: AnyKey(stringValue: "burst"))
        try c.set(&key, "key")
        bypass = try c.decodeIfPresent(GatewayConfiguration.Bypass.self, forKey: AnyKey(stringValue: "bypass"))
    }
}

extension GatewayConfiguration.Bypass {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["types", "offerTTL", "passTTL", "passLevels", "difficulty", "count"])
        try c.set(&types, "types"); try c.set(&offerTTL, "offerTTL"); try c.set(&passTTL, "passTTL"); try c.set(&passLevels, "passLevels")
        try c.set(&difficulty, "difficulty"); try c.set(&count, "count")
    }
}

extension GatewayConfiguration.BypassFields {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["type", "response", "siteKey", "keyId"])
        try c.set(&type, "type"); try c.set(&response, "response"); try c.set(&siteKey, "siteKey"); try c.set(&keyId, "keyId")
    }
}

extension GatewayConfiguration.Body {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["mode", "limit"])
        try c.set(&mode, "mode"); try c.set(&limit, "limit")
        guard limit >= 0 else { throw SignCoreError(.invalidConfiguration, "configuration: body.limit is 0 or more bytes") }
    }
}

extension GatewayConfiguration.RouteBody {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["mode", "limit"])
        mode = try c.decodeIfPresent(GatewayConfiguration.BodyMode.self, forKey: AnyKey(stringValue: "mode"))
        limit = try c.decodeIfPresent(Int64.self, forKey: AnyKey(stringValue: "limit"))
        if let limit, limit < 0 {
            throw SignCoreError(.invalidConfiguration, "configuration: \(GatewayConfiguration.path(decoder.codingPath)).limit is 0 or more bytes")
        }
    }
}

extension GatewayConfiguration.HeaderNames {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["whash", "wtoken"])
        try c.set(&whash, "whash"); try c.set(&wtoken, "wtoken")
    }
}

extension GatewayConfiguration.IdentityHeaders {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["keyID", "account", "algorithm", "verdict", "attestation"])
        try c.set(&keyID, "keyID"); try c.set(&account, "account"); try c.set(&algorithm, "algorithm"); try c.set(&verdict, "verdict")
        try c.set(&attestation, "attestation")
    }
}

extension GatewayConfiguration.Attestation {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["keys", "challenges", "challengeField", "tokenField", "endpoint", "skew", "tokenTTL", "store", "table",
                                     "capacity", "devices"])
        keys = try c.required("keys"); challenges = try c.required("challenges")
        try c.set(&challengeField, "challengeField"); try c.set(&tokenField, "tokenField"); try c.set(&endpoint, "endpoint")
        try c.set(&skew, "skew"); try c.set(&tokenTTL, "tokenTTL"); try c.set(&store, "store"); try c.set(&table, "table")
        try c.set(&capacity, "capacity")
        devices = try c.decodeIfPresent(GatewayConfiguration.Devices.self, forKey: AnyKey(stringValue: "devices"))
        func refuse(_ member: String, _ allowed: String) -> SignCoreError {
            SignCoreError(.invalidConfiguration, "configuration: attestation.\(member) is \(allowed)")
        }
        guard !challenges.isEmpty else { throw refuse("challenges", "at least one challenge") }
        guard Attestor.skews ~= skew else { throw refuse("skew", "0 to 60000 milliseconds") }
        guard AttestationToken.ttls ~= tokenTTL else { throw refuse("tokenTTL", "1 to 86400 seconds") }
        guard capacity >= 1 else { throw refuse("capacity", "at least 1") }
        guard endpoint.hasPrefix("/"), (try? ServerOrigin.validate(target: endpoint)) != nil, !endpoint.contains("?") else {
            throw refuse("endpoint", "an absolute path (starting with /, no query)")
        }
    }
}

extension GatewayConfiguration.Devices {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["formats", "appIds", "registrationTTL", "platformLevels", "endpoint", "counterField", "store", "table",
                                     "capacity", "cacheCapacity", "appAttest", "playIntegrity"])
        appIds = try c.required("appIds")
        try c.set(&formats, "formats"); try c.set(&registrationTTL, "registrationTTL"); try c.set(&platformLevels, "platformLevels")
        try c.set(&endpoint, "endpoint"); try c.set(&counterField, "counterField"); try c.set(&store, "store"); try c.set(&table, "table")
        try c.set(&capacity, "capacity"); try c.set(&cacheCapacity, "cacheCapacity"); try c.set(&appAttest, "appAttest")
        playIntegrity = try c.decodeIfPresent(GatewayConfiguration.PlayIntegrity.self, forKey: AnyKey(stringValue: "playIntegrity"))
        func refuse(_ member: String, _ allowed: String) -> SignCoreError {
            SignCoreError(.invalidConfiguration, "configuration: attestation.devices.\(member) is \(allowed)")
        }
        guard !formats.isEmpty, formats.allSatisfy({ DeviceFormat.all.map(\.rawValue).contains($0) }) else {
            throw refuse("formats", "one or more of " + DeviceFormat.all.map(\.rawValue).joined(separator: ", "))
        }
        guard capacity >= 1, cacheCapacity >= 1 else { throw refuse("capacity", "at least 1, and so is cacheCapacity") }
        guard endpoint.hasPrefix("/"), (try? ServerOrigin.validate(target: endpoint)) != nil, !endpoint.contains("?") else {
            throw refuse("endpoint", "an absolute path (starting with /, no query)")
        }
    }

    /// The policy every node applies (`invalidConfiguration` for values out of range).
    func policy() throws(SignCoreError) -> DevicePolicy {
        do {
            return try DevicePolicy(formats: Set(formats.map(DeviceFormat.init(rawValue:))), appIDs: appIds, registrationTTL: registrationTTL,
                                    platformLevels: try GatewayConfiguration.levels(platformLevels, member: "attestation.devices.platformLevels"),
                                    verifiers: try verifiers())
        } catch {
            throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices: \(error.detail)")
        }
    }
}

extension GatewayConfiguration.Devices {
    /// The verifiers of the platform formats accepted.
    func verifiers() throws(SignCoreError) -> [any PlatformVerifier] {
        var verifiers: [any PlatformVerifier] = []
        if formats.contains(DeviceFormat.appleAppAttest.rawValue) { verifiers.append(try appAttest.verifier()) }
        if formats.contains(DeviceFormat.androidPlayIntegrity.rawValue) {
            guard let playIntegrity else {
                throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.playIntegrity is needed for android-play-integrity")
            }
            do {
                verifiers.append(try PlayIntegrityVerifier(decryptionKeyFile: playIntegrity.decryptionKeyFile,
                                                           verificationKeyFile: playIntegrity.verificationKeyFile,
                                                           certificateDigests: Set(playIntegrity.certificateDigests),
                                                           appVerdicts: Set(playIntegrity.appVerdicts), deviceVerdict: playIntegrity.deviceVerdict))
            } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.playIntegrity: \(error.detail)")
            }
        }
        return verifiers
    }
}

extension GatewayConfiguration.PlayIntegrity {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["decryptionKeyFile", "verificationKeyFile", "certificateDigests", "appVerdicts", "deviceVerdict"])
        decryptionKeyFile = try c.required("decryptionKeyFile"); verificationKeyFile = try c.required("verificationKeyFile")
        try c.set(&certificateDigests, "certificateDigests"); try c.set(&appVerdicts, "appVerdicts"); try c.set(&deviceVerdict, "deviceVerdict")
    }
}

extension GatewayConfiguration.AppAttest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["roots", "environments"])
        try c.set(&roots, "roots"); try c.set(&environments, "environments")
    }

    func verifier() throws(SignCoreError) -> AppAttestVerifier {
        var chosen = Set<AppAttestVerifier.Environment>()
        for name in environments {
            guard let environment = AppAttestVerifier.Environment(rawValue: name) else {
                throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.appAttest.environments are production and development")
            }
            chosen.insert(environment)
        }
        guard !chosen.isEmpty else { throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.appAttest.environments is not empty") }
        var certificates: [Certificate] = []
        for path in roots {
            do {
                certificates.append(try Certificate(pemEncoded: String(contentsOfFile: path, encoding: .utf8)))
            } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.appAttest.roots: \(path) is not a PEM certificate")
            }
        }
        return AppAttestVerifier(roots: certificates.isEmpty ? [AppAttestVerifier.appleRoot] : certificates, environments: chosen)
    }
}

extension GatewayConfiguration.Challenge {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["kind", "levels", "difficulty", "count", "ttl", "minElapsed"])
        levels = try c.required("levels")
        try c.set(&kind, "kind")
        try c.set(&difficulty, "difficulty"); try c.set(&count, "count"); try c.set(&ttl, "ttl"); try c.set(&minElapsed, "minElapsed")
    }
}

extension GatewayConfiguration.RouteAttestation {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.members(["mode", "levels"])
        mode = try c.required("mode")
        try c.set(&levels, "levels")
    }
}

extension GatewayConfiguration {
    /// Levels (0-15) as a set; `member` names them in the refusal.
    static func levels(_ numbers: [Int], member: String) throws(SignCoreError) -> AttestationLevels {
        var levels = AttestationLevels()
        for number in numbers {
            guard (0..<16).contains(number) else { throw SignCoreError(.invalidConfiguration, "configuration: \(member) are levels 0 to 15") }
            levels.insert(.level(number))
        }
        return levels
    }
}
