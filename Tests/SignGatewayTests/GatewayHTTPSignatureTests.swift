import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOSSL
@_spi(SignCoreTools) import SignCore
import SignHTTP
import SignHTTPSignatures
@testable import SignGateway
import Testing

/// RFC 9421 through signd (docs/HTTPSIG.md, docs/SIGND.md "RFC 9421"): routes read the formats
/// their configuration names; what is accepted arrives at a real upstream with its identity, what
/// is refused never arrives; the body the upstream receives is the one whose Content-Digest was signed.
@Suite(.serialized) struct GatewayHTTPSignatureTests {
    static let key = GatewayTests.key

    static func configuration(_ upstream: Int, _ keys: String) -> String {
        GatewayTests.configuration(upstream: upstream, keys: keys, [
            "policy": [
                "routes": [
                    ["route": "/rfc/**", "signature": "require", "formats": ["httpSignature"]],
                    ["route": "/both/**", "signature": "require", "formats": ["wtoken", "httpSignature"],
                     "httpSignature": ["requiredComponents": ["content-type"], "tag": "app", "maxAge": 60]],
                    ["route": "/bots/**", "signature": "require", "formats": ["httpSignature"], "httpSignature": ["preset": "webBotAuth"]],
                ],
            ],
            "body": ["mode": "streamed", "limit": 1 << 22],
        ])
    }

    /// Sends a request signed with RFC 9421 for `http://gateway.test` + `path`.
    static func send(_ http: HTTPClient, port: Int, _ path: String, method: HTTPRequest.Method = .get, body: [UInt8] = [],
                     sentBody: [UInt8]? = nil, fields: HTTPFields = [:], configure: (inout MessageSigner) -> Void = { _ in }) async throws
        -> (status: UInt, code: Int?, fields: HTTPHeaders, signed: HTTPFields) {
        var signedRequest = HTTPRequest(method: method, scheme: "http", authority: "gateway.test", path: path, headerFields: fields)
        var signer = MessageSigner(key: key)
        configure(&signer)
        try await signer.sign(&signedRequest, body: body)
        return try await send(http, port: port, path, method: method, fields: signedRequest.headerFields, body: sentBody ?? body)
    }

