import HTTPTypes
import SignCore
import SignHTTP
import Testing

@Suite struct RoutePolicyTests {
    let policy = RoutePolicy([
        try! .init("/health", .off),
        try! .init("GET,HEAD /public/**", .off),
        try! .init("/users/*/avatar", .monitor),
        try! .init("POST /v1/**", .require),
    ], fallback: .monitor)

    func requirement(_ method: HTTPRequest.Method, _ path: String) -> SignatureRequirement {
        policy.requirement(method: method, path: path).signature
    }

    @Test func firstMatchingRuleWins() {
        #expect(requirement(.get, "/health") == .off)
        #expect(requirement(.post, "/health?probe=1") == .off)
        #expect(requirement(.get, "/health/deep") == .monitor, "a literal pattern matches that path only")
        #expect(requirement(.get, "/public") == .off && requirement(.head, "/public/a/b/c") == .off)
        #expect(requirement(.post, "/public/a") == .monitor, "methods restrict a rule")
        #expect(policy.requirement(method: .get, path: "/users/7/avatar").route == "/users/*/avatar")
        #expect(policy.requirement(method: .get, path: "/users/7/8/avatar").route == "*", "* is one segment")
        #expect(requirement(.post, "/v1/orders") == .require)
        #expect(policy.requirement(method: .post, path: "/v1/orders").route == "POST /v1/**")
        #expect(policy.requirement(method: .get, path: "/elsewhere").route == "*")
        #expect(RoutePolicy.requireAll.requirement(method: .get, path: "/").signature == .require)
    }

    /// Paths that servers resolve to another rule never borrow a laxer one: they get the fallback.
    @Test func pathsReadUnderTwoRulesGetTheFallback() {
        let strict = RoutePolicy([try! .init("/public/**", .off)])
        for path in ["/public/../admin", "/public/%2e%2e/admin", "/public/%2E%2E/admin", "/public%2fadmin", "/public/x%5c..%5c..",
                     "/public\\..\\admin", "public/x", "", "/public/x/../..", "/public/..;/admin"] {
            #expect(strict.requirement(method: .get, path: path).signature == .require, "\(path)")
        }
        // Every reading of these stays under /public/**.
        for path in ["/public/x/", "/public/a%20b", "/public/./x", "/public//x", "/public/x;v=1", "/public/caf%C3%A9", "/public/x/.."] {
            #expect(strict.requirement(method: .get, path: path).signature == .off, "\(path)")
        }
    }

    @Test func badRulesAreConfigurationErrors() {
        for (route, why) in [("public/**", "no leading slash"), ("/a/**/b", "** not last"), ("/a*", "partial wildcard"),
                             ("/a/../b", "dot segment"), ("get /a", "lower-case method"), ("GET POST /a", "three parts"),
                             ("GET, /a", "empty method"), ("/" + String(repeating: "a", count: 2000), "too long")] {
            #expect(throws: SignCoreError.self, "\(why)") { _ = try RoutePolicy.Rule(route, .off) }
        }
    }
}

@Suite struct RetryPolicyTests {
    @Test func onlyA503IsRetriedAfterAShortRetryAfter() {
        let policy = RetryPolicy(maxAttempts: 3, maxDelay: .seconds(5))
        #expect(policy.delay(status: 503, retryAfter: "2", attempt: 1) == .seconds(2))
        #expect(policy.delay(status: 503, retryAfter: nil, attempt: 2) == .seconds(1), "no Retry-After: 1 s")
        #expect(policy.delay(status: 503, retryAfter: "Wed, 21 Oct 2026 07:28:00 GMT", attempt: 1) == .seconds(1), "an HTTP-date: 1 s")
        #expect(policy.delay(status: 503, retryAfter: " 0 ", attempt: 1) == .zero)
        #expect(policy.delay(status: 503, retryAfter: "60", attempt: 1) == nil, "longer than maxDelay: stop")
        #expect(policy.delay(status: 503, retryAfter: "99999999999999999999", attempt: 1) == nil, "longer than any Int: stop")
        #expect(policy.delay(status: 503, retryAfter: "9223372036854775807", attempt: 1) == nil)
        for invalid in ["-1", "1 0", "+2", "2s", "", " ", "٣"] {  // not delay-seconds: 1 s
            #expect(policy.delay(status: 503, retryAfter: invalid, attempt: 1) == .seconds(1), "\(invalid.debugDescription)")
        }
        #expect(policy.delay(status: 503, retryAfter: "\t3\t", attempt: 1) == .seconds(3))
        #expect(policy.delay(status: 503, retryAfter: "1", attempt: 3) == nil, "attempts spent")
        for status in [200, 401, 429, 500, 502] { #expect(policy.delay(status: status, retryAfter: "1", attempt: 1) == nil) }
        #expect(RetryPolicy.never.delay(status: 503, retryAfter: "0", attempt: 1) == nil)
        #expect(RetryPolicy(maxAttempts: 0).maxAttempts == 1)
    }
}
