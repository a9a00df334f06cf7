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
/// slashes, Tomcat drops `;` parameters before it resolves `..`, Apache may keep `%2F`, a router
/// on the raw path keeps `..`, IIS reads `\` as `/` and ignores case), so a path is given the
/// **strictest** requirement among every way an upstream could read it (`PathPattern.readings`:
/// each of those steps taken both ways, at the level of bytes). `/public/..;/admin` cannot borrow
/// `/public/**`'s rule from a `/admin/**` that requires more, and a path whose readings fall
/// under different rules never gets less than the fallback.
public struct RoutePolicy: Sendable, Equatable {
    public struct Rule: Sendable, Equatable, CustomStringConvertible {
        /// The methods the rule applies to; empty for every method.
        public var methods: Set<HTTPRequest.Method>
        public var pattern: PathPattern
        public var requirements: RouteRequirements
        /// `requirements.signature`.
        public var signature: SignatureRequirement {
            get { requirements.signature }
            set { requirements.signature = newValue }
        }

        public init(methods: Set<HTTPRequest.Method> = [], pattern: PathPattern, requirements: RouteRequirements) {
            self.methods = methods
            self.pattern = pattern
            self.requirements = requirements
        }

        /// A rule from its written form: `"/health"`, `"GET /api/**"`, `"GET,HEAD /files/*"`,
        /// with what it requires (`.require`, `.monitor`, `.off`, or a `RouteRequirements` value).
        public init(_ route: String, _ requirements: RouteRequirements) throws(SignCoreError) {
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
            self.init(methods: methods, pattern: try PathPattern(String(path)), requirements: requirements)
        }

        /// The written form, as it appears in logs (a route pattern, never a request's path).
        public var description: String {
            methods.isEmpty ? pattern.text : methods.map(\.rawValue).sorted().joined(separator: ",") + " " + pattern.text
        }

        func matches(_ method: HTTPRequest.Method, _ segments: [[UInt8]], folded: Bool = false) -> Bool {
            (methods.isEmpty || methods.contains(method)) && pattern.matches(segments, folded: folded)
        }
    }

    public var rules: [Rule] { didSet { setsFlowRequirements = Self.setsFlowRequirements(rules, fallback) } }
    /// What every request no rule matches gets.
    public var fallback: RouteRequirements { didSet { setsFlowRequirements = Self.setsFlowRequirements(rules, fallback) } }
    /// Whether a rule or the fallback sets a flow's requirement: then every reading of a path is
    /// read, to meet the strictest of each (else reading stops once `require` and two rules are found).
    private var setsFlowRequirements: Bool

    public init(_ rules: [Rule] = [], fallback: RouteRequirements = .require) {
        self.rules = rules
        self.fallback = fallback
        setsFlowRequirements = Self.setsFlowRequirements(rules, fallback)
    }

    private static func setsFlowRequirements(_ rules: [Rule], _ fallback: RouteRequirements) -> Bool {
        (rules.map(\.requirements) + [fallback]).contains { $0 != RouteRequirements(signature: $0.signature, body: $0.body) }
    }

    /// Every request verified and refused when it fails.
    public static let requireAll = RoutePolicy()

    /// The requirement for a request, and the route that decided it (the matching rule's written
    /// form, or `*` for the fallback): `path` is the request target's path, with or without its query.
    public func requirement(method: HTTPRequest.Method, path: some StringProtocol) -> (signature: SignatureRequirement, route: String) {
        let decision = decision(method: method, path: path)
        return (decision.signature, decision.route)
    }

    /// What the policy decides for a request, and whether its path reads under more than one rule.
    public struct Decision: Sendable, Equatable {
        /// What the request must meet: the deciding rule's, each requirement raised to the
        /// strictest of every rule a reading of the path falls under.
        public var requirements: RouteRequirements
        /// The deciding rule's written form, `*` for the fallback.
        public var route: String
        /// The path is not in plain form and its readings fall under different rules (or it is
        /// too long to read every way, or holds escapes some server decodes into a separator, a
        /// control byte or invalid UTF-8): no rule's own settings should apply to it, and its
        /// `requirements` have no body handling of their own.
        public var ambiguous: Bool

        public init(requirements: RouteRequirements, route: String, ambiguous: Bool) {
            self.requirements = requirements
            self.route = route
            self.ambiguous = ambiguous
        }

        /// `requirements.signature`.
        public var signature: SignatureRequirement { requirements.signature }
    }

