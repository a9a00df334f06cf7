import AsyncHTTPClient
import Foundation
import HTTPTypes
import InMemoryLogging
import Logging
import NIOCore
import SignAsyncHTTPClient
import SignHTTP
@_spi(SignCoreTools) import SignCore
@testable import SignGateway
import SignTestSupport
import Testing

/// What an operator runs signd with: the client's address behind trusted proxies, metrics,
/// readiness and the access log.
@Suite(.serialized) struct GatewayOperationsTests {
    /// The client address found behind proxies: only a trusted peer's list is read, only the
    /// field the proxies write, from the right, up to the first address that is not a trusted proxy.
    @Test(arguments: [
        // (peer, field read, Forwarded, X-Forwarded-For, expected chain)
        ("203.0.113.5", "x-forwarded-for", nil, "10.0.0.1", ["203.0.113.5"]),               // an untrusted peer's list is never read
        ("127.0.0.1", "x-forwarded-for", nil, "198.51.100.7", ["198.51.100.7", "127.0.0.1"]),
        ("127.0.0.1", "x-forwarded-for", nil, "1.1.1.1, 198.51.100.7, 10.0.0.2", ["198.51.100.7", "10.0.0.2", "127.0.0.1"]),
        ("127.0.0.1", "x-forwarded-for", nil, "10.0.0.3,10.0.0.2", ["10.0.0.3", "10.0.0.2", "127.0.0.1"]),  // only proxies: the farthest
        ("127.0.0.1", "x-forwarded-for", nil, "198.51.100.7, garbage", ["127.0.0.1"]),       // unreadable: the last trusted hop
        ("127.0.0.1", "x-forwarded-for", nil, "198.51.100.7,,10.0.0.2", ["10.0.0.2", "127.0.0.1"]),  // an empty entry too
        ("127.0.0.1", "x-forwarded-for", nil, "", ["127.0.0.1"]),
        // Proxies that write a port, or brackets: the address.
        ("127.0.0.1", "x-forwarded-for", nil, "198.51.100.7:5040, [2001:db8::9]:443, 10.0.0.2", ["2001:db8::9", "10.0.0.2", "127.0.0.1"]),
        ("127.0.0.1", "x-forwarded-for", nil, "[2001:db8::9]", ["2001:db8::9", "127.0.0.1"]),
        // A client's Forwarded passed through by a proxy that writes X-Forwarded-For is never read.
        ("127.0.0.1", "x-forwarded-for", "for=6.6.6.6", "198.51.100.7", ["198.51.100.7", "127.0.0.1"]),
        ("127.0.0.1", "x-forwarded-for", "for=6.6.6.6", nil, ["127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43", "1.1.1.1", ["192.0.2.60", "127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=\"[2001:db8:cafe::17]:4711\"", nil, ["2001:db8:cafe::17", "127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=192.0.2.43:8080, for=10.0.0.9", nil, ["192.0.2.43", "10.0.0.9", "127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=unknown", nil, ["127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=_hidden, for=10.0.0.9", nil, ["10.0.0.9", "127.0.0.1"]),
        // A quoted host holding `,for=`: one element, its own `for` the client.
        ("127.0.0.1", "forwarded", "for=203.0.113.5;host=\"x,for=198.51.100.7;a\"", nil, ["203.0.113.5", "127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=203.0.113.5;host=\"unterminated", nil, ["127.0.0.1"]),  // does not parse: nothing read
        // A client's unclosed quote cannot swallow what the proxy appended to the same line: read from the right.
        ("127.0.0.1", "forwarded", "for=\"6.6.6.6, for=198.51.100.7", nil, ["198.51.100.7", "127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=\"6.6.6.6, for=198.51.100.7, for=10.0.0.4", nil, ["198.51.100.7", "10.0.0.4", "127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=\"6.6.6.6, for=10.0.0.4", nil, ["10.0.0.4", "127.0.0.1"]),
        ("127.0.0.1", "forwarded", "for=1.1.1.1;for=2.2.2.2", nil, ["127.0.0.1"]),
        ("127.0.0.1", "forwarded", nil, "198.51.100.7", ["127.0.0.1"]),
        ("::ffff:127.0.0.1", "x-forwarded-for", nil, "198.51.100.7", ["198.51.100.7", "127.0.0.1"]),  // an IPv4-mapped peer
        // A long list of trusted hops: read up to 32.
        ("127.0.0.1", "x-forwarded-for", nil, "198.51.100.7, " + Array(repeating: "10.0.0.1", count: 40).joined(separator: ", "),
         Array(repeating: "10.0.0.1", count: 32) + ["127.0.0.1"]),
    ] as [(String, String, String?, String?, [String])])
    func clientAddressBehindTrustedProxies(peer: String, field: String, forwarded: String?, forwardedFor: String?, expected: [String]) throws {
        let middleware = TrustedProxies(["127.0.0.0/8", "10.0.0.0/8"].compactMap { IPNetwork($0) },
                                        field: try #require(TrustedProxies.Field(rawValue: field)))
        var fields = HTTPFields()
        if let forwarded { fields[TrustedProxies.forwarded] = forwarded }
        if let forwardedFor { fields[TrustedProxies.forwardedFor] = forwardedFor }
        #expect(middleware.chain(peer: IPAddress(peer), fields: fields).map(\.description) == expected)
    }

    @Test func networksParseAndMatch() {
        #expect(IPNetwork("10.0.0.0/8")?.contains(IPAddress("10.255.1.2")!) == true)
        #expect(IPNetwork("10.0.0.0/8")?.contains(IPAddress("11.0.0.1")!) == false)
        #expect(IPNetwork("192.168.1.0/25")?.contains(IPAddress("192.168.1.127")!) == true)
        #expect(IPNetwork("192.168.1.0/25")?.contains(IPAddress("192.168.1.128")!) == false)
        #expect(IPNetwork("fd00::/8")?.contains(IPAddress("fd12::1")!) == true)
        #expect(IPNetwork("fd00::/8")?.contains(IPAddress("10.0.0.1")!) == false)
        #expect(IPNetwork("::1")?.contains(IPAddress("::1")!) == true)
        #expect(IPNetwork("0.0.0.0/0")?.contains(IPAddress("8.8.8.8")!) == true)
        for bad in ["10.0.0.0/33", "10.0.0.0/", "10.0.0.0/8/8", "example.com", "10.0.0.0/-1", "::1/129", "", "10.0.0.0/٣", "10.0.0.0/-0",
                    "10.0.0.0/+8", "10.0.0.0/0008"] {
            #expect(IPNetwork(bad) == nil, "\(bad)")
        }
    }

    /// signd in process with its logs kept, both ports given to `body`.
    static func withObservedGateway(_ json: String, _ body: @Sendable (_ port: Int, _ metricsPort: Int, _ logs: InMemoryLogHandler) async throws -> Void) async throws {
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "signd", factory: { _ in logs })
        logger.logLevel = .info
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        let (metricsPorts, metricsPort) = AsyncStream.makeStream(of: Int.self)
        let gateway = try Gateway(configuration: GatewayConfiguration.parse(Data(json.utf8)), logger: logger,
                                  onListening: { port.yield($0) }, onMetricsListening: { metricsPort.yield($0) })
        try await withServices([gateway], ports: ports) { port in
            var iterator = metricsPorts.makeAsyncIterator()
            guard let metrics = await iterator.next() else { throw CancellationError() }
            try await body(port, metrics, logs)
        }
    }

    static func text(_ response: HTTPClientResponse) async throws -> String {
        String(buffer: try await response.body.collect(upTo: 1 << 20))
    }

    /// signd's Prometheus text on `metricsPort`, or "" when it cannot be read (for `eventually`).
    static func metrics(_ http: HTTPClient, port metricsPort: Int) async -> String {
        (try? await text(try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/metrics"), timeout: .seconds(10)))) ?? ""
    }

    /// A request an HTTP/1.1 connection cuts short is counted as its client saw it: a body slower
    /// than `limits.minBodyRate` as 408, a client gone before its answer as 499; the upstream
    /// exchange of each as `cancelled`, never as an upstream failure (no warning, no `failed`).
    @Test func requestsCutShortAreCountedAsTheClientSawThem() async throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([GatewayTests.key])
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "policy": ["routes": [["route": "/open/**", "signature": "off"], ["route": "/slow", "signature": "off"]]],
                "body": ["mode": "streamed", "limit": 1 << 20], "limits": ["minBodyRate": 200, "bodyRateWindow": 1]])
            try await Self.withObservedGateway(json) { port, metricsPort, logs in
                // Past 64 KiB announced, a streamed body goes upstream as it comes: the exchange has begun.
                let head = "POST /open/trickle HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 100000\r\n\r\n"
                let slow = try await rawHTTP(port: port, segments: [head] + Array(repeating: "x", count: 30), timeout: .seconds(8))
                #expect(GatewayConnectionTests.statuses(slow) == [408], "\(slow.prefix(200))")
                // The upstream takes 3 s to answer /slow; the client aborts after 1 s.
                _ = try? await rawHTTP(port: port, segments: ["GET /slow HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"], reset: true,
                                       timeout: .seconds(1))

                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                let metrics: @Sendable () async -> String = { await Self.metrics(http, port: metricsPort) }
                let settled = try await eventually {
                    let text = await metrics()
                    return text.contains(#"signd_upstream_responses_total{status="cancelled"} 2"#)
                        && text.contains(#"signd_requests_total{status="408"} 1"#) && text.contains(#"signd_requests_total{status="499"} 1"#)
                }
                let counted = await metrics()
                #expect(settled, "\(counted)")
                #expect(counted.contains(#"signd_requests_total{status="408"} 1"#) && counted.contains(#"signd_requests_total{status="499"} 1"#),
                        "\(counted)")
                #expect(!counted.contains(#"status="failed""#))
                let statuses: @Sendable () -> [String] = { logs.entries.filter { $0.message == "request" }.map { "\($0.metadata["signd.status"] ?? "")" } }
                let logged = try await eventually { statuses().contains("408") && statuses().contains("499") }
                #expect(logged, "\(statuses())")
                #expect(!logs.entries.contains { $0.message == "upstream request failed" })
            }
        }
    }

    /// A client behind a trusted proxy reaches the upstream as itself, in X-Forwarded-For and
    /// Forwarded that signd wrote; the access log names it and nothing of the URL.
    @Test func forwardingFieldsMetricsAndAccessLog() async throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([GatewayTests.key])
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, ["trustedProxies": ["127.0.0.1/32"],
                                                                                      "policy": ["routes": [["route": "/open/**", "signature": "off"]]]])
            try await Self.withObservedGateway(json) { port, metricsPort, logs in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/open/x?secret=hunter2")
                request.headers.add(name: "X-Forwarded-For", value: "6.6.6.6, 198.51.100.7")
                #expect(try await http.execute(request, timeout: .seconds(10)).status == .ok)
                let refused = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/x?secret=hunter2"), timeout: .seconds(10))
                #expect(refused.status == .unauthorized)
                let signed = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/y"), client: SigningClient(signer: Signer(key: GatewayTests.key)),
                                                    timeout: .seconds(10))
                #expect(signed.status == .ok)

                let metrics = try await Self.text(try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/metrics"),
                                                                         timeout: .seconds(10)))
                #expect(metrics.contains(#"signd_requests_total{status="200"} 2"#), "\(metrics)")
                #expect(metrics.contains(#"signd_requests_total{status="401"} 1"#))
                #expect(metrics.contains(#"signd_upstream_responses_total{status="200"} 2"#))
                #expect(metrics.contains(#"signcore_verifications_total{verdict="accepted",code="none"} 1"#)
                        || metrics.contains(#"signcore_verifications_total{code="none",verdict="accepted"} 1"#))
                #expect(metrics.contains("signd_request_duration_seconds_bucket") && metrics.contains("signcore_verify_duration"))
                // The metrics are not on the public listener.
                #expect(try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(10)).status == .unauthorized)

                // An upstream's own refusal is relayed, and logged as its status only.
                let relayed = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/open/refuses"), timeout: .seconds(10))
                #expect(relayed.status == .unauthorized && relayed.headers["signcore-error"].first?.hasPrefix("replayed") == true)

                let lines = logs.entries.filter { $0.message == "request" }
                #expect(lines.count == 5, "\(lines)")  // the /metrics tried on the public listener included
                #expect(lines.last.map { "\($0.metadata["signd.status"] ?? "")" } == "401" && lines.last?.metadata["signd.code"] == nil, "\(lines)")
                #expect(lines.first?.metadata["signd.client"] == "198.51.100.7")
                #expect(lines.first?.metadata["signd.route"] == "/open/**")
                #expect(lines.dropFirst().first?.metadata["signd.code"] == "missingHeader")
                let all = logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
                #expect(!all.contains("hunter2") && !all.contains("/v1/x") && !all.contains("v3."), "no URL or token in the log")
            }
        }
        let first = try #require(upstream.all.first)
        #expect(first.fields.contains("x-forwarded-for: 198.51.100.7, 127.0.0.1"))
        #expect(first.fields.contains { $0.hasPrefix("forwarded: for=198.51.100.7;host=") })
        #expect(!first.fields.contains { $0.contains("6.6.6.6") })
    }

    /// Readiness follows what signd depends on: an upstream that is down makes it 503 naming
    /// `upstream`, then 200 once it is up; liveness stays 200.
    @Test func readinessFollowsTheUpstream() async throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([GatewayTests.key])
        let upstreamPort = try freePort()
        try await Self.withObservedGateway(GatewayTests.configuration(upstream: upstreamPort, keys: keys)) { port, metricsPort, _ in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let base = "http://127.0.0.1:\(port)/.well-known/signcore/"
            @Sendable func ready() async throws -> (Int, String) {
                let response = try await http.execute(HTTPClientRequest(url: base + "ready"), timeout: .seconds(10))
                return (Int(response.status.code), try await Self.text(response))
            }
            try await Task.sleep(for: .milliseconds(1500))  // the first check has run
            let down = try await ready()
            #expect(down.0 == 503 && down.1.contains("\"upstream\"") && !down.1.contains("\"store\""), "\(down)")
            #expect(try await http.execute(HTTPClientRequest(url: base + "health"), timeout: .seconds(10)).status == .ok)
            let gauge = try await Self.text(try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/metrics"), timeout: .seconds(10)))
            #expect(gauge.contains("signd_upstream_up 0") && gauge.contains("signd_ready 0") && gauge.contains("signd_keys 1"), "\(gauge)")

            let upstream = Upstream()
            let application = upstream.application(port: upstreamPort)
            try await withServices([application], ports: AsyncStream { $0.yield(upstreamPort) }) { _ in
                var up = (0, "")
                for _ in 0..<30 where up.0 != 200 {
                    try await Task.sleep(for: .milliseconds(250))
                    up = try await ready()
                }
                #expect(up.0 == 200 && up.1 == #"{"status":"ready"}"#, "\(up)")
            }
        }
    }

    /// A route's own body mode, limit and upstream timeout; every other route keeps the top-level ones.
    @Test func routesHaveTheirOwnBodyAndTimeout() async throws {
        let big = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let upstream = try await withSignd({ upstreamPort, keys in
            let routes: [[String: Any]] = [
                ["route": "PUT /upload/**", "signature": "require", "body": ["mode": "streamed", "limit": 8 << 20], "upstreamTimeout": 30],
                ["route": "/slow", "signature": "off", "upstreamTimeout": 1],
            ]
            return GatewayTests.configuration(upstream: upstreamPort, keys: keys, ["body": ["limit": 1024], "policy": ["routes": routes]])
        }) { port, http in
            let signer = try Signer(key: GatewayTests.key)
            var small = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/x")
            small.method = .POST
            let refused = try await http.execute(small, body: .bytes(ByteBuffer(bytes: Array(repeating: 1, count: 2048))), client: SigningClient(signer: signer),
                                                 timeout: .seconds(10))
            #expect(refused.status.code == 413, "\(refused.status) \(refused.headers)")
            var upload = HTTPClientRequest(url: "http://127.0.0.1:\(port)/upload/a")
            upload.method = .PUT
            let uploaded = try await http.execute(upload, body: .bytes(ByteBuffer(bytes: big)), client: SigningClient(signer: signer), timeout: .seconds(30))
            #expect(uploaded.status == .ok, "\(uploaded.status) \(uploaded.headers)")
            // A body set on the request itself could not be signed: refused, never sent without it.
            var misplaced = upload
            misplaced.body = .bytes(ByteBuffer(bytes: big))
            await #expect(throws: SignCoreError.self) { _ = try await http.execute(misplaced, client: SigningClient(signer: signer), timeout: .seconds(10)) }
            let slow = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/slow"), timeout: .seconds(10))
            #expect(slow.status == .gatewayTimeout)
        }
        let uploaded = upstream.all.first { $0.path == "/upload/a" }
        #expect(uploaded?.bodyBytes == big.count && uploaded?.complete == true)
        #expect(uploaded?.fields.contains("signcore-verdict: verified;body=streamed") == true, "\(uploaded?.fields ?? [])")
        #expect(!upstream.all.contains { $0.path == "/v1/x" })
    }

    /// A route's settings: its own members over the top-level ones, the first rule of a written
    /// form deciding, and none for a path read under several rules.
    @Test func routeSettingsInheritAndAmbiguousPathsGetTheDefaults() throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([GatewayTests.key])
        let routes: [[String: Any]] = [
            ["route": "/api/**", "signature": "require"],
            ["route": "/upload/**", "signature": "require", "body": ["limit": 1 << 30]],
            ["route": "/x/**", "signature": "require"],
            ["route": "/x/**", "signature": "off", "body": ["mode": "streamed", "limit": 1 << 30]],
        ]
        let configuration = try GatewayConfiguration.parse(Data(GatewayTests.configuration(upstream: 1, keys: keys, [
            "body": ["mode": "streamed", "limit": 4096], "policy": ["routes": routes]]).utf8))
        let gateway = try Gateway(configuration: configuration, logger: quietLogger)
        let gatewayRoutes = gateway.routes
        func decided(_ path: String) -> RoutePolicy.Decision { gatewayRoutes.policy.decision(method: .post, path: path) }
        #expect(gatewayRoutes.body(for: decided("/upload/a")) == .streamed(limit: 1 << 30), "mode from the top level")
        #expect(gatewayRoutes.body(for: decided("/x/a")) == .streamed(limit: 4096), "the first /x/** has no settings of its own")
        #expect(decided("/x/a").requirements.body == nil && decided("/x/a").signature == .require)
        #expect(gatewayRoutes.body(for: decided("/api/a")) == .streamed(limit: 4096) && gatewayRoutes.defaultBody == .streamed(limit: 4096))
        // `/upload/..%2Fapi/orders` reads as /upload/** raw and /api/** resolved: neither's settings.
        let decision = decided("/upload/..%2Fapi/orders")
        #expect(decision.signature == .require && decision.ambiguous)
        #expect(gatewayRoutes.body(for: decision) == .streamed(limit: 4096))
    }

    @Test func operationsConfigurationIsChecked() throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([GatewayTests.key])
        let bad: [(String, Any, String)] = [
            ("trustedProxies", ["10.0.0.0/8", "example.com"], "trustedProxies[1] is an IP address or a network"),
            ("readyPath", "ready", "readyPath is an absolute path"), ("readyPath", "/.well-known/signcore/health", "readyPath is a path other"),
            ("metrics", ["path": "metrics"], "metrics.path is an absolute path"), ("metrics", ["port": 1], "unknown member metrics.port"),
            ("accessLog", "yes", "accessLog has the wrong type"), ("body", ["mode": "lazy"], "body.mode is buffered or streamed"),
            ("replay", ["store": "redis"], "replay.store is memory or postgres"),
            ("policy", ["routes": [["route": "/a", "signature": "off", "upstreamTimeout": 0]]], "policy.routes[0].upstreamTimeout is at least 1"),
            ("policy", ["routes": [["route": "/a", "signature": "off", "body": ["mode": "lazy"]]]], "policy.routes[0].body.mode is buffered or streamed"),
            ("policy", ["routes": [["route": "/a", "signature": "off", "timeout": 1]]], "unknown member policy.routes[0].timeout"),
            ("policy", ["routes": [["route": "/a", "signature": "off", "body": ["limit": -1]]]], "policy.routes[0].body.limit is 0 or more"),
            ("identityHeaders", ["verdict": "signcore-account"], "identityHeaders.verdict is a name no other"),
            ("identityHeaders", ["verdict": "Signcore_Key_ID"], "identityHeaders.verdict is a name no other"),
            ("identityHeaders", ["account": "x-forwarded-for"], "identityHeaders.account is a field of signd's own"),
            ("trustedProxyField", "x-real-ip", "trustedProxyField is x-forwarded-for or forwarded"),
        ]
        for (member, value, expected) in bad {
            do {
                _ = try GatewayConfiguration.parse(Data(GatewayTests.configuration(upstream: 1, keys: keys, [member: value]).utf8))
                Issue.record("\(member) accepted")
            } catch {
                #expect(error.detail.contains(expected), "\(error.detail)")
            }
        }
        let off = try GatewayConfiguration.parse(Data(GatewayTests.configuration(upstream: 1, keys: keys, ["metrics": NSNull()]).utf8))
        #expect(off.metrics == nil)
        #expect(throws: SignCoreError.self) {
            _ = try Gateway(configuration: GatewayConfiguration.parse(Data(GatewayTests.configuration(upstream: 1, keys: keys,
                                                                                                      ["metrics": ["listen": "9464"]]).utf8)), logger: quietLogger)
        }
    }
}
