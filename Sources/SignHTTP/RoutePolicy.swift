import HTTPTypes
import SignCore

/// What a route asks of a request's signature.
public enum SignatureRequirement: String, Sendable, Codable, CaseIterable {
    /// Verified; a request that fails is refused with its reason (SPEC §7.1).
    case require
    /// Verified and the verdict logged with its reason, but the request goes through whatever
    /// the verdict: for rolling signing out to clients before refusing anything (the seed WAF's
    /// Monitor action). A verified request still gets its identity.
    case monitor
    /// Not verified at all.
    case off
}

/// One place to read what is protected: rules of (methods, path pattern) → requirement, the
/// first matching rule wins, and `fallback` (by default `require`) covers every other request.
///
/// A path that is not in plain form (a `.` or `..` segment, an empty segment, a percent-encoded
/// `.`, `/` or `\`, a backslash) gets the fallback whatever the rules say: servers and proxies
/// resolve such paths differently, so `/public/../admin` must not borrow `/public/**`'s rule.
public struct RoutePolicy: Sendable, Equatable {
    public struct Rule: Sendable, Equatable, CustomStringConvertible {
        /// The methods the rule applies to; empty for every method.
        public var methods: Set<HTTPRequest.Method>
        public var pattern: PathPattern
        public var signature: SignatureRequirement

        public init(methods: Set<HTTPRequest.Method> = [], pattern: PathPattern, signature: SignatureRequirement) {
            self.methods = methods
            self.pattern = pattern
            self.signature = signature
        }

        /// A rule from its written form: `"/health"`, `"GET /api/**"`, `"GET,HEAD /files/*"`.
        public init(_ route: String, _ signature: SignatureRequirement) throws(SignCoreError) {
            let parts = route.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 1 || parts.count == 2, let path = parts.last else {
                throw SignCoreError(.invalidConfiguration, "a route is a path pattern, optionally after its methods: \"GET,HEAD /api/**\"")
            }
            var methods = Set<HTTPRequest.Method>()
            if parts.count == 2 {
                for name in parts[0].split(separator: ",", omittingEmptySubsequences: false) {
                    guard let method = HTTPRequest.Method(String(name)), name.allSatisfy({ $0.isUppercase || $0 == "-" }) else {
                        throw SignCoreError(.invalidConfiguration, "a route's methods are upper-case tokens separated by commas")
                    }
                    methods.insert(method)
                }
            }
            self.init(methods: methods, pattern: try PathPattern(String(path)), signature: signature)
        }

        /// The written form, as it appears in logs (a route pattern, never a request's path).
        public var description: String {
            methods.isEmpty ? pattern.text : methods.map(\.rawValue).sorted().joined(separator: ",") + " " + pattern.text
        }

        func matches(_ method: HTTPRequest.Method, _ segments: [Substring]) -> Bool {
            (methods.isEmpty || methods.contains(method)) && pattern.matches(segments)
        }
    }

    public var rules: [Rule]
    public var fallback: SignatureRequirement

    public init(_ rules: [Rule] = [], fallback: SignatureRequirement = .require) {
        self.rules = rules
        self.fallback = fallback
    }

    /// Every request verified and refused when it fails.
    public static let requireAll = RoutePolicy()

    /// The requirement for a request, and the route that decided it (the matching rule's written
    /// form, or `*` for the fallback): `path` is the request target's path, with or without its query.
    public func requirement(method: HTTPRequest.Method, path: some StringProtocol) -> (signature: SignatureRequirement, route: String) {
        guard !rules.isEmpty, let segments = PathPattern.plainSegments(of: path) else { return (fallback, "*") }
        for rule in rules where rule.matches(method, segments) {
            return (rule.signature, rule.description)
        }
        return (fallback, "*")
    }
}

/// A path pattern: `/`-separated segments, each literal, `*` (exactly one segment) or, last,
/// `**` (any number of segments, none included). Case-sensitive, compared with the request's
/// path as received (percent-encoding included).
public struct PathPattern: Sendable, Equatable {
    public let text: String
    let segments: [Substring]

    /// At most this many characters: a pattern is configuration, not data.
    public static let maxLength = 1024

    public init(_ text: String) throws(SignCoreError) {
        guard text.utf8.count <= Self.maxLength, text.utf8.first == UInt8(ascii: "/") else {
            throw SignCoreError(.invalidConfiguration, "a path pattern starts with / and has at most \(Self.maxLength) characters")
        }
        guard let segments = Self.plainSegments(of: text) else {
            throw SignCoreError(.invalidConfiguration, "a path pattern has no empty, . or .. segments and no encoded / . or \\")
        }
        for (index, segment) in segments.enumerated() {
            if segment == "**", index != segments.count - 1 {
                throw SignCoreError(.invalidConfiguration, "** may only end a path pattern")
            }
            if segment != "*", segment != "**", segment.contains("*") {
                throw SignCoreError(.invalidConfiguration, "* stands for a whole segment in a path pattern")
            }
        }
        self.text = text
        self.segments = segments
    }

    func matches(_ path: [Substring]) -> Bool {
        var index = 0
        for segment in segments {
            if segment == "**" { return true }
            guard index < path.count, segment == "*" || segment == path[index] else { return false }
            index += 1
        }
        return index == path.count
    }

    /// The segments of a path up to its query, or nil when it is not in plain form: not
    /// starting with `/`, an empty (`//`), `.` or `..` segment, a backslash, or a percent-encoded
    /// `.`, `/` or `\` anywhere. `/` alone is no segments; a trailing `/` is an empty last
    /// segment, which is allowed (`/dir/` differs from `/dir`).
    static func plainSegments(of path: some StringProtocol) -> [Substring]? {
        let path = Substring(path.prefix { $0 != "?" && $0 != "#" })
        guard path.utf8.first == UInt8(ascii: "/") else { return nil }
        if path.utf8.count == 1 { return [] }
        let lowered = path.utf8.contains(UInt8(ascii: "%")) ? path.lowercased() : ""
        if path.contains("\\") || lowered.contains("%2e") || lowered.contains("%2f") || lowered.contains("%5c") { return nil }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        for (index, segment) in segments.enumerated() {
            if segment == "." || segment == ".." { return nil }
            if segment.isEmpty, index != segments.count - 1 { return nil }
        }
        return segments
    }
}
