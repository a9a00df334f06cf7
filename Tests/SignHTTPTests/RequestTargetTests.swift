import HTTPTypes
import SignCore
import SignHTTP
import Testing

/// The URL a server verifies is exactly the host and target it forwards: a received authority
/// that is not `host[:port]`, a second host, or a target that is not an origin-form path is
/// refused, whatever the signature says.
@Suite struct RequestTargetTests {
    static let key = try! SigningKey.hmac(secret: Array(repeating: 3, count: 32), id: "target-test")

    /// Authorities a client may send: names, IPv4 and IPv6 literals, with and without a port.
    static let goodAuthorities = ["api.example.com", "API.Example.COM", "api.example.com:8443", "localhost", "my_host.internal",
                                  "127.0.0.1", "127.0.0.1:8080", "[::1]", "[::1]:8443", "[2001:db8::1]", "[::ffff:1.2.3.4]", "api.example.com.", "a:1", "a:65535"]

    /// Spellings that end, move or smuggle the authority's boundary, or are no port at all.
    static let badAuthorities: [String] = {
        var bad = ["", ":443", "api.example.com:", "api.example.com:0x1", "api.example.com:99999", "api.example.com:65536",
                   "api.example.com:-1", "api.example.com:+443", "api.example.com:443:443", "api.example.com:123456",
                   "[::1", "[::1]x", "[]", "[::1]:", "[::1]]", "[::1%eth0]", "[v1.x]", "api.example.com]", "[::1]:80:80", "[:]", "[1]", "[.]", "[1::2::3]", "[12345::1]", "a:0", "a:00443", "a:0443",
                   "user@api.example.com", "api.example.com@evil", "api.example.com%2f", "apí.example.com",
                   "api.example.com ", " api.example.com", "api .example.com", String(repeating: "a", count: 300)]
        // Every byte that would end the authority or start something else, at the end and inside.
        for separator in ["#", "/", "?", "\\", "\t", "\r", "\n", "\u{0}", "\u{7f}", ",", ";", "=", "!", "$", "&", "'", "(", "*", "+", "%"] {
            bad += ["api.example.com" + separator, "api.example.com" + separator + "x", "api.example.com:443" + separator,
                    "[::1]" + separator]
        }
        return bad
    }()

    @Test func authoritiesAreHostAndPortOnly() throws {
        for authority in Self.goodAuthorities {
            #expect(throws: Never.self, "\(authority)") { try ServerOrigin.validate(authority: authority) }
        }
        for authority in Self.badAuthorities {
            #expect(throws: SignCoreError.self, "\(authority.debugDescription)") { try ServerOrigin.validate(authority: authority) }
        }
    }

    /// A token signed for `GET https://api.example.com/`, sent for another path with each bad
    /// `Host`: never verified (the canonical URL would have ended the authority at the
    /// separator and dropped the real path).
    @Test func aHostCannotMoveTheSignedPath() async throws {
        let verifier = try Verifier(keys: KeySet([Self.key]), replayGuard: InMemoryReplayGuard(capacity: 10_000, maxShare: 1))
        for authority in Self.badAuthorities {
            for path in ["/admin/delete-all", "/", "/admin?x=1"] {
                let headers = try Signer(key: Self.key).sign(method: .get, url: "https://api.example.com/")
                var request = HTTPRequest(method: .get, scheme: nil, authority: authority, path: path)
                // swift-http-types trims whitespace and controls at the ends of a field value, as
                // a server's parser does: what it keeps is what a server would have received.
                guard request.authority == authority else { continue }
                request.headerFields[HTTPField.Name("whash")!] = headers.whash
                request.headerFields[HTTPField.Name("wtoken")!] = headers.wtoken
                do {
                    let received = try ReceivedRequest(request, origin: ServerOrigin(scheme: "https"))
                    _ = try await verifier.verify(received)
                    Issue.record("accepted with Host \(authority.debugDescription) and path \(path)")
                } catch {
                    #expect(error.code == .invalidURL, "\(authority.debugDescription)")
                }
            }
        }
    }

    @Test func targetsAreOriginFormPaths() throws {
        for target in ["/", "/v1/orders?id=1&q=a%20b", "/a;b=c/..;/d", "/caf%C3%A9", "/a?b"] {
            #expect(throws: Never.self, "\(target)") { try ServerOrigin.validate(target: target) }
        }
        for target in ["", "*", "http://evil.example/x", "admin", "/admin#x", "/#", "/a b", "/a\\b", "/a\tb", "/a\u{7f}", "/a\r\nX: y", "/a\u{0}", "/café", "/a/\u{301}", "/a?\u{301}"] {
            #expect(throws: SignCoreError.self, "\(target.debugDescription)") { try ServerOrigin.validate(target: target) }
        }
    }

    /// One host per request: a second `Host` line (an HTTP/1 adapter leaves it as a field beside
    /// `:authority`), whatever its value, is refused before any verification.
    @Test func aSecondHostIsRefused() throws {
        func code(_ hosts: [String]) -> SignCoreError.Code? {
            var request = HTTPRequest(method: .get, scheme: nil, authority: "api.example.com", path: "/")
            for host in hosts { request.headerFields.append(HTTPField(name: ReceivedRequest.hostField, value: host)) }
            do { _ = try ReceivedRequest(request, origin: ServerOrigin(scheme: "https")) } catch { return error.code }
            return nil
        }
        #expect(code([]) == nil)
        #expect(code(["api.example.com"]) == .invalidHeader)  // RFC 9112 §3.2: the same twice is a 400 too
        #expect(code(["internal-admin.example"]) == .invalidHeader)
        #expect(code(["API.example.com"]) == .invalidHeader)
        #expect(code(["api.example.com", "api.example.com"]) == .invalidHeader)
        #expect(code(["api.example.com", "internal-admin.example"]) == .invalidHeader)
    }
}
