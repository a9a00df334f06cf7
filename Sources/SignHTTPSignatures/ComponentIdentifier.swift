import RawStructuredFieldValues
import SignCore

/// One covered component (RFC 9421 §2): a field name or a derived component (`@method`, …) with
/// the parameters that say how its value is taken (docs/HTTPSIG.md §2.2).
public struct ComponentIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// The lower-case field name, or the derived component's name with its `@`.
    public let name: String
    /// `sf`: the field's value re-serialised as the structured field it is (RFC 9421 §2.1.1).
    public let structured: Bool
    /// `key`: one member of a dictionary field (§2.1.2).
    public let key: String?
    /// `bs`: each field line as a byte sequence (§2.1.3).
    public let byteSequence: Bool
    /// `req`: in a response's signature, the component of the request it answers (§2.4).
    public let request: Bool
    /// `name`: the query parameter of `@query-param` (§2.2.8).
    public let parameterName: String?
    /// The parameters' written order, as `Signature-Input` had them: the base repeats it
    /// (docs/HTTPSIG.md §2.2). Not part of equality: the same parameters in another order name
    /// the same component.
    private var order: [String] = ["name", "sf", "key", "bs", "req"]

    /// The derived components of RFC 9421 §2.2 this profile reads (`@signature-params` is never covered).
    public static let derived: Set<String> = [
        "@method", "@target-uri", "@authority", "@scheme", "@request-target", "@path", "@query", "@query-param", "@status",
    ]

    public var isDerived: Bool { name.utf8.first == UInt8(ascii: "@") }

    /// Whether this covers a whole field of the message itself (plain, `sf` or `bs`; not one
    /// dictionary member, not the request's): what `VerifiedIdentity.coveredHeaders` lists, as
    /// field names, for the checks that read it (a gateway's `_` spellings, attestation, answers).
    public var coversWholeField: Bool { !isDerived && key == nil && !request }

    /// A component after the checks of docs/HTTPSIG.md §2.2: a field name is a lower-case token,
    /// a derived name one of `derived`; `name` with `@query-param` only (and always there);
    /// `sf`, `key` and `bs` with fields only, `bs` with neither of the others. `componentInvalid` otherwise.
    public init(_ name: String, structured: Bool = false, key: String? = nil, byteSequence: Bool = false, request: Bool = false,
                parameterName: String? = nil) throws(SignCoreError) {
        self.name = name
        self.structured = structured
        self.key = key
        self.byteSequence = byteSequence
        self.request = request
        self.parameterName = parameterName
        for text in [key, parameterName].compactMap({ $0 }) where !text.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) {
            throw Self.invalid("a key or name that is not printable ASCII")
        }
        if isDerived {
            guard Self.derived.contains(name) else { throw Self.invalid("an unknown derived component") }
            guard !structured, key == nil, !byteSequence else { throw Self.invalid("sf, key or bs on a derived component") }
            guard (name == "@query-param") == (parameterName != nil) else { throw Self.invalid("@query-param without name, or name elsewhere") }
        } else {
            guard Self.isFieldName(name) else { throw Self.invalid("a field name that is not a lower-case token") }
            guard parameterName == nil else { throw Self.invalid("name on a field") }
            guard !(byteSequence && (structured || key != nil)) else { throw Self.invalid("bs with sf or key") }
        }
    }

    /// A component as a `Signature-Input` inner list's member holds it: a string with
    /// parameters. Unknown parameters, `tr` (trailers are not read) and parameters of the wrong
    /// type are `componentInvalid`.
    init(item: Item) throws(SignCoreError) {
        guard case .string(let name) = item.rfc9651BareItem else { throw Self.invalid("a covered component that is not a string") }
        var structured = false, byteSequence = false, request = false
        var key: String?, parameterName: String?
        var order: [String] = []
        for (parameter, value) in item.rfc9651Parameters {
            order.append(parameter)
            switch (parameter, value) {
            case ("sf", .bool(true)): structured = true
            case ("bs", .bool(true)): byteSequence = true
            case ("req", .bool(true)): request = true
            case ("key", .string(let member)): key = member
            case ("name", .string(let query)): parameterName = query
            default: throw Self.invalid("a component parameter this profile does not read")
            }
        }
        try self.init(name, structured: structured, key: key, byteSequence: byteSequence, request: request, parameterName: parameterName)
        self.order = order
    }

    /// A component as a configuration writes it: as in `Signature-Input` (`"content-type"`,
    /// `"@query-param";name="id"`), or a bare field or derived name (`content-type`).
    public init(written: String) throws(SignCoreError) {
        let text = written.first == "\"" ? written : "\"" + written + "\""
        var parser = StructuredFieldValueParser(Array(text.utf8))
        guard let item = try? parser.parseItemFieldValue() else { throw Self.invalid("a component that does not parse") }
        try self.init(item: item)
    }

    public static func == (a: ComponentIdentifier, b: ComponentIdentifier) -> Bool {
        (a.name, a.structured, a.key, a.byteSequence, a.request, a.parameterName) == (b.name, b.structured, b.key, b.byteSequence, b.request, b.parameterName)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(key)
        hasher.combine(parameterName)
        hasher.combine([structured, byteSequence, request])
    }

    /// `"name";param…` as the signature base and `Signature-Input` write it.
    public var description: String {
        var bytes: [UInt8] = []
        append(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes the identifier (RFC 8941 §4.1.2: an sf-string with its parameters in their written order).
    func append(to out: inout [UInt8]) {
        // A field name is a lower-case token and a derived name one of nine: no byte to escape.
        _ = StructuredText.appendString(name, to: &out)
        for parameter in order {
            switch parameter {
            // `key` and `name` are printable ASCII (checked by the initialiser): always written.
            case "name": if let parameterName { _ = StructuredText.appendParameter("name", .string(parameterName), to: &out) }
            case "sf": if structured { out += ";sf".utf8 }
            case "key": if let key { _ = StructuredText.appendParameter("key", .string(key), to: &out) }
            case "bs": if byteSequence { out += ";bs".utf8 }
            default: if request { out += ";req".utf8 }
            }
        }
    }

    public static func field(_ name: String) throws(SignCoreError) -> ComponentIdentifier { try ComponentIdentifier(name) }
    public static let method = ComponentIdentifier(plain: "@method")
    public static let targetURI = ComponentIdentifier(plain: "@target-uri")
    public static let authority = ComponentIdentifier(plain: "@authority")
    public static let scheme = ComponentIdentifier(plain: "@scheme")
    public static let requestTarget = ComponentIdentifier(plain: "@request-target")
    public static let path = ComponentIdentifier(plain: "@path")
    public static let query = ComponentIdentifier(plain: "@query")
    public static let status = ComponentIdentifier(plain: "@status")
    public static let contentDigest = ComponentIdentifier(plain: "content-digest")

    /// A component without parameters whose name is known valid (the constants above).
    private init(plain name: String) {
        self.name = name
        structured = false
        key = nil
        byteSequence = false
        request = false
        parameterName = nil
    }

    /// RFC 9110 §5.1 token, lower case (a field name as RFC 9421 §2.1 covers it).
    static func isFieldName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 128 && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
        }
    }

    static func invalid(_ what: String) -> SignCoreError { SignCoreError(.componentInvalid, "a covered component is invalid: \(what)") }
}
