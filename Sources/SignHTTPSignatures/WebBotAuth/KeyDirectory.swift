import Foundation
import HTTPTypes
@_spi(SignCoreTools) import SignCore

/// An agent's key directory (docs/HTTPSIG.md §7.2; draft-meunier-http-message-signatures-directory):
/// a JWK Set at `/.well-known/http-message-signatures-directory`, its response signed by each of
/// its keys over `"@authority";req` with the tag `http-message-signatures-directory`, so a
/// directory cannot be replayed from another origin or altered on the way.
public enum KeyDirectory {
    public static let path = "/.well-known/http-message-signatures-directory"
    public static let contentType = "application/http-message-signatures-directory+json"
    public static let tag = "http-message-signatures-directory"
    /// The most keys read from one directory, and the longest directory read.
    public static let maxKeys = 16
    public static let maxBytes = 64 << 10

    /// The directory's response to `request` (its authority is what the signatures bind): the
    /// public JWK Set of `keys` (Ed25519 or P-256, each known by its thumbprint), signed by each
    /// under the label `binding<i>`, valid `lifetime` seconds from `now`.
    public static func response(keys: [SigningKey], request: MessageComponents.RequestParts, now: Int64 = SystemClock.seconds(),
                                lifetime: Int64 = 3600) async throws(SignCoreError) -> (response: HTTPResponse, body: [UInt8]) {
        guard !keys.isEmpty, keys.count <= maxKeys, keys.allSatisfy({ $0.algorithm != .hmacSHA256 }) else {
            throw SignCoreError(.invalidConfiguration, "a key directory holds 1-16 Ed25519 or P-256 keys")
        }
        let body = Array(try JWK.serialize(keys, includePrivate: false).utf8)
        var fields: HTTPFields = [.contentType: contentType, .cacheControl: "max-age=\(min(lifetime, 86_400))"]
        let bound = try ComponentIdentifier("@authority", request: true)
        for (index, key) in keys.enumerated() {
            let signer = MessageSigner(key: key, components: [bound], label: "binding\(index)", tag: tag, keyID: key.thumbprint.description,
                                       lifetime: lifetime, clock: { now })
            try await signer.signResponse(status: 200, fields: &fields, request: request)
        }
        return (HTTPResponse(status: .ok, headerFields: fields), body)
    }

    /// The keys of a directory response fetched by `request`: each Ed25519 or P-256 key of the
    /// JWK Set (at most 16; HMAC keys and keys that do not parse are skipped) that signed the
    /// response as `response` says, at `now` within `skew`. A key that did not sign it is not
    /// returned: a directory proves only the keys that prove themselves. Each key's id is its thumbprint.
    public static func keys(status: Int, fields: HTTPFields, body: [UInt8], request: MessageComponents.RequestParts, now: Int64,
                            skew: Int64 = 30) -> [SigningKey] {
        // Each key parsed on its own: a key of another kind (RSA, X25519, `use: enc`) is skipped, not the directory.
        guard status == 200, body.count <= maxBytes, let document = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let members = document["keys"] as? [Any] else { return [] }
        let parsed = members.prefix(maxKeys).compactMap { member -> SigningKey? in
            guard let json = try? JSONSerialization.data(withJSONObject: member) else { return nil }
            return try? JWK.parseKey(String(decoding: json, as: UTF8.self))
        }
        let candidates = parsed.compactMap { key -> SigningKey? in
            switch key.algorithm {
            case .ed25519: try? SigningKey.ed25519(publicKey: key.publicKey)
            case .p256: try? SigningKey.p256(publicKey: key.publicKey)
            case .hmacSHA256: nil
            }
        }
        guard let signatures = try? SignatureFields(fields) else { return [] }
        let message = MessageComponents(status: status, fields: fields, request: request)
        return candidates.filter { key in
            signatures.entries.contains { entry in
                let parameters = entry.parameters
                guard parameters.tag == tag, parameters.keyID == key.id, let signature = entry.signature,
                      parameters.components.contains(where: { $0.name == "@authority" && $0.request }),
                      let created = parameters.created, created <= now + skew, parameters.expires.map({ now <= $0 + skew }) ?? false,
                      let base = try? SignatureBase.make(parameters, message: message) else { return false }
                return key.isValidSignature(signature, forBase: base)
            }
        }
    }
}

/// How a verifier fetches a key directory (an HTTPS client of the deployment's: signd's is
/// AsyncHTTPClient with redirects off). It must follow no redirect, stop reading past `limit`
/// bytes and give up after `timeout`.
public protocol KeyDirectoryTransport: Sendable {
    func get(_ url: String, limit: Int, timeout: Duration) async throws -> (status: Int, fields: HTTPFields, body: [UInt8])
}

