import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
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
