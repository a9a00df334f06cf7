import Foundation
import HTTPTypes
@_spi(SignCoreTools) import SignCore
import SignHTTP
@testable import SignHTTPSignatures
import Testing

/// Two-way interop with an independent RFC 9421 implementation: PyPI's http-message-signatures
/// 3.0.0 (Fixtures/python_peer.py; Content-Digest there from hashlib and http-sfv). For each
/// algorithm, a GET and a POST with Content-Digest: SignCore signs → Python verifies, Python
/// signs → SignCore verifies; and a tampered request of each direction is refused by the other side.
@Suite(.serialized) struct PythonInteropTests {
    static let peer = AppendixBTests.fixtures.appendingPathComponent("python_peer.py")

    /// Runs the peer with `mode`, `input` on its standard input; its standard output as JSON.
    static func run(_ mode: String, _ input: Any? = nil) throws -> Any {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", peer.path, mode]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        if let input { stdin.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: input)) }
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SignCoreError(.invalidConfiguration, "python_peer.py \(mode) failed: " + String(decoding: errors.suffix(800), as: UTF8.self))
        }
        return try JSONSerialization.jsonObject(with: output)
    }

    struct Peer {
        let keys: [String: [String: String]]
        let signing: [SigningKey]
        let verifier: Verifier

        init() throws {
            guard let keys = try PythonInteropTests.run("keys") as? [String: [String: String]] else {
                throw SignCoreError(.invalidConfiguration, "python_peer.py keys printed no keys")
            }
            func raw(_ id: String, _ field: String) throws -> [UInt8] {
                guard let bytes = Base64URL.decode(keys[id]?[field] ?? "") else { throw SignCoreError(.invalidKey, "a key from the peer") }
                return bytes
            }
            let signing = [try SigningKey.hmac(secret: raw("hmac", "secret"), id: "hmac"), try SigningKey.ed25519(seed: raw("ed", "seed"), id: "ed"),
                           try SigningKey.p256(privateKey: raw("p256", "private"), id: "p256")]
            let publicKeys = [signing[0], try SigningKey.ed25519(publicKey: raw("ed", "public"), id: "ed"),
                              try SigningKey.p256(publicKey: raw("p256", "public"), id: "p256")]
            self.keys = keys
            self.signing = signing
            verifier = try Verifier(keys: KeySet(publicKeys), replayGuard: InMemoryReplayGuard(capacity: 1000))
        }
    }

    static let body = Array("{\"order\":42,\"items\":[\"a\",\"b\"]}".utf8)

    static func job(_ request: HTTPRequest, body: [UInt8], key: SigningKey) -> [String: Any] {
        var url = "\(request.scheme ?? "https")://\(request.authority ?? "")\(request.path ?? "/")"
        if url.isEmpty { url = "/" }
        return ["method": request.method.rawValue, "url": url, "headers": request.headerFields.map { [$0.name.rawName, $0.value] },
                "body": Base64URL.encode(body), "alg": key.algorithm.httpSignatureName, "key_id": key.id]
    }

    @Test func signCoreSignsAndPythonVerifies() async throws {
        let peer = try Peer()
        var jobs: [[String: Any]] = []
        for key in peer.signing {
            var get = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/items?limit=10&after=x%20y")
            try await MessageSigner(key: key).sign(&get)
            var post = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com:8443", path: "/v1/orders",
                                   headerFields: [.contentType: "application/json"])
            try await MessageSigner(key: key, components: [.method, .targetURI, .authority, try .field("content-type")],
                                    digestAlgorithms: [.sha256, .sha512]).sign(&post, body: Self.body)
            jobs += [Self.job(get, body: [], key: key), Self.job(post, body: Self.body, key: key)]
            // The same POST with another body: Python must refuse it.
            var tampered = Self.job(post, body: Self.body, key: key)
            tampered["body"] = Base64URL.encode(Array("{\"order\":43}".utf8))
            jobs.append(tampered)
        }
        let results = try #require(try Self.run("verify", ["keys": peer.keys, "jobs": jobs]) as? [[String: Any]])
        #expect(results.count == 9)
        for (index, result) in results.enumerated() {
            let tampered = index % 3 == 2
            #expect(result["ok"] as? Bool == !tampered, "\(index): \(result["error"] ?? "")")
            if !tampered {
                // Python saw exactly the components SignCore covered (content-digest on the POST).
                let covered = (result["covered"] as? [[String]])?.first ?? []
                #expect(covered.contains("\"@method\"") && covered.contains("\"@target-uri\"") && covered.last == "\"@signature-params\"")
                #expect(covered.contains("\"content-digest\"") == (index % 3 == 1))
            }
        }
    }

    @Test func pythonSignsAndSignCoreVerifies() async throws {
        let peer = try Peer()
        let now = SystemClock.seconds()
        var jobs: [[String: Any]] = []
        for (index, key) in peer.signing.enumerated() {
            for method in ["GET", "POST"] {
                jobs.append(["method": method, "url": method == "GET" ? "https://api.example.com/v1/items?q=a%2Fb&n=1" : "https://api.example.com/v1/orders",
                             "headers": method == "GET" ? [] : [["Content-Type", "application/json"]],
                             "body": method == "GET" ? "" : Base64URL.encode(Self.body),
                             "alg": key.algorithm.httpSignatureName, "key_id": key.id, "components": ["@method", "@target-uri", "@authority"],
                             "created": now, "nonce": "py-\(index)-\(method)-\(UInt64.random(in: 0 ... .max))", "tag": "interop"])
            }
        }
        let signed = try #require(try Self.run("sign", ["keys": peer.keys, "jobs": jobs]) as? [[String: Any]])
        #expect(signed.count == 6)
        let checker = MessageSignatureVerifier(peer.verifier, policy: HTTPSignaturePolicy(tag: "interop"))
        for message in signed {
            let text = try #require(message["url"] as? String)
            let url = try #require(URL(string: text))
            var fields = HTTPFields()
            for pair in message["headers"] as? [[String]] ?? [] {
                let name = try #require(HTTPField.Name(pair[0]))
                fields.append(HTTPField(name: name, value: pair[1]))
            }
            let path = url.path + (url.query.map { "?" + $0 } ?? "")
            let method = try #require(HTTPRequest.Method(message["method"] as? String ?? ""))
            let request = HTTPRequest(method: method, scheme: "https",
                                      authority: url.host, path: path, headerFields: fields)
            let body = Base64URL.decode(message["body"] as? String ?? "") ?? []
            let identity = try await MessageSignatureVerifierTests.verify(checker, request, body: body)
            #expect(peer.signing.contains { $0.id == identity.keyID })
            #expect(identity.coveredHeaders.contains("content-digest") == !body.isEmpty)
            // The content changed after Python signed: refused; the same request again: replayed.
            if !body.isEmpty {
                let fresh = checker  // the nonce above is recorded: a tampered copy fails before the replay check
                #expect(await MessageSignatureVerifierTests.refusal(fresh, request, body: Array("{}".utf8)) == .contentDigestMismatch)
            }
            #expect(await MessageSignatureVerifierTests.refusal(checker, request, body: body) == .replayed)
        }
    }
}
