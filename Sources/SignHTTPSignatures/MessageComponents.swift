import Foundation
import HTTPTypes
import RawStructuredFieldValues
import SignCore
import SignHTTP

/// What a signature's components are taken from (RFC 9421 §2): a request as its signer sent it
/// or a server received it, or a response with the request it answers.
public struct MessageComponents: Sendable {
    /// The request's parts; for a response, the request it answers (read through `req`), if known.
    public var request: RequestParts?
    /// A response's status; nil for a request.
    public var status: Int?
    /// The message's own header fields.
    public var fields: HTTPFields

    public struct RequestParts: Sendable {
        /// The method as sent (RFC 9421 §2.2.1: case-sensitive).
        public var method: String
        /// Lower case (§2.2.4).
        public var scheme: String
        /// `host[:port]` as addressed.
        public var authority: String
        /// The origin-form target: the path, then `?` and the query when there is one.
        public var target: String
        public var fields: HTTPFields

        public init(method: String, scheme: String, authority: String, target: String, fields: HTTPFields) {
            self.method = method
            self.scheme = scheme.lowercased()
            self.authority = authority
            self.target = target
            self.fields = fields
        }

        /// The request as a server received it: the scheme and, when fixed, the authority from
        /// `origin`, else the request's `:authority` (both checked as `ReceivedRequest` checks
        /// them, so the target verified is the one forwarded).
        public init(_ request: HTTPRequest, origin: ServerOrigin) throws(SignCoreError) {
            let (authority, target) = try origin.addressed(request)
            // The request's own authority is read even when the origin fixes one, and a `%` must
            // begin an escape: what no server reads alike is refused (docs/HTTPSIG.md §2.3).
            if origin.authority != nil, let received = request.authority { try ServerOrigin.validate(authority: received) }
            let bytes = Array(target.utf8)
            for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else {
                    throw SignCoreError(.invalidURL, "the request target holds a % that begins no escape")
                }
            }
            self.init(method: request.method.rawValue, scheme: origin.scheme, authority: authority, target: target, fields: request.headerFields)
        }

        /// A request to be signed: its scheme, authority and target from `request`'s pseudo-fields.
        public init(signing request: HTTPRequest) throws(SignCoreError) {
            guard let scheme = request.scheme, let authority = request.authority, let path = request.path else {
                throw SignCoreError(.invalidURL, "a request to sign names its scheme, authority and path")
            }
            try ServerOrigin.validate(authority: authority)
            try ServerOrigin.validate(target: path)
            self.init(method: request.method.rawValue, scheme: scheme, authority: authority, target: path, fields: request.headerFields)
        }

        var path: Substring { target.prefix { $0 != "?" } }
        var query: Substring? { target.firstIndex(of: "?").map { target[target.index(after: $0)...] } }