    /// The strictest requirement among every reading of the path (`PathPattern.readings`); for
    /// an ambiguous path, never less than the fallback.
    public func decision(method: HTTPRequest.Method, path: some StringProtocol) -> Decision {
        guard !rules.isEmpty else { return Decision(requirements: fallback, route: "*", ambiguous: false) }
        let bytes = PathPattern.pathBytes(of: path)
        let plain = PathPattern.plainSegments(of: bytes)
        guard plain != nil || PathPattern.isReadable(bytes) else {
            // Too long to read every way: the strictest of every rule that could apply to it at all.
            var route = "*"
            var requirements = fallback
            for rule in rules where rule.methods.isEmpty || rule.methods.contains(method) {
                if rule.signature.strictness > requirements.signature.strictness { route = rule.description }
                requirements = requirements.strictest(with: rule.requirements)
            }
            requirements.body = nil
            return Decision(requirements: requirements, route: route, ambiguous: true)
        }
        let readings = plain.map { [$0] } ?? PathPattern.readings(of: bytes)
        // Case decides only when a reading or a pattern has an upper-case letter.
        let patternsHaveUpperCase = rules.contains { $0.pattern.hasUpperCase }
        var strictest: (requirements: RouteRequirements, route: String)?
        var all: RouteRequirements?
        var decided = Set<String>()
        // Done once `require` is found and the path is known to read under two rules (unless a
        // flow's requirements are set, which every reading must then be read for).
        for resolved in readings where setsFlowRequirements || strictest?.requirements.signature != .require || decided.count < 2 {
            let caseMatters = patternsHaveUpperCase || resolved.contains { $0.contains { (0x41...0x5A).contains($0) } }
            for folded in caseMatters ? [false, true] : [false] {
                let candidate = first(method, folded ? resolved.map(PathPattern.asciiLowercased) : resolved, folded: folded)
                decided.insert(candidate.route)
                all = all?.strictest(with: candidate.requirements) ?? candidate.requirements
                if candidate.requirements.signature.strictness > strictest?.requirements.signature.strictness ?? -1 { strictest = candidate }
            }
        }
        let chosen = strictest ?? (fallback, "*")
        // A path not in plain form read under different rules (or not absolute, or with escapes
        // some server decodes into what ends or hides a segment): never less than the fallback,
        // whatever way of reading it was not foreseen here.
        let ambiguous = plain == nil
            && (decided.count > 1 || bytes.first != UInt8(ascii: "/") || PathPattern.hasTreacherousEscapes(bytes))
        if decided.count == 1 && !ambiguous { return Decision(requirements: chosen.requirements, route: chosen.route, ambiguous: false) }
        // Read under several rules: each requirement at the strictest of them (and of the fallback
        // when ambiguous), the body handling the chosen rule's only when the path is plain (case
        // alone told the rules apart).
        var requirements = all ?? chosen.requirements
        if ambiguous { requirements = requirements.strictest(with: fallback) } else { requirements.body = chosen.requirements.body }
        let route = ambiguous && fallback.signature.strictness > chosen.requirements.signature.strictness ? "*" : chosen.route
        return Decision(requirements: requirements, route: route, ambiguous: ambiguous)
    }