/// The key directories of the agents a verifier trusts (docs/HTTPSIG.md §7.3): fetched only
/// from the origins of an allow-list, over https only, at most `maxBytes` in `timeout`, and kept
/// for the response's `max-age` (60 s to 1 day; 1 hour when it sets none); a failure is kept 60
/// s, so no client can make the verifier fetch again and again. Concurrent look-ups of one
/// origin share one fetch.
public final class KeyDirectories: Sendable {
    public let allowed: Set<String>
    public let timeout: Duration
    let transport: any KeyDirectoryTransport
    let clock: @Sendable () -> Int64
    private let entries = Locked<[String: Entry]>([:])
    /// The keys each origin last proved (one entry per allowed origin at most).
    private let previous = Locked<[String: [SigningKey]]>([:])

    enum Entry {
        case fetched(keys: [SigningKey], until: Int64)
        case failed(until: Int64)
        case fetching(Task<[SigningKey]?, Never>)
    }

    /// - Parameter allowed: origins (`https://host[:port]`) whose directories may be fetched;
    ///   anything else is refused `invalidConfiguration`.
    public init(allowed: [String], transport: any KeyDirectoryTransport, timeout: Duration = .seconds(5),
                clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) throws(SignCoreError) {
        var origins = Set<String>()
        for entry in allowed {
            guard let origin = SignatureAgent.origin(of: entry), origin == entry.lowercased() || origin + "/" == entry.lowercased() else {
                throw SignCoreError(.invalidConfiguration, "a key directory origin is https://host[:port]")
            }
            origins.insert(origin)
        }
        self.allowed = origins
        self.transport = transport
        self.timeout = timeout
        self.clock = clock
    }

    /// The key with thumbprint `keyID` from the directory of the agent at `agentURL`.
    /// `signatureAgentRefused` for an agent that is not https or not allowed (nothing is fetched);
    /// `keyDirectoryUnavailable` when its directory cannot be had (now, or in the last minute);
    /// `unknownKey` when the directory does not prove that key.
    public func key(_ keyID: String, agentURL: String) async throws(SignCoreError) -> SigningKey {
        guard let origin = SignatureAgent.origin(of: agentURL), allowed.contains(origin) else {
            throw SignCoreError(.signatureAgentRefused, "the Signature-Agent is not an https origin this server fetches keys from")
        }
        guard let keys = await directory(of: origin) else {
            throw SignCoreError(.keyDirectoryUnavailable, "the agent's key directory could not be fetched")
        }
        guard let key = keys.first(where: { $0.id == keyID }) else {
            throw SignCoreError(.unknownKey, "the agent's key directory does not prove the signature's keyid")
        }
        return key
    }

    /// The directory's proven keys, from the cache or one shared fetch; nil when it failed.
    func directory(of origin: String) async -> [SigningKey]? {
        let now = clock()
        let task: Task<[SigningKey]?, Never> = entries.withLock { entries in
            switch entries[origin] {
            case .fetched(let keys, let until) where now < until: return Task { keys }
            case .failed(let until) where now < until: return Task { nil }
            case .fetching(let task): return task
            default:
                let task = Task { await self.fetch(origin) }
                entries[origin] = .fetching(task)
                return task
            }
        }
        return await task.value
    }

    private func fetch(_ origin: String) async -> [SigningKey]? {
        let url = origin + KeyDirectory.path
        let authority = String(origin.dropFirst("https://".count))
        let request = MessageComponents.RequestParts(method: "GET", scheme: "https", authority: authority, target: KeyDirectory.path, fields: [:])
        var keys: [SigningKey]?
        var lifetime: Int64 = 60
        if let (status, fields, body) = try? await transport.get(url, limit: KeyDirectory.maxBytes, timeout: timeout) {
            let proven = KeyDirectory.keys(status: status, fields: fields, body: body, request: request, now: clock())
            if !proven.isEmpty {
                keys = proven
                lifetime = Self.maxAge(fields) ?? 3600
            }
        }
        let until = clock() + lifetime
        return entries.withLock { entries in
            // A failed refetch keeps the keys last proven for one more minute (the directory may be back by then).
            if keys == nil, case .fetching = entries[origin], let kept = previous.withLock({ $0[origin] }) {
                entries[origin] = .fetched(keys: kept, until: until)
                return kept
            }
            entries[origin] = keys.map { Entry.fetched(keys: $0, until: until) } ?? Entry.failed(until: until)
            if let keys { previous.withLock { $0[origin] = keys } }
            return keys
        }
    }

    /// `Cache-Control: max-age`, held to 60 s - 1 day.
    static func maxAge(_ fields: HTTPFields) -> Int64? {
        guard let value = fields[.cacheControl] else { return nil }
        for directive in value.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0].lowercased() == "max-age", let seconds = Int64(parts[1]) { return min(max(seconds, 60), 86_400) }
        }
        return nil
    }
}