    static func send(_ http: HTTPClient, port: Int, _ path: String, method: HTTPRequest.Method = .get, fields: HTTPFields, body: [UInt8] = [])
        async throws -> (status: UInt, code: Int?, fields: HTTPHeaders, signed: HTTPFields) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
        request.method = HTTPMethod(rawValue: method.rawValue)
        request.headers.add(name: "host", value: "gateway.test")
        for field in fields { request.headers.add(name: field.name.rawName, value: field.value) }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await http.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        let code = response.headers["signcore-error"].first.flatMap { $0.split(separator: "code=").last?.prefix { $0.isNumber } }.flatMap { Int($0) }
        return (response.status.code, code, response.headers, fields)
    }

    @Test func acceptedRequestsArriveWithIdentityAndRefusedOnesNever() async throws {
        let upstream = try await withSignd({ Self.configuration($0, $1) }) { port, http in
            // GET and POST (Content-Digest, streamed to the upstream), each verified once.
            let get = try await Self.send(http, port: port, "/rfc/items?limit=5")
            #expect(get.status == 200)
            let body = Array(String(repeating: "{\"line\":1}\n", count: 20_000).utf8)
            #expect(try await Self.send(http, port: port, "/rfc/upload", method: .post, body: body).status == 200)
            // The same GET again: replayed; never forwarded.
            let replay = try await Self.send(http, port: port, "/rfc/items?limit=5", fields: get.signed)
            #expect(replay.status == 401 && replay.code == SignCoreError.Code.replayed.rawValue)
            // Another path, another body, another method under a valid signature: refused.
            let moved = try await Self.send(http, port: port, "/rfc/admin", fields: try await Self.signed("/rfc/items"))
            #expect(moved.code == SignCoreError.Code.badSignature.rawValue)
            var other = body
            other[other.count - 2] ^= 1
            let tampered = try await Self.send(http, port: port, "/rfc/upload", method: .post, body: body, sentBody: other)
            #expect(tampered.status == 401 && tampered.code == SignCoreError.Code.contentDigestMismatch.rawValue)
            // A wtoken on an RFC 9421 route proves nothing there; an RFC 9421 signature on the
            // default (wtoken) routes neither.
            let wtoken = try Signer(key: Self.key).sign(method: .get, url: "http://gateway.test/rfc/items")
            let ignored = try await Self.send(http, port: port, "/rfc/items", fields: [HTTPField.Name("whash")!: wtoken.whash,
                                                                                       HTTPField.Name("wtoken")!: wtoken.wtoken])
            #expect(ignored.code == SignCoreError.Code.signatureNotFound.rawValue)
            #expect(ignored.fields["accept-signature"].first == "sig1=(\"@method\" \"@target-uri\");created;nonce;keyid")
            #expect(try await Self.send(http, port: port, "/other").code == SignCoreError.Code.missingHeader.rawValue)
            // A route's own policy: its tag and required component.
            #expect(try await Self.send(http, port: port, "/both/x", fields: [.contentType: "text/plain"]) { $0.tag = "app" }.code
                    == SignCoreError.Code.headerNotCovered.rawValue)
            #expect(try await Self.send(http, port: port, "/both/x", fields: [.contentType: "text/plain"]) {
                $0.tag = "app"
                $0.components.append(try! .field("content-type"))
            }.status == 200)
            // Web Bot Auth's coverage: @authority and the tag, no nonce needed.
            #expect(try await Self.send(http, port: port, "/bots/page") {
                $0.components = [.authority]
                $0.tag = "web-bot-auth"
                $0.nonce = false
            }.status == 200)
            #expect(try await Self.send(http, port: port, "/bots/page") { $0.components = [.authority] }.code
                    == SignCoreError.Code.signatureNotFound.rawValue)
        }
        // The tampered upload streamed on (docs/SIGND.md, body) but never arrived whole: its last chunk was held.
        let paths = upstream.all.map(\.path)
        #expect(paths == ["/rfc/items", "/rfc/upload", "/rfc/upload", "/both/x", "/bots/page"])
        let uploads = upstream.all.filter { $0.path == "/rfc/upload" }
        #expect(uploads.first?.complete == true && uploads.first?.bodyBytes == 20_000 * 11)
        #expect(uploads.last?.complete == false && (uploads.last?.bodyBytes ?? .max) < 20_000 * 11)
        #expect(upstream.all.allSatisfy { $0.keyID == "gw-key" })
    }

    static func signed(_ path: String) async throws -> HTTPFields {
        var request = HTTPRequest(method: .get, scheme: "http", authority: "gateway.test", path: path)
        try await MessageSigner(key: key).sign(&request)
        return request.headerFields
    }

    /// Web Bot Auth through signd: an agent's key fetched over real TLS from its directory (a
    /// server on loopback with a test authority), once; an agent outside the allow-list (here
    /// 127.0.0.1 itself) makes signd fetch nothing.
    @Test func webBotAuthKeysComeFromAllowedDirectoriesOverTLS() async throws {
        let folder = try TemporaryFolder()
        let (certificate, privateKey, _) = try UpstreamClientTests.makeCertificate(in: folder.path, name: "localhost")
        let tls = try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(privateKey)))
        let agentKey = try SigningKey.generate(.ed25519)
        let directory = RawUpstream()
        let served = Locked(0)
        try await directory.run(tls: tls, serve: { _, inbound, outbound in
            try await RawUpstream.eachHead(inbound) { head in
                served.withLock { $0 += 1 }
                let authority = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("host:") }.map { String($0.dropFirst(5)).trimmingCharacters(in: .whitespaces) } ?? ""
                let request = MessageComponents.RequestParts(method: "GET", scheme: "https", authority: authority, target: KeyDirectory.path, fields: [:])
                let (response, body) = try await KeyDirectory.response(keys: [agentKey], request: request)
                var text = "HTTP/1.1 200 OK\r\ncontent-length: \(body.count)\r\n"
                for field in response.headerFields { text += "\(field.name.rawName): \(field.value)\r\n" }
                try await outbound.write(ByteBuffer(string: text + "\r\n" + String(decoding: body, as: UTF8.self)))
                return true
            }
        }) { directoryPort in
            let agent = "https://localhost:\(directoryPort)"
            let upstream = try await withSignd({ upstreamPort, keys in
                GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                    "policy": ["routes": [["route": "/bots/**", "signature": "require", "formats": ["httpSignature"],
                                           "httpSignature": ["preset": "webBotAuth"]]]],
                    "webBotAuth": ["directories": [agent], "fetchTimeout": 3, "trustRoots": folder.path + "/ca.pem"],
                ])
            }) { port, http in
                let send = { @Sendable (agentURL: String?, key: SigningKey) async throws -> (status: UInt, code: Int?) in
                    var request = HTTPRequest(method: .get, scheme: "http", authority: "gateway.test", path: "/bots/page")
                    try await WebBotAuth.sign(&request, key: key, agent: agentURL)
                    let reply = try await Self.send(http, port: port, "/bots/page", fields: request.headerFields)
                    return (reply.status, reply.code)
                }
                let first = try await send(agent, agentKey), second = try await send(agent, agentKey)
                #expect(first.status == 200 && second.status == 200)
                #expect(served.withLock { $0 } == 1)
                // A key the directory does not prove.
                let stranger = try await send(agent, try SigningKey.generate(.ed25519))
                #expect(stranger.code == SignCoreError.Code.unknownKey.rawValue)
                // Request forgery: the same server named another way, or plain http: refused, nothing fetched.
                let connections = directory.accepted.withLock { $0 }
                for other in ["https://127.0.0.1:\(directoryPort)", "http://localhost:\(directoryPort)", "https://localhost:1"] {
                    let refused = try await send(other, agentKey)
                    #expect(refused.code == SignCoreError.Code.signatureAgentRefused.rawValue, "\(other)")
                }
                #expect(directory.accepted.withLock { $0 } == connections && served.withLock { $0 } == 1)
            }
            #expect(upstream.all.count == 2)
        }
    }

    @Test func aConfigurationThatCannotBeReadIsRefused() throws {
        for (policy, fragment) in [(["formats": []] as [String: Any], "formats"), (["formats": ["jwt"]], "formats"),
                                   (["httpSignature": ["maxAge": 0]], "maxAge"), (["httpSignature": ["label": "Sig"]], "label"),
                                   (["httpSignature": ["requiredComponents": ["@nonsense"]]], "requiredComponents"),
                                   (["httpSignature": ["preset": "other"]], "preset"), (["httpSignature": ["unknown": 1]], "unknown")] {
            let json = GatewayTests.configuration(upstream: 1, keys: "/dev/null", ["policy": policy])
            do {
                let configuration = try JSONDecoder().decode(GatewayConfiguration.self, from: Data(json.utf8))
                _ = try GatewayRoutes(configuration: configuration)
                Issue.record("accepted \(policy)")
            } catch {
                #expect("\(error)".contains(fragment), "\(policy): \(error)")
            }
        }
    }
}
