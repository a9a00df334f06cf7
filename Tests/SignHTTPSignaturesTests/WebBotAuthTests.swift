import Foundation
import HTTPTypes
@_spi(SignCoreTools) import SignCore
import SignHTTP
@testable import SignHTTPSignatures
import Testing

/// Web Bot Auth (docs/HTTPSIG.md §7): `Signature-Agent` in both forms, an agent's signature, its
/// key directory's own signatures, and a verifier that fetches directories only from allowed
/// https origins, a bounded number of times. Real HTTPS fetching is GatewayHTTPSignatureTests'.
@Suite struct WebBotAuthTests {
    static let now: Int64 = 1_790_000_000
    static let agentKey = try! SigningKey.generate(.ed25519)  // known by its thumbprint, as Web Bot Auth keys are
    static let agent = "https://crawler.example"

    @Test func signatureAgentIsReadInBothFormsAndSentAsADictionary() {
        #expect(SignatureAgent.url(in: [SignatureAgent.field: "\"https://a.example\""], label: "sig1") == "https://a.example")
        #expect(SignatureAgent.url(in: [SignatureAgent.field: "sig1=\"https://a.example\", sig2=\"https://b.example\""], label: "sig2")
                == "https://b.example")
        #expect(SignatureAgent.url(in: [SignatureAgent.field: "sig1=\"https://a.example\""], label: "sig2", member: "sig1") == "https://a.example")
        #expect(SignatureAgent.url(in: [SignatureAgent.field: "sig1=\"https://a.example\""], label: "sig2") == nil)
        #expect(SignatureAgent.url(in: [SignatureAgent.field: "https://a.example"], label: "sig1") == nil)  // a token, no string
        #expect(SignatureAgent.url(in: [SignatureAgent.field: "\"" + String(repeating: "a", count: 2100) + "\""], label: "sig1") == nil)
        #expect(SignatureAgent.fieldValue(label: "sig1", url: "https://a.example") == "sig1=\"https://a.example\"")
        #expect(SignatureAgent.origin(of: "https://Crawler.Example:443/bot/info") == "https://crawler.example")
        #expect(SignatureAgent.origin(of: "https://crawler.example:8443") == "https://crawler.example:8443")
        for refused in ["http://crawler.example", "https://user@crawler.example", "ftp://x", "crawler.example", ""] {
            #expect(SignatureAgent.origin(of: refused) == nil, "\(refused)")
        }
    }

    static func agentRequest(agent: String? = WebBotAuthTests.agent, at created: Int64 = now) async throws -> HTTPRequest {
        var request = HTTPRequest(method: .get, scheme: "https", authority: "shop.example.com", path: "/products/42")
        try await WebBotAuth.sign(&request, key: agentKey, agent: agent, clock: { created })
        return request
    }

    @Test func anAgentsSignatureVerifiesUnderWebBotAuthsPolicy() async throws {
        let request = try await Self.agentRequest()
        #expect(request.headerFields[SignatureAgent.field] == "sig1=\"https://crawler.example\"")
        let input = try #require(request.headerFields[SignatureFields.signatureInput])
        #expect(input.hasPrefix("sig1=(\"@authority\" \"signature-agent\";key=\"sig1\");created=\(Self.now);expires=\(Self.now + 60);nonce="))
        #expect(input.hasSuffix(";alg=\"ed25519\";keyid=\"\(Self.agentKey.thumbprint)\";tag=\"web-bot-auth\""))
        let verifier = try Verifier(keys: KeySet([try SigningKey.ed25519(publicKey: Self.agentKey.publicKey)]),
                                    replayGuard: InMemoryReplayGuard(capacity: 100), clock: { Self.now + 5 })
        let checker = MessageSignatureVerifier(verifier, policy: .webBotAuth)
        let identity = try await MessageSignatureVerifierTests.verify(checker, request)
        #expect(identity.format == "rfc9421-agent" && identity.keyID == Self.agentKey.thumbprint.description)
        // The agent's field is covered: another agent named in it breaks the signature.
        var moved = try await Self.agentRequest()
        moved.headerFields[SignatureAgent.field] = "sig1=\"https://other.example\""
        #expect(await MessageSignatureVerifierTests.refusal(checker, moved) == .badSignature)
        // Without covering it while sending it: refused.
        var uncovered = HTTPRequest(method: .get, scheme: "https", authority: "shop.example.com", path: "/",
                                    headerFields: [SignatureAgent.field: "sig1=\"https://crawler.example\""])
        try await MessageSigner(key: Self.agentKey, components: [.authority], tag: WebBotAuth.tag, keyID: Self.agentKey.thumbprint.description,
                                clock: { Self.now }).sign(&uncovered)
        #expect(await MessageSignatureVerifierTests.refusal(checker, uncovered) == .headerNotCovered)
        // A minute's age.
        #expect(await MessageSignatureVerifierTests.refusal(checker, try await Self.agentRequest(at: Self.now - 60)) == .expired)
    }

    /// A directory served in process: what `KeyDirectory.response` gives for the origin asked,
    /// with a count of fetches per origin (the transport under a real verifier; signd's own is
    /// AsyncHTTPClient over TLS, GatewayHTTPSignatureTests).
    final class Directory: KeyDirectoryTransport {
        let keys: [SigningKey]
        let fetches = Locked<[String]>([])
        let fails: Bool
        let servedFor: String?

        init(keys: [SigningKey], fails: Bool = false, servedFor: String? = nil) {
            self.keys = keys
            self.fails = fails
            self.servedFor = servedFor
        }

        func get(_ url: String, limit: Int, timeout: Duration) async throws -> (status: Int, fields: HTTPFields, body: [UInt8]) {
            fetches.withLock { $0.append(url) }
            if fails { throw SignCoreError(.upstreamTimeout, "no answer") }
            let authority = servedFor ?? String(url.dropFirst("https://".count).prefix { $0 != "/" })
            let request = MessageComponents.RequestParts(method: "GET", scheme: "https", authority: authority, target: KeyDirectory.path, fields: [:])
            let (response, body) = try await KeyDirectory.response(keys: keys, request: request, now: WebBotAuthTests.now, lifetime: 600)
            return (response.status.code, response.headerFields, body)
        }
    }

    @Test func aDirectoryProvesOnlyTheKeysThatSignedItForItsOrigin() async throws {
        let other = try SigningKey.generate(.p256)
        let request = MessageComponents.RequestParts(method: "GET", scheme: "https", authority: "crawler.example", target: KeyDirectory.path, fields: [:])
        let (response, body) = try await KeyDirectory.response(keys: [Self.agentKey, other], request: request, now: Self.now)
        #expect(response.headerFields[.contentType] == KeyDirectory.contentType)
        let proven = KeyDirectory.keys(status: 200, fields: response.headerFields, body: body, request: request, now: Self.now)
        #expect(proven.map(\.id) == [Self.agentKey.thumbprint.description, other.thumbprint.description])
        // A key of another kind beside them (RSA here) is skipped, not the directory.
        var withRSA = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        withRSA["keys"] = [["kty": "RSA", "n": "AQAB", "e": "AQAB"]] + (withRSA["keys"] as? [Any] ?? [])
        let mixed = Array(try JSONSerialization.data(withJSONObject: withRSA))
        #expect(KeyDirectory.keys(status: 200, fields: response.headerFields, body: mixed, request: request, now: Self.now).count == 2)
        // A key added to the body on the way signed nothing: not proven.
        let intruder = try SigningKey.generate(.ed25519)
        let padded = Array(try JWK.serialize([Self.agentKey, intruder], includePrivate: false).utf8)
        #expect(KeyDirectory.keys(status: 200, fields: response.headerFields, body: padded, request: request, now: Self.now).map(\.id)
                == [Self.agentKey.thumbprint.description])
        // The same response replayed for another origin, or after its signatures expired: nothing.
        let elsewhere = MessageComponents.RequestParts(method: "GET", scheme: "https", authority: "evil.example", target: KeyDirectory.path, fields: [:])
        #expect(KeyDirectory.keys(status: 200, fields: response.headerFields, body: body, request: elsewhere, now: Self.now).isEmpty)
        #expect(KeyDirectory.keys(status: 200, fields: response.headerFields, body: body, request: request, now: Self.now + 3600 + 31).isEmpty)
        #expect(KeyDirectory.keys(status: 404, fields: response.headerFields, body: body, request: request, now: Self.now).isEmpty)
    }

    static func checker(_ directory: Directory, allowed: [String] = [agent], clock: @escaping @Sendable () -> Int64 = { now + 5 }) throws
        -> MessageSignatureVerifier {
        let verifier = try Verifier(keys: KeySet(), replayGuard: InMemoryReplayGuard(capacity: 100), clock: clock)
        return MessageSignatureVerifier(verifier, policy: .webBotAuth,
                                        directories: try KeyDirectories(allowed: allowed, transport: directory, clock: clock))
    }

    @Test func keysComeFromAllowedDirectoriesOnceAndFailuresAreRemembered() async throws {
        let directory = Directory(keys: [Self.agentKey])
        let checker = try Self.checker(directory)
        for _ in 0..<3 {
            _ = try await MessageSignatureVerifierTests.verify(checker, try await Self.agentRequest())
        }
        #expect(directory.fetches.withLock { $0 } == ["https://crawler.example/.well-known/http-message-signatures-directory"])
        // A key the directory does not hold.
        var stranger = HTTPRequest(method: .get, scheme: "https", authority: "shop.example.com", path: "/")
        try await WebBotAuth.sign(&stranger, key: try SigningKey.generate(.ed25519), agent: Self.agent, clock: { Self.now })
        #expect(await MessageSignatureVerifierTests.refusal(checker, stranger) == .unknownKey)
        // A directory that cannot be had: refused 503, and not fetched again within the minute.
        let down = Directory(keys: [Self.agentKey], fails: true)
        let failing = try Self.checker(down)
        #expect(await MessageSignatureVerifierTests.refusal(failing, try await Self.agentRequest()) == .keyDirectoryUnavailable)
        #expect(await MessageSignatureVerifierTests.refusal(failing, try await Self.agentRequest()) == .keyDirectoryUnavailable)
        #expect(down.fetches.withLock { $0.count } == 1)
        // A directory whose signatures were made for another origin proves nothing.
        let misdirected = try Self.checker(Directory(keys: [Self.agentKey], servedFor: "elsewhere.example"))
        #expect(await MessageSignatureVerifierTests.refusal(misdirected, try await Self.agentRequest()) == .keyDirectoryUnavailable)
    }

    /// A client-named URL fetched by a server is a request forgery: only allowed https origins
    /// are ever fetched, whatever a request names.
    @Test func noAgentOutsideTheAllowListIsEverFetched() async throws {
        let directory = Directory(keys: [Self.agentKey])
        let checker = try Self.checker(directory)
        for agent in ["https://127.0.0.1", "https://127.0.0.1:8443", "http://crawler.example", "https://crawler.example.evil.test",
                      "https://localhost", "https://[::1]", "https://crawler.example@127.0.0.1", "file:///etc/passwd"] {
            #expect(await MessageSignatureVerifierTests.refusal(checker, try await Self.agentRequest(agent: agent)) == .signatureAgentRefused,
                    "\(agent)")
        }
        #expect(directory.fetches.withLock { $0 }.isEmpty)
        // No Signature-Agent at all: nothing to fetch, the key is unknown.
        #expect(await MessageSignatureVerifierTests.refusal(checker, try await Self.agentRequest(agent: nil)) == .unknownKey)
        // Request coverage never fetches, even with a directory configured.
        let strict = MessageSignatureVerifier(checker.verifier, policy: HTTPSignaturePolicy(), directories: checker.directories)
        #expect(await MessageSignatureVerifierTests.refusal(strict, try await Self.agentRequest()) == .unknownKey)
        #expect(directory.fetches.withLock { $0 }.isEmpty)
        // The allow-list itself holds https origins only.
        for entry in ["http://a.example", "https://a.example/path", "a.example", "https://u@a.example"] {
            #expect(throws: SignCoreError.self, "\(entry)") { _ = try KeyDirectories(allowed: [entry], transport: directory) }
        }
    }
}