    /// The first rule matching `segments` (compared case-folded when `folded`), else the fallback.
    private func first(_ method: HTTPRequest.Method, _ segments: [[UInt8]], folded: Bool) -> (requirements: RouteRequirements, route: String) {
        for rule in rules where rule.matches(method, segments, folded: folded) {
            return (rule.requirements, rule.description)
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

/// A path pattern: `/`-separated segments, each literal, `*` (exactly one non-empty segment) or,
/// last, `**` (any number of segments, none included). Case-sensitive, compared byte for byte
/// with the request's path as received (percent-encoding included) and as upstreams resolve it.
public struct PathPattern: Sendable, Equatable {
    public let text: String
    let segments: [[UInt8]]
    /// The segments in ASCII lower case, for paths compared as a case-insensitive server would.
    let foldedSegments: [[UInt8]]

    /// At most this many characters: a pattern is configuration, not data.
    public static let maxLength = 1024

    public init(_ text: String) throws(SignCoreError) {
        guard text.utf8.count <= Self.maxLength, text.utf8.first == UInt8(ascii: "/") else {
            throw SignCoreError(.invalidConfiguration, "a path pattern starts with / and has at most \(Self.maxLength) characters")
        }
        guard let segments = Self.plainSegments(of: Array(text.utf8)) else {
            throw SignCoreError(.invalidConfiguration,
                                "a path pattern has no empty, . or .. segments, no %, \\ or ; and only visible ASCII characters")
        }
        for (index, segment) in segments.enumerated() {
            if segment == Self.anySegments, index != segments.count - 1 {
                throw SignCoreError(.invalidConfiguration, "** may only end a path pattern")
            }
            if segment != Self.oneSegment, segment != Self.anySegments, segment.contains(UInt8(ascii: "*")) {
                throw SignCoreError(.invalidConfiguration, "* stands for a whole segment in a path pattern")
            }
        }
        self.text = text
        self.segments = segments
        self.foldedSegments = segments.map(Self.asciiLowercased)
    }

    static let oneSegment = Array("*".utf8)
    static let anySegments = Array("**".utf8)

    var hasUpperCase: Bool { foldedSegments != segments }

    public static func == (a: PathPattern, b: PathPattern) -> Bool { a.text == b.text }

    func matches(_ path: [[UInt8]], folded: Bool = false) -> Bool {
        var index = 0
        for segment in folded ? foldedSegments : segments {
            if segment == Self.anySegments { return true }
            // An empty segment (a reading that keeps `//`) is no `*`: no router gives a route
            // parameter an empty value.
            guard index < path.count, segment == Self.oneSegment ? !path[index].isEmpty : segment == path[index] else { return false }
            index += 1
        }
        return index == path.count
    }

    static func asciiLowercased(_ bytes: [UInt8]) -> [UInt8] { bytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 } }

    /// The path's bytes up to its query or fragment: cut at the byte, whatever follows it (a
    /// `?` followed by a combining mark is one Swift Character, never one byte).
    static func pathBytes(of path: some StringProtocol) -> [UInt8] {
        Array(path.utf8.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") })
    }

    /// The segments of a path in plain form, which every server reads one way, or nil: it
    /// starts with `/` and has only visible ASCII bytes, none of `%`, `\` or `;`, no empty
    /// segment but a trailing one, no `.` or `..` segment. `/` alone is no segments; a trailing
    /// `/` is an empty last segment (`/dir/` differs from `/dir`).
    static func plainSegments(of bytes: [UInt8]) -> [[UInt8]]? {
        guard bytes.first == UInt8(ascii: "/") else { return nil }
        if bytes.count == 1 { return [] }
        guard !bytes.contains(where: { $0 <= 0x20 || $0 >= 0x7F || $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: ";") })
        else { return nil }
        let segments = bytes.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Array.init)
        for (index, segment) in segments.enumerated() {
            if segment == [0x2E] || segment == [0x2E, 0x2E] { return nil }
            if segment.isEmpty, index != segments.count - 1 { return nil }
        }
        return segments
    }

    /// Paths up to this many bytes and segments are read every way (`readings`: at most 96
    /// readings); a longer one that is not plain gets the strictest rule for its method.
    static let maxReadableBytes = 1024
    static let maxReadableSegments = 64

    static func isReadable(_ bytes: [UInt8]) -> Bool {
        bytes.count <= maxReadableBytes && bytes.lazy.filter { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\") }.count <= maxReadableSegments
    }

    /// `%u` (IIS's UTF-16 escapes), an escape that decodes, once or twice, to `%`, `?`, `#`, a
    /// control byte, or bytes that are not UTF-8 (what some server reads as a separator, a second
    /// escape, the end of a C string, or an overlong `.` or `/`), or, with escapes, a segment that
    /// ends in a space or a dot once decoded (which Windows servers trim).
    static func hasTreacherousEscapes(_ bytes: [UInt8]) -> Bool {
        guard bytes.contains(UInt8(ascii: "%")) else { return false }
        for index in bytes.indices.dropLast() where bytes[index] == UInt8(ascii: "%") && (bytes[index + 1] | 0x20) == UInt8(ascii: "u") {
            return true
        }
        let once = decoded(bytes, .all)
        if once.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { return true }
        // A segment ending in an encoded space or dot (`..%20`, `admin%2e`): Windows servers trim
        // those, so `..%20` is `..` there.
        if once.split(separator: UInt8(ascii: "/")).contains(where: { $0.last == 0x20 || ($0.last == 0x2E && !$0.allSatisfy { $0 == 0x2E }) }) {
            return true
        }
        if once.contains(UInt8(ascii: "%")), decoded(once, .all) != once { return true }
        return String(validating: once, as: UTF8.self) == nil
    }

    /// How an upstream may take each step of resolving a path.
    enum Decoding: CaseIterable { case none, unreserved, allButSlash, all }
    enum Parameters: CaseIterable { case kept, droppedBeforeDecoding, droppedAfterDecoding }

    /// Every way an upstream could resolve a path not in plain form, as segments: percent-escapes
    /// kept, decoded for unreserved characters only, for all but `%2F` (Apache's `NoDecode`) or
    /// for all (nginx, Tomcat); `\` kept as data (nginx, Tomcat) or read as `/` (IIS); `;`
    /// parameters kept, or dropped from each segment before (Tomcat) or after decoding; repeated
    /// slashes merged (nginx, Apache) or kept (RFC 3986 §5.2.4 as written, Envoy, WHATWG URL
    /// parsers); dot segments removed (RFC 3986 §5.2.4, never above the root) or kept (a router on
    /// the raw path). A step that cannot change this path is taken one way only; the readings
    /// are distinct. (Case is the caller's: `RoutePolicy.requirement` folds ASCII.)
    static func readings(of path: [UInt8]) -> [[[UInt8]]] {
        // A target that is not an absolute path (no server resolves one) is read as if it were.
        let bytes = path.first == UInt8(ascii: "/") ? path : [UInt8(ascii: "/")] + path
        func has(_ byte: UInt8) -> Bool { bytes.contains(byte) }
        let escapes = has(UInt8(ascii: "%"))
        let backslashes = escapes || has(UInt8(ascii: "\\"))
        let parameters = escapes || has(UInt8(ascii: ";"))
        // Dropping `/;/`'s parameter, decoding `%2F` or reading `\` as `/` can make `//`.
        let slashes = parameters || backslashes || bytes.indices.dropFirst().contains { bytes[$0] == 0x2F && bytes[$0 - 1] == 0x2F }
        let dots = escapes || has(UInt8(ascii: "."))
        var seen = Set<[[UInt8]]>()
        var results: [[[UInt8]]] = []
        for decoding in escapes ? Decoding.allCases : [.none] {
            for backslashIsSlash in backslashes ? [false, true] : [false] {
                for dropping in parameters ? Parameters.allCases : [.kept] {
                    for merges in slashes ? [false, true] : [false] {
                        for removesDots in dots ? [false, true] : [false] {
                            let reading = resolve(bytes, decoding: decoding, backslashIsSlash: backslashIsSlash, parameters: dropping,
                                                  mergesSlashes: merges, removesDots: removesDots)
                            if seen.insert(reading).inserted { results.append(reading) }
                        }
                    }
                }
            }
        }
        return results
    }

    /// One reading of `path` (starting with `/`): `/` is no segment, a trailing `/` an empty last one.
    static func resolve(_ path: [UInt8], decoding: Decoding, backslashIsSlash: Bool, parameters: Parameters,
                        mergesSlashes: Bool, removesDots: Bool) -> [[UInt8]] {
        let slash = UInt8(ascii: "/"), backslash = UInt8(ascii: "\\")
        var bytes = path
        if backslashIsSlash { bytes = bytes.map { $0 == backslash ? slash : $0 } }
        if parameters == .droppedBeforeDecoding { bytes = droppingParameters(bytes) }
        bytes = decoded(bytes, decoding)
        if backslashIsSlash { bytes = bytes.map { $0 == backslash ? slash : $0 } }
        if parameters == .droppedAfterDecoding { bytes = droppingParameters(bytes) }
        var parts = bytes.split(separator: slash, omittingEmptySubsequences: false).map(Array.init)
        if !parts.isEmpty { parts.removeFirst() }  // before the leading `/`
        if mergesSlashes { parts = parts.enumerated().filter { !$0.element.isEmpty || $0.offset == parts.count - 1 }.map(\.element) }
        var stack: [[UInt8]] = []
        for (index, part) in parts.enumerated() {
            if removesDots, part == [0x2E] || part == [0x2E, 0x2E] {
                if part.count == 2 { _ = stack.popLast() }
                if index == parts.count - 1 { stack.append([]) }  // `/a/b/..` is `/a/`
                continue
            }
            stack.append(part)
        }
        return stack == [[]] ? [] : stack
    }

    /// Each `;` up to the next `/` dropped: `/a;x=1/b;y` is `/a/b`.
    static func droppingParameters(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var inParameters = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") { inParameters = false } else if byte == UInt8(ascii: ";") { inParameters = true }
            if !inParameters { out.append(byte) }
        }
        return out
    }

    /// `%XX` of two hex digits decoded as `decoding` says; anything else kept as it is.
    static func decoded(_ bytes: [UInt8], _ decoding: Decoding) -> [UInt8] {
        guard decoding != .none else { return bytes }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: byte - 0x30
            case 0x41...0x46: byte - 0x41 + 10
            case 0x61...0x66: byte - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                let byte = high << 4 | low
                let decodes = switch decoding {
                case .none: false
                case .unreserved: isUnreserved(byte)
                case .allButSlash: byte != UInt8(ascii: "/")
                case .all: true
                }
                if decodes {
                    out.append(byte)
                    index += 3
                    continue
                }
            }
            out.append(bytes[index])
            index += 1
        }
        return out
    }

    /// RFC 3986 §2.3.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }
}
