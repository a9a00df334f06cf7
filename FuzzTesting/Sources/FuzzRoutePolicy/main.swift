import FuzzCommon
import HTTPTypes
import SignCore
import SignHTTP

/// `RoutePolicy.requirement(method:path:)` on any path, against a second reading of the path
/// written here as upstreams resolve one, step by step and each step either way: percent-escapes
/// kept, decoded for unreserved characters only, for all but `%2F` (Apache's `NoDecode`) or for
/// all (nginx, Tomcat); `\` kept as data (nginx, Tomcat) or read as `/` (IIS); `;` parameters
/// kept, or dropped from each segment before (Tomcat) or after decoding; repeated slashes merged
/// (nginx, Apache) or kept (RFC 3986 §5.2.4 as written, Envoy, WHATWG URL parsers); dot segments
/// removed (RFC 3986 §5.2.4) or kept (a router on the raw path, Hummingbird's included); compared
/// as is or ASCII case-folded (IIS). The requirement of the path as received is never laxer
/// (off < monitor < require) than the requirement of any reading, under fallbacks off, monitor
/// and require.
///
/// Input: one byte (bit 0: POST instead of GET), then the path, with or without a query.
let routes: [(route: String, signature: SignatureRequirement)] = [
    ("/public/**", .off), ("/admin/**", .require), ("/api/*/items", .monitor), ("POST /Reports/**", .require),
]
let policies: [RoutePolicy] = [SignatureRequirement.off, .monitor, .require].map { fallback in
    do {
        return RoutePolicy(try routes.map { (route, signature) throws(SignCoreError) in try RoutePolicy.Rule(route, RouteRequirements(signature: signature)) },
                           fallback: RouteRequirements(signature: fallback))
    } catch {
        fatalError("fixed policy: \(error)")
    }
}

/// A flow's requirement on the same rules (an attestation level, say): a path must meet the
/// highest level of any rule a reading of it falls under, whatever its signature requirement.
enum Clearance: RouteRequirement {
    static let defaultValue = 0
    static func strictest(_ a: Int, _ b: Int) -> Int { max(a, b) }
}
let levels = [0, 3, 1, 2]  // by route, in `routes`' order; the fallback's is 0
let leveled: RoutePolicy = {
    do {
        return RoutePolicy(try zip(routes, levels).map { (route, level) throws(SignCoreError) in
            var requirements = RouteRequirements(signature: route.signature)
            requirements[Clearance.self] = level
            return try RoutePolicy.Rule(route.route, requirements)
        }, fallback: .off)
    } catch {
        fatalError("fixed policy: \(error)")
    }
}()

/// The same rules, read here: methods (empty for all) and pattern segments as bytes.
struct Rule {
    var methods: [String]
    var segments: [[UInt8]]
    var signature: SignatureRequirement
    var level: Int
}
let rules: [Rule] = zip(routes, levels).map { route, level in
    let parts = route.route.split(separator: " ")
    let methods = parts.count == 2 ? parts[0].split(separator: ",").map(String.init) : []
    return Rule(methods: methods, segments: parts.last!.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Array.init),
                signature: route.signature, level: level)
}
let patternsHaveUpperCase = rules.contains { $0.segments.contains { $0.contains { (0x41...0x5A).contains($0) } } }

func strictness(_ requirement: SignatureRequirement) -> Int {
    switch requirement {
    case .off: 0
    case .monitor: 1
    case .require: 2
    }
}

func lowered(_ bytes: [UInt8]) -> [UInt8] { bytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 } }

/// `*` is one segment, `**` last is any number of segments. An empty segment (a reading that
/// keeps `//`) is no `*`: an upstream's router gives no route parameter an empty value.
func matches(_ pattern: [[UInt8]], _ path: [[UInt8]], folded: Bool) -> Bool {
    var index = 0
    for segment in pattern {
        if segment == Array("**".utf8) { return true }
        guard index < path.count else { return false }
        let one = segment == Array("*".utf8) ? !path[index].isEmpty : folded ? lowered(segment) == lowered(path[index]) : segment == path[index]
        guard one else { return false }
        index += 1
    }
    return index == path.count
}

func requirement(_ method: String, _ path: [[UInt8]], folded: Bool, fallback: SignatureRequirement) -> SignatureRequirement {
    firstRule(method, path, folded: folded)?.signature ?? fallback
}

func firstRule(_ method: String, _ path: [[UInt8]], folded: Bool) -> Rule? {
    rules.first { ($0.methods.isEmpty || $0.methods.contains(method)) && matches($0.segments, path, folded: folded) }
}

enum Decoding: CaseIterable { case none, unreserved, allButSlash, all }
enum Parameters: CaseIterable { case kept, droppedBeforeDecoding, droppedAfterDecoding }

/// One way of resolving a path, each step either way.
struct Reading {
    var decoding: Decoding
    var backslashIsSlash: Bool
    var parameters: Parameters
    var mergesSlashes: Bool
    var removesDots: Bool

    /// The steps of some readings, each with the ways they take it: "escapes none|unreserved, ...".
    static func summary(_ readings: [Reading]) -> String {
        func ways<T: Equatable>(_ step: (Reading) -> T, _ name: (T) -> String) -> String {
            var seen: [T] = []
            for reading in readings where !seen.contains(step(reading)) { seen.append(step(reading)) }
            return seen.map(name).joined(separator: "|")
        }
        return "escapes " + ways(\.decoding) { "\($0)" } + ", \\ " + ways(\.backslashIsSlash) { $0 ? "as /" : "as data" }
            + ", ; parameters " + ways(\.parameters) { "\($0)" } + ", slashes " + ways(\.mergesSlashes) { $0 ? "merged" : "kept" }
            + ", dot segments " + ways(\.removesDots) { $0 ? "removed" : "kept" }
    }

