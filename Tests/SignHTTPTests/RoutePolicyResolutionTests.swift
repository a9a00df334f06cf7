import HTTPTypes
import SignCore
import SignHTTP
import Testing

/// A path is given the strictest rule of every way an upstream could resolve it: no spelling of
/// `/admin/x` gets less than `/admin/**`, whatever the fallback, and no spelling reaches
/// `/public/**`'s rule by resolving out of it.
@Suite struct RoutePolicyResolutionTests {
    /// Spellings of `/admin/x` that nginx, Tomcat, IIS or a framework resolve to it.
    static let adminSpellings = [
        "/admin/x", "//admin/x", "/admin//x", "///admin///x", "/./admin/x", "/admin/./x", "/admin/x/.", "/public/../admin/x",
        "/public/../../admin/x", "/../admin/x", "/public/..;/admin/x", "/public/..;a=b/admin/x", "/public;a/../admin/x",
        "/admin;jsessionid=1/x", "/admin;/x", "/;/admin/x", "/admin/x;p", "/%61dmin/x", "/%61%64%6d%69%6e/x", "/ADMIN/x",
        "/Admin/x", "/aDmIn/x", "/%41dmin/x", "/public/%2e%2e/admin/x", "/public/%2E%2E/admin/x", "/public/.%2e/admin/x",
        "/public/%2e./admin/x", "/public%2f..%2fadmin/x", "/public/..%2fadmin/x", "/%2fadmin/x", "/%2Fadmin%2Fx",
        "/public\\..\\admin\\x", "\\admin\\x", "/public/%5c..%5cadmin/x", "/admin/x?y=1", "/admin%2f./x", "/admin/%2e/x",
        "/public/..%3b/admin/x", "/public/%2e%2e;/admin/x",
        // Found by FuzzRoutePolicy: a raw-path router keeps `..`; Apache's NoDecode keeps %2F; nginx keeps `\`;
        // RFC 3986 without merging slashes; Tomcat drops `;` before decoding; byte-level splitting.
        "/admin/..", "/a%2Fb/../admin", "/admin/%2F..", "/admin/\\..", "/admin//..", "/admin;%2f..",
        "/admin/\u{301}", "/admin?\u{301}", "/admin/\u{301}/../x", "/public/\u{301}/../../admin/x",
    ]

    @Test func everySpellingOfAProtectedPathIsProtected() throws {
        for fallback in SignatureRequirement.allCases {
            let policy = RoutePolicy([try .init("/public/**", .off), try .init("/admin/**", .require)],
                                     fallback: RouteRequirements(signature: fallback))
            for path in Self.adminSpellings {
                #expect(policy.requirement(method: .get, path: path).signature == .require, "\(path) with fallback \(fallback)")
            }
            // Monitor is kept over off the same way.
            let monitored = RoutePolicy([try .init("/public/**", .off), try .init("/admin/**", .monitor)], fallback: .off)
            for path in Self.adminSpellings {
                #expect(monitored.requirement(method: .get, path: path).signature == .monitor, "\(path) monitored")
            }
        }
    }

    /// Escapes some server decodes into a separator, a second escape, a control byte or invalid
    /// UTF-8, and paths too long to read every way, never get less than the fallback.
    @Test func treacherousAndLongPathsGetTheFallback() throws {
        let policy = RoutePolicy([try .init("/admin/**", .require), try .init("/**", .off)], fallback: .monitor)
        for path in ["/admin%3F/..", "/admin%3f/../x", "/x%23/..", "/public/%252e%252e/admin/x", "/public/..%252fadmin/x", "/a%09/..",
                     "/public/%u002e%u002e/admin", "/a/%00/..", "/public/..%c0%afadmin/x", "/%c0%ae%c0%ae/admin", "/a/%ff/..",
                     "/public/..%20/admin/x", "/public/%2e%2e%20/admin/x", "/admin%2e/x"] {
            let decision = policy.decision(method: .get, path: path)
            #expect(decision.signature != .off && decision.ambiguous, "\(path): \(decision)")
        }
        // Escapes of ordinary characters, a literal %, valid UTF-8: every reading under one rule.
        for path in ["/files/a%20b", "/files/100%25", "/files/caf%C3%A9", "/files/%41"] {
            let decision = policy.decision(method: .get, path: path)
            #expect(decision.signature == .off && decision.route == "/**" && !decision.ambiguous, "\(path)")
        }
        // Longer than is read every way: the strictest rule for the method.
        let long = "/public/" + String(repeating: "a/", count: 600) + "%41;."
        let decision = policy.decision(method: .get, path: long)
        #expect(decision.signature == .require && decision.route == "/admin/**" && decision.ambiguous)
        #expect(policy.decision(method: .get, path: "/public/" + String(repeating: "a/", count: 600)).signature == .off, "plain: one reading")
    }

    @Test func plainPathsKeepTheirRules() throws {
        let policy = RoutePolicy([try .init("/public/**", .off), try .init("GET /status", .off), try .init("/admin/**", .require)],
                                 fallback: .monitor)
        let expected: [(String, SignatureRequirement)] = [
            ("/public/x", .off), ("/public/a/b?c=d", .off), ("/public/x;v=1", .off), ("/public/caf%C3%A9", .off), ("/status", .off),
            ("/public/../status", .monitor),  // read under two rules (/public/** raw, /status resolved): never less than the fallback
            ("/admin/x", .require), ("/other", .monitor), ("/", .monitor),
            ("/public/./x", .off), ("/public//x", .off), ("/public/x/..", .off),  // every reading stays under /public/**
            ("/public/x/../..", .monitor), ("/public/%2e%2e/status", .monitor), ("/public/..;/status", .monitor),
        ]
        for (path, requirement) in expected {
            #expect(policy.requirement(method: .get, path: path).signature == requirement, "\(path)")
        }
        #expect(policy.requirement(method: .post, path: "/status").signature == .monitor)
    }
}
