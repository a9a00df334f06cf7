import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
@_spi(SignCoreTools) import SignCore
import SignHTTP
import SignHummingbird
import SignTestSupport
import Testing

/// With the authority taken from the request (`ServerOrigin(scheme:)`), a token is verified for
/// the host and target the handler serves, sent raw as an attacker would: a `Host` that ends the
/// authority early, or a second `Host`, is refused before the handler runs.
@Suite struct HostTests {
    static let key = try! SigningKey.hmac(secret: Array(repeating: 5, count: 32), id: "host-test")

    @Test func aHostCannotMoveTheSignedPath() async throws {
        let verifier = try Verifier(keys: KeySet([Self.key]), replayGuard: InMemoryReplayGuard(capacity: 10_000, maxShare: 1))
        let reached = Locked<[String]>([])
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: ServerOrigin(scheme: "https")))
        for path in ["/", "/admin/delete-all"] {
            router.get(RouterPath(stringLiteral: path)) { request, _ -> String in
                reached.withLock { $0.append(request.uri.path) }
                return "ran"
            }
        }
        try await Application(router: router).test(.live) { client in
            let port = try #require(client.port)
            let headers = try Signer(key: Self.key).sign(method: .get, url: "https://api.example.com/")
            func send(_ target: String, _ hosts: [String]) async throws -> Int? {
                let lines = ["GET \(target) HTTP/1.1"] + hosts.map { "Host: \($0)" }
                    + ["whash: \(headers.whash)", "wtoken: \(headers.wtoken)", "Connection: close", "", ""]
                return statusCode(of: try await rawHTTP(port: port, lines.joined(separator: "\r\n")))
            }
            for host in ["api.example.com#", "api.example.com/", "api.example.com?", "api.example.com#x", "api.example.com:443#",
                         "api.example.com/admin", "x@api.example.com", "api.example.com:"] {
                #expect(try await send("/admin/delete-all", [host]) == 400, "Host \(host)")
            }
            #expect(try await send("/", ["api.example.com", "internal-admin.example"]) == 400)
            #expect(reached.withLock { $0 }.isEmpty)
            #expect(try await send("/", ["api.example.com"]) == 200)  // where it was signed for
        }
        #expect(reached.withLock { $0 } == ["/"])
    }
}