    /// Every way of reading `path`, leaving out the steps that cannot change it (no `%`: no
    /// decoding; no `\` or `%`: no backslash; no `;` or `%`: no parameters).
    static func all(for path: [UInt8]) -> [Reading] {
        let escapes = path.contains(UInt8(ascii: "%"))
        let backslashes = escapes || path.contains(UInt8(ascii: "\\"))
        let parameters = escapes || path.contains(UInt8(ascii: ";"))
        return (escapes ? Decoding.allCases : [.none]).flatMap { decoding in
            (backslashes ? [false, true] : [false]).flatMap { backslash in
                (parameters ? Parameters.allCases : [.kept]).flatMap { parameters in
                    [false, true].flatMap { merges in
                        [false, true].map { removes in
                            Reading(decoding: decoding, backslashIsSlash: backslash, parameters: parameters, mergesSlashes: merges, removesDots: removes)
                        }
                    }
                }
            }
        }
    }

    /// The segments of `path` (up to its query or fragment, starting with `/`) read this way: `/`
    /// is no segment, a trailing `/` an empty last one.
    func segments(_ path: [UInt8]) -> [[UInt8]] {
        let slash = UInt8(ascii: "/")
        var bytes = path
        if backslashIsSlash { bytes = bytes.map { $0 == UInt8(ascii: "\\") ? slash : $0 } }
        if parameters == .droppedBeforeDecoding { bytes = Self.droppingParameters(bytes) }
        bytes = Self.decoded(bytes, decoding)
        if backslashIsSlash { bytes = bytes.map { $0 == UInt8(ascii: "\\") ? slash : $0 } }
        if parameters == .droppedAfterDecoding { bytes = Self.droppingParameters(bytes) }
        var parts = bytes.split(separator: slash, omittingEmptySubsequences: false).map(Array.init)
        parts.removeFirst()  // before the leading `/`
        if mergesSlashes { parts = parts.enumerated().filter { !$0.element.isEmpty || $0.offset == parts.count - 1 }.map(\.element) }
        var stack: [[UInt8]] = []
        for (index, part) in parts.enumerated() {
            let isLast = index == parts.count - 1
            if removesDots, part == [UInt8(ascii: ".")] || part == [UInt8(ascii: "."), UInt8(ascii: ".")] {
                if part.count == 2 { _ = stack.popLast() }
                if isLast { stack.append([]) }  // `/a/b/..` is `/a/`
                continue
            }
            stack.append(part)
        }
        return stack == [[]] ? [] : stack
    }

    /// Each `;` up to the next `/` dropped: `/a;x=1/b;y` is `/a/b`.
    static func droppingParameters(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var inParameters = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") { inParameters = false } else if byte == UInt8(ascii: ";") { inParameters = true }
            if !inParameters { out.append(byte) }
        }
        return out
    }

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
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                let byte = high << 4 | low
                let unreserved = (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
                let decodes = switch decoding {
                case .none: false
                case .unreserved: unreserved
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
}

func shown(_ segments: [[UInt8]]) -> String { ("/" + segments.map { Fuzz.string($0) }.joined(separator: "/")).debugDescription }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRoutePolicy(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    guard let flags = input.first else { return 0 }
    let method: HTTPRequest.Method = flags & 1 == 0 ? .get : .post
    let path = Fuzz.string(Array(input.dropFirst()))
    let bytes = Array(path.utf8.prefix { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") })
    // A target that is not an absolute path is no path an upstream resolves (RFC 9112 §3.2: a 400).
    guard bytes.first == UInt8(ascii: "/") else { return 0 }
    // Each distinct reading once, with every way that gives it.
    var readings: [(segments: [[UInt8]], ways: [Reading])] = []
    for reading in Reading.all(for: bytes) {
        let segments = reading.segments(bytes)
        if let index = readings.firstIndex(where: { $0.segments == segments }) { readings[index].ways.append(reading) } else {
            readings.append((segments, [reading]))
        }
    }
    for policy in policies {
        let given = policy.requirement(method: method, path: path).signature
        guard given != .require else { continue }
        var stricter: [String] = []
        for (segments, ways) in readings {
            let caseMatters = patternsHaveUpperCase || segments.contains { $0.contains { (0x41...0x5A).contains($0) } }
            for folded in caseMatters ? [false, true] : [false] {
                let read = requirement(method.rawValue, segments, folded: folded, fallback: policy.fallback.signature)
                if strictness(read) > strictness(given) {
                    stricter.append("\(shown(segments))\(folded ? " case-folded" : "") gets \(read) (\(Reading.summary(ways)))")
                    break  // folded, it would say the same
                }
            }
        }
        guard stricter.isEmpty else {
            Fuzz.broken("\(method.rawValue) \(path.debugDescription) gets \(given) (fallback \(policy.fallback)), but read as "
                + stricter.prefix(3).joined(separator: "; as ") + (stricter.count > 3 ? "; and \(stricter.count - 3) more readings" : ""))
        }
    }
    // A flow's requirement: at least the level of every rule a reading falls under.
    let level = leveled.decision(method: method, path: path).requirements[Clearance.self]
    for (segments, ways) in readings {
        let caseMatters = patternsHaveUpperCase || segments.contains { $0.contains { (0x41...0x5A).contains($0) } }
        for folded in caseMatters ? [false, true] : [false] {
            let read = firstRule(method.rawValue, segments, folded: folded)?.level ?? 0
            if read > level {
                Fuzz.broken("\(method.rawValue) \(path.debugDescription) gets clearance \(level), but read as \(shown(segments))"
                    + "\(folded ? " case-folded" : "") it needs \(read) (\(Reading.summary(ways)))")
            }
        }
    }
    return 0
}