        /// §2.2.3: the host in lower case, the scheme's default port left out.
        var normalizedAuthority: String {
            let lower = authority.lowercased()
            let defaultPort = scheme == "https" ? ":443" : scheme == "http" ? ":80" : nil
            if let defaultPort, lower.hasSuffix(defaultPort) { return String(lower.dropLast(defaultPort.count)) }
            return lower
        }
    }

    public init(request: RequestParts) {
        self.request = request
        self.status = nil
        self.fields = request.fields
    }

    public init(status: Int, fields: HTTPFields, request: RequestParts? = nil) {
        self.request = request
        self.status = status
        self.fields = fields
    }

    public var isResponse: Bool { status != nil }

    /// The component's value (RFC 9421 §2.1, §2.2; docs/HTTPSIG.md §2.3). `componentMissing`
    /// when the message lacks it; `componentInvalid` when it cannot be read as its parameters ask.
    public func value(of component: ComponentIdentifier) throws(SignCoreError) -> String {
        if component.request {
            guard isResponse else { throw ComponentIdentifier.invalid("req in a request's signature") }
            guard let request else { throw Self.missing("the request a response answers") }
            return try MessageComponents(request: request).ownValue(of: component)
        }
        return try ownValue(of: component)
    }

    private func ownValue(of component: ComponentIdentifier) throws(SignCoreError) -> String {
        guard component.isDerived else { return try fieldValue(of: component, in: fields) }
        if component.name == "@status" {
            guard let status else { throw Self.missing("@status in a request") }
            return String(status)
        }
        guard !isResponse else { throw ComponentIdentifier.invalid("a request's derived component in a response without req") }
        guard let request else { throw Self.missing("the request") }
        switch component.name {
        case "@method": return request.method
        case "@target-uri": return request.scheme + "://" + request.normalizedAuthority + request.target
        case "@authority": return request.normalizedAuthority
        case "@scheme": return request.scheme
        case "@request-target": return request.target
        case "@path": return request.path.isEmpty ? "/" : String(request.path)
        case "@query": return "?" + (request.query.map(String.init) ?? "")
        default: return try Self.queryParameter(component.parameterName ?? "", in: request.query)
        }
    }

    /// §2.1: each field line's value without surrounding spaces and tabs, joined with `, `; with
    /// `sf` re-serialised, with `key` one dictionary member, with `bs` each line a byte sequence.
    private func fieldValue(of component: ComponentIdentifier, in fields: HTTPFields) throws(SignCoreError) -> String {
        guard let name = HTTPField.Name(component.name) else { throw ComponentIdentifier.invalid("a field name") }
        let lines = fields[values: name].map(Self.trimmed)
        guard !lines.isEmpty else { throw Self.missing("a field") }
        if component.byteSequence {
            return lines.map { ":" + Data($0.utf8).base64EncodedString() + ":" }.joined(separator: ", ")
        }
        let combined = lines.joined(separator: ", ")
        if let key = component.key {
            let dictionary = try StructuredFieldTypes.dictionary(combined)
            guard let member = dictionary[key] else { throw Self.missing("a dictionary member") }
            return try StructuredFieldTypes.serialize([member])
        }
        if component.structured { return try StructuredFieldTypes.reserialize(combined, field: component.name) }
        return combined
    }

    /// §2.2.8: the query's parameters decoded as application/x-www-form-urlencoded; the one whose
    /// decoded name is the decoded `name`, its value re-encoded (every byte but ALPHA, DIGIT and
    /// `*-._` as `%XX`, upper-case hex). A parameter that is absent is `componentMissing`; one
    /// that occurs more than once is `componentInvalid` (which value was signed is not said).
    static func queryParameter(_ name: String, in query: Substring?) throws(SignCoreError) -> String {
        let wanted = formDecode(Substring(name))
        var found: [UInt8]?
        for pair in (query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: "=")
            guard formDecode(equals.map { pair[..<$0] } ?? pair) == wanted else { continue }
            guard found == nil else { throw ComponentIdentifier.invalid("a query parameter that occurs more than once") }
            found = equals.map { formDecode(pair[pair.index(after: $0)...]) } ?? []
        }
        guard let found else { throw missing("the query parameter") }
        return formEncode(found)
    }

    /// `+` as a space, `%XX` as its byte; a `%` not followed by two hex digits stays as it is.
    static func formDecode(_ text: Substring) -> [UInt8] {
        let bytes = Array(text.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                decoded.append(0x20)
            } else if byte == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                decoded.append(high << 4 | low)
                index += 2
            } else {
                decoded.append(byte)
            }
            index += 1
        }
        return decoded
    }

    static func formEncode(_ bytes: [UInt8]) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                encoded.append(byte)
            default:
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func trimmed(_ value: String) -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        let bytes = value.utf8
        guard let first = bytes.first, let last = bytes.last, isSpace(first) || isSpace(last) else { return value }
        let start = bytes.firstIndex { !isSpace($0) } ?? bytes.endIndex
        let end = bytes.lastIndex { !isSpace($0) }.map { bytes.index(after: $0) } ?? start
        return start < end ? String(value[start..<end]) : ""
    }

    static func missing(_ what: String) -> SignCoreError { SignCoreError(.componentMissing, "a covered component is not in the message: \(what)") }
}

private extension UInt8 {
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}
