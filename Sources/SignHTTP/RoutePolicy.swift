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
/// Servers resolve one path in different ways (nginx decodes percent-escapes and merges
/// slashes, Tomcat drops `;` parameters before it resolves `..`, IIS ignores case), so a path is
/// given the **strictest** requirement among every way an upstream could read it: as received,
/// and resolved (`PathPattern.resolutions`: escapes decoded, `\` as `/`, repeated slashes merged,
/// dot segments removed, with and without `;` parameters, and case-folded). `/public/..;/admin`
/// cannot borrow `/public/**`'s rule from a `/admin/**` that requires more, and a path not in
/// plain form never gets less than the fallback.
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

        func matches(_ method: HTTPRequest.Method, _ segments: [Substring], folded: Bool = false) -> Bool {
            (methods.isEmpty || methods.contains(method)) && pattern.matches(segments, folded: folded)
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
        guard !rules.isEmpty else { return (fallback, "*") }
        var strictest: (signature: SignatureRequirement, route: String)
        var readings = PathPattern.resolutions(of: path)
        if let segments = PathPattern.plainSegments(of: path) {
            strictest = first(method, segments, folded: false)
            readings.append(segments)  // read folded below, where case can matter
        } else {
            strictest = (fallback, "*")
        }
        // Case decides only when a reading or a pattern has an upper-case letter.
        let patternsHaveUpperCase = rules.contains { $0.pattern.hasUpperCase }
        for resolved in readings where strictest.signature != .require {
            let caseMatters = patternsHaveUpperCase || resolved.contains { $0.utf8.contains { (0x41...0x5A).contains($0) } }
            for folded in caseMatters ? [false, true] : [false] {
                let candidate = first(method, folded ? resolved.map { Substring($0.lowercased()) } : resolved, folded: folded)
                if candidate.signature.strictness > strictest.signature.strictness { strictest = candidate }
            }
        }
        return strictest
    }

    /// The first rule matching `segments` (compared case-folded when `folded`), else the fallback.
    private func first(_ method: HTTPRequest.Method, _ segments: [Substring], folded: Bool) -> (signature: SignatureRequirement, route: String) {
        for rule in rules where rule.matches(method, segments, folded: folded) {
            return (rule.signature, rule.description)
        }
        return (fallback, "*")
    }
}

extension SignatureRequirement {
    /// `require` over `monitor` over `off`.
    var strictness: Int {
        switch self {
        case .require: 2
        case .monitor: 1
        case .off: 0
        }
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
        self.foldedSegments = segments.map { Substring($0.lowercased()) }
    }

    /// The segments in lower case, for paths compared as a case-insensitive server would.
    let foldedSegments: [Substring]
    var hasUpperCase: Bool { foldedSegments != segments }

    func matches(_ path: [Substring], folded: Bool = false) -> Bool {
        var index = 0
        for segment in folded ? foldedSegments : segments {
            if segment == "**" { return true }
            guard index < path.count, segment == "*" || segment == path[index] else { return false }
            index += 1
        }
        return index == path.count
    }

    /// The paths an upstream could resolve `path` to, as segments: percent-escapes decoded
    /// (`%2F` and `%5C` included, as nginx does), `\` read as `/`, repeated slashes merged, `.`
    /// and `..` removed (RFC 3986 §5.2.4, never above the root); once keeping `;` parameters in
    /// their segment and once dropping them (Tomcat: `/a/..;/b` is `/b`). Empty for a plain path
    /// without `;`, which reads one way only.
    static func resolutions(of path: some StringProtocol) -> [[Substring]] {
        let path = Substring(path.prefix { $0 != "?" && $0 != "#" })
        let plain = !path.contains("%") && !path.contains("\\") && !path.contains(";") && !path.contains("//")
            && !path.split(separator: "/").contains { $0 == "." || $0 == ".." }
        if plain { return [] }
        let decoded = String(decoding: percentDecoded(Array(path.utf8)), as: UTF8.self).replacingOccurrences(of: "\\", with: "/")
        var results: [[Substring]] = []
        for dropParameters in [false, true] {
            var stack: [Substring] = []
            let parts = decoded.split(separator: "/", omittingEmptySubsequences: false)
            for (index, part) in parts.enumerated() {
                let segment = dropParameters ? (part.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? part) : part
                if segment == "." { continue }
                if segment == ".." { _ = stack.popLast(); continue }
                if segment.isEmpty, index != parts.count - 1 || stack.isEmpty { continue }  // merged slashes; a trailing one stays
                stack.append(segment)
            }
            if !results.contains(stack) { results.append(stack) }
        }
        return results
    }

    /// Every `%XX` of two hex digits decoded; anything else kept as it is.
    private static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
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
