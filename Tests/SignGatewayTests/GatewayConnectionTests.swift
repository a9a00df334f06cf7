import Foundation
@_spi(SignCoreTools) import SignCore
import SignTestSupport
import Testing

/// signd's HTTP/1.1 connections (`HTTP1Connection`), sent raw as a client or an attacker would and
/// checked at the upstream: pipelined requests answered in order, each body read as its own
/// request's and never as a request, a connection closed after a refusal without resetting the
/// refusal, and a head that cannot be parsed answered 400.
@Suite(.serialized) struct GatewayConnectionTests {
    /// The status codes of the responses in `answer`, in order.
    static func statuses(_ answer: String) -> [Int] {
        answer.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }

    static func withOffGateway(limit: Int = 1 << 16, policy: String = "off", mode: String = "buffered", limits: [String: Int] = [:],
                               _ body: @Sendable (Int, Upstream) async throws -> Void) async throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([GatewayTests.key])
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let configuration = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "policy": ["fallback": policy], "body": ["mode": mode, "limit": limit], "limits": limits.merging(["idleTimeout": 5]) { a, _ in a }])
            try await withGateway(configuration) { port in try await body(port, upstream) }
        }
    }

    /// Requests sent at once, bodies among them, are answered one by one in the order they came,
    /// each body forwarded with its own request.
    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await Self.withOffGateway { port, upstream in
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let body = "GET /inside-a-body HTTP/1.1\r\n\(host)\r\n"
            var requests = ""
            for index in 0..<4 {
                requests += "GET /early/\(index) HTTP/1.1\r\n\(host)\r\n"
                requests += "POST /p/\(index) HTTP/1.1\r\n\(host)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                requests += "GET /g/\(index) HTTP/1.1\r\n\(host)\r\n"
            }
            requests += "GET /last HTTP/1.1\r\n\(host)Connection: close\r\n\r\n"
            let answer = try await rawHTTP(port: port, requests)
            #expect(Self.statuses(answer) == Array([[404, 200, 200], [404, 200, 200], [404, 200, 200], [404, 200, 200]].joined()) + [200],
                    "\(Self.statuses(answer))")
            let seen = upstream.all.map(\.path)
            #expect(seen == (0..<4).flatMap { ["/early/\($0)", "/p/\($0)", "/g/\($0)"] } + ["/last"], "\(seen)")
            #expect(upstream.all.filter { $0.path.hasPrefix("/p/") }.allSatisfy { $0.bodyBytes == body.utf8.count && $0.complete })
        }
    }

    /// A body is never read as requests, whether or not the upstream waited for it: one that
    /// came whole is dropped and the next request served; of one still arriving when the upstream
    /// answered, nothing more is read (the connection closes after the answer), so neither the
    /// requests hidden in it nor one sent after it reach the upstream.
    @Test func aBodyIsNeverReadAsRequests() async throws {
        try await Self.withOffGateway(limit: 8 << 20) { port, upstream in
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let hidden = "GET /smuggled HTTP/1.1\r\n\(host)\r\n"
            for (copies, whole) in [(20, true), (40_000, false)] {  // 1 KB, 1.6 MB
                let body = String(repeating: hidden, count: copies)
                let request = "POST /early/x HTTP/1.1\r\n\(host)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                    + "GET /after HTTP/1.1\r\n\(host)Connection: close\r\n\r\n"
                let answer = try await rawHTTP(port: port, request)
                #expect(Self.statuses(answer) == (whole ? [404, 200] : [404]), "\(copies): \(answer.prefix(300))")
                #expect(whole || answer.lowercased().contains("connection: close"))
                #expect(upstream.all.map(\.path) == (whole ? ["/early/x", "/after"] : ["/early/x"]), "\(upstream.all.map(\.path))")
                upstream.records.withLock { $0.removeAll() }
            }
        }
    }

    /// A refused body the client keeps sending: signd answers, stops taking requests on the
    /// connection, and reads on until the client is done, so the refusal is read, not reset.
    @Test func aRefusalReachesAClientStillSendingItsBody() async throws {
        try await Self.withOffGateway { port, upstream in
            let body = String(repeating: "x", count: 4 << 20)  // past the 64 KiB limit, and past the socket buffers
            for framing in ["Content-Length: \(body.utf8.count)", "Transfer-Encoding: chunked"] {
                let sent = framing.hasPrefix("Content") ? body : "\(String(body.utf8.count, radix: 16))\r\n\(body)\r\n0\r\n\r\n"
                let answer = try await rawHTTP(port: port, "PUT /big HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(framing)\r\n\r\n\(sent)")
                #expect(Self.statuses(answer) == [413], "\(framing): \(answer.prefix(300))")
            }
            #expect(!upstream.all.contains { $0.complete }, "\(upstream.all.map { ($0.path, $0.bodyBytes, $0.complete) })")
        }
    }

    /// A head that is not HTTP/1.1 is answered 400 and the connection closed; the next
    /// connection is served.
    @Test func aMalformedHeadIsAnswered400() async throws {
        try await Self.withOffGateway { port, upstream in
            for garbage in ["NOT HTTP\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
                            "GET / HTTP/1.1\r\nHo st: x\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"] {
                let answer = try await rawHTTP(port: port, garbage)
                #expect(Self.statuses(answer).first == 400, "\(garbage.debugDescription): \(answer.prefix(200))")
            }
            let fine = try await rawHTTP(port: port, "GET /fine HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
            #expect(Self.statuses(fine) == [200])
            #expect(upstream.all.map(\.path) == ["/fine"])
        }
    }

    /// A body cut short (the client half-closes before its end) on a `monitor` route, where a
    /// failed read does not stop the request: the next reader of the body is refused, never
    /// handed a second reader of the stream (SwiftNIO traps on one); nothing is forwarded whole,
    /// and signd serves on.
    @Test func aBodyCutShortIsNeverForwardedAndSigndServesOn() async throws {
        try await Self.withOffGateway(policy: "monitor") { port, upstream in
            for framing in ["Content-Length: 100", "Transfer-Encoding: chunked"] {
                let head = "POST /cut HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(framing)\r\n\r\n"
                let answer = try await rawHTTP(port: port, segments: [head, framing.hasPrefix("Content") ? "abc" : "3\r\nabc\r\n"], halfClose: true)
                #expect(!Self.statuses(answer).isEmpty && Self.statuses(answer).allSatisfy { $0 >= 400 }, "\(framing): \(answer.prefix(200))")
            }
            #expect(!upstream.all.contains { $0.complete }, "\(upstream.all.map { ($0.path, $0.bodyBytes, $0.complete) })")
            let fine = try await rawHTTP(port: port, "GET /fine HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
            #expect(Self.statuses(fine) == [200])
        }
    }

    /// A client that sends its requests and half-closes gets every answer, then the end.
    @Test func requestsSentBeforeAHalfCloseAreAllAnswered() async throws {
        try await Self.withOffGateway { port, upstream in
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let answer = try await rawHTTP(port: port, segments: ["GET /a HTTP/1.1\r\n\(host)\r\nGET /b HTTP/1.1\r\n\(host)\r\n"], halfClose: true)
            #expect(Self.statuses(answer) == [200, 200], "\(answer.prefix(300))")
            #expect(upstream.all.map(\.path) == ["/a", "/b"])
        }
    }

    /// A chunked body whose framing breaks in the first read, before its request's task started:
    /// answered 400 at once (not left waiting for the idle timeout), and never forwarded.
    @Test func aBodyWhoseFramingBreaksIsAnswered400AtOnce() async throws {
        try await Self.withOffGateway { port, upstream in
            let request = "POST /broken HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n"
            let started = ContinuousClock.now
            let answer = try await rawHTTP(port: port, request, timeout: .seconds(4))
            #expect(Self.statuses(answer) == [400], "\(answer.prefix(200))")
            #expect(ContinuousClock.now - started < .seconds(4))
            #expect(!upstream.all.contains { $0.complete })
        }
    }

    /// A client that stops reading a long answer and goes away: signd lets go of the request
    /// (its task, and the upstream exchange that streams the answer), so the upstream stops
    /// writing instead of waiting for a reader that is gone, holding a connection of the pool.
    @Test func aClientGoneMidAnswerReleasesTheUpstream() async throws {
        try await Self.withOffGateway { port, upstream in
            let request = "GET /huge HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
            let answer = try await rawHTTP(port: port, segments: [request], readLimit: 256 << 10)
            #expect(Self.statuses(answer) == [200])
            let ended = try await eventually { upstream.all.contains { $0.path == "/huge" } }
            #expect(ended, "the upstream is still writing the answer for a client that left")
            let sent = upstream.all.first { $0.path == "/huge" }
            #expect(sent.map { !$0.complete } == true, "the upstream wrote \(sent?.bodyBytes ?? 0) bytes")
        }
    }

    /// A client that asks for a long answer and never reads it: the idle timer does not run while
    /// a response is under way, so after `limits.idleTimeout` of waiting for the client to take
    /// more (nginx's `send_timeout`), signd cuts the connection and lets go of the upstream
    /// exchange, long before the client reads.
    @Test func aClientThatNeverReadsItsAnswerIsCutOff() async throws {
        try await Self.withOffGateway(limits: ["idleTimeout": 1]) { port, upstream in
            let request = "GET /huge HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
            // Sends nothing more for 7 s (the empty segments), reading nothing meanwhile.
            let client = Task { try await rawHTTP(port: port, segments: [request] + Array(repeating: "", count: 70), readLimit: 256 << 10) }
            let released = try await eventually { upstream.all.contains { $0.path == "/huge" } }
            #expect(released, "the upstream is still streaming to a client that reads nothing")
            #expect(upstream.all.first { $0.path == "/huge" }.map { !$0.complete } == true)
            _ = try? await client.value
        }
    }

    /// More bytes after a body whose framing broke while its request was being answered (the
    /// client still sending): the answer reaches the client, and nothing after the break is read
    /// as requests.
    @Test func bytesAfterAParseErrorDoNotLoseTheAnswer() async throws {
        try await Self.withOffGateway { port, upstream in
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let after = String(repeating: "GET /after HTTP/1.1\r\n\(host)\r\n", count: 50)
            let answer = try await rawHTTP(port: port, segments: ["POST /broken HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                                                                  "ZZ\r\n" + after, after, after])
            #expect(Self.statuses(answer).count == 1 && Self.statuses(answer).allSatisfy { $0 >= 400 }, "\(answer.prefix(200))")
            #expect(!upstream.all.contains { $0.path == "/after" || $0.complete })
        }
    }

    /// Requests a client sends far ahead (past the 64 parts or 64 KiB held) are all answered in
    /// order once the connection reads on.
    @Test func manyPipelinedRequestsAreAllAnswered() async throws {
        try await Self.withOffGateway { port, upstream in
            let host = "Host: 127.0.0.1:\(port)\r\n"
            let filler = "X-Filler: " + String(repeating: "f", count: 2000) + "\r\n"
            var requests = ""
            for index in 0..<300 { requests += "GET /n/\(index) HTTP/1.1\r\n\(host)\(filler)\r\n" }
            requests += "GET /last HTTP/1.1\r\n\(host)Connection: close\r\n\r\n"
            let answer = try await rawHTTP(port: port, requests, timeout: .seconds(30))
            #expect(Self.statuses(answer).count == 301 && Self.statuses(answer).allSatisfy { $0 == 200 }, "\(Self.statuses(answer).count)")
            #expect(upstream.all.map(\.path) == (0..<300).map { "/n/\($0)" } + ["/last"])
        }
    }

    /// A body sent a byte at a time completes a part each time, so the idle timeout alone would
    /// never close it: below `limits.minBodyRate` over a window, the client gets 408 and the
    /// connection closes, buffered or streamed, and the upstream never gets a whole request. A
    /// body above the rate, longer than a window, is forwarded whole.
    @Test func aBodyTrickledBelowTheMinimumRateIsAnswered408() async throws {
        for mode in ["buffered", "streamed"] {
            try await Self.withOffGateway(mode: mode, limits: ["minBodyRate": 200, "bodyRateWindow": 1]) { port, upstream in
                let head = "POST /trickle HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 1000\r\n\r\n"
                let started = ContinuousClock.now
                let slow = try await rawHTTP(port: port, segments: [head] + Array(repeating: "x", count: 30), timeout: .seconds(8))
                #expect(Self.statuses(slow) == [408], "\(mode): \(slow.prefix(200))")
                #expect(slow.lowercased().contains("connection: close"))
                #expect(ContinuousClock.now - started < .seconds(8))
                #expect(!upstream.all.contains { $0.complete }, "\(upstream.all.map { ($0.path, $0.bodyBytes, $0.complete) })")

                let fine = String(repeating: "y", count: 100)
                let steady = try await rawHTTP(port: port, segments: [head.replacingOccurrences(of: "/trickle", with: "/steady")]
                                                   + Array(repeating: fine, count: 10) + ["GET /next HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"],
                                               pause: .milliseconds(150))
                #expect(Self.statuses(steady) == [200, 200], "\(mode): \(steady.prefix(200))")
                #expect(upstream.all.contains { $0.path == "/steady" && $0.complete && $0.bodyBytes == 1000 })
            }
        }
    }

    /// The rate holds in every window, not on average since the start: bytes sent fast first buy
    /// no time for a trickle after them.
    @Test func aBodyFastThenTrickledIsAnswered408() async throws {
        try await Self.withOffGateway(mode: "streamed", limits: ["minBodyRate": 200, "bodyRateWindow": 1]) { port, upstream in
            let head = "POST /banked HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 60000\r\n\r\n"
            let answer = try await rawHTTP(port: port, segments: [head, String(repeating: "f", count: 20_000)] + Array(repeating: "x", count: 30),
                                           timeout: .seconds(8))
            #expect(Self.statuses(answer) == [408], "\(answer.prefix(200))")
            #expect(!upstream.all.contains { $0.complete })
        }
    }

    /// Time signd itself does not read does not count: a body sent at once to an upstream that
    /// waits 3 s before reading it stalls in signd (its reader full) and is forwarded whole.
    @Test func aBodyHeldBackBySigndIsNotTooSlow() async throws {
        try await Self.withOffGateway(limit: 64 << 20, mode: "streamed", limits: ["minBodyRate": 200, "bodyRateWindow": 1]) { port, upstream in
            let size = 32 << 20
            let head = "POST /slow HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(size)\r\nConnection: close\r\n\r\n"
            let answer = try await rawHTTP(port: port, segments: [head, String(repeating: "z", count: size)], timeout: .seconds(30))
            #expect(Self.statuses(answer) == [200], "\(answer.prefix(200))")
            #expect(upstream.all.contains { $0.path == "/slow" && $0.complete && $0.bodyBytes == size })
        }
    }
}
