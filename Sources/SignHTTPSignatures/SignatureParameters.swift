import RawStructuredFieldValues
import SignCore

/// One signature's covered components and parameters (RFC 9421 §2.3): a `Signature-Input`
/// member, and the `@signature-params` line of its base.
public struct SignatureParameters: Sendable, Equatable {
    public var components: [ComponentIdentifier]
    public var created: Int64?
    public var expires: Int64?
    public var nonce: String?
    /// The algorithm's RFC 9421 name (§6.2); a verifier takes the algorithm from the key and
    /// only checks that this names the same one.
    public var algorithm: String?
    public var keyID: String?
    public var tag: String?
    /// The parameters this profile does not read, kept in place: they are signed like the others.
    var others: [(String, RFC9651BareItem)] = []
    /// The written order of the parameters, as `Signature-Input` had them (the base repeats it).
    var order: [String] = []
    /// Parameters written as bare flags, as `Accept-Signature` asks for them (RFC 9421 §5.1: `created;nonce`).
    var flags: Set<String> = []

    /// The most components one signature covers, and the longest parameter strings read (docs/HTTPSIG.md §2.6).
    public static let maxComponents = 32
    public static let maxParameterBytes = 256

    public init(components: [ComponentIdentifier], created: Int64? = nil, expires: Int64? = nil, nonce: String? = nil,
                algorithm: String? = nil, keyID: String? = nil, tag: String? = nil) {
        self.components = components
        self.created = created
        self.expires = expires
        self.nonce = nonce
        self.algorithm = algorithm
        self.keyID = keyID
        self.tag = tag
    }

    /// From a `Signature-Input` member: an inner list of components with its parameters.
    /// `signatureFieldsMalformed` for another shape, a parameter of the wrong type (RFC 9421
    /// §2.3: integers for `created` and `expires`, strings for the others), a negative time, or
    /// more than the limits; `componentInvalid` for a component it does not accept or a
    /// duplicate (§2.5 step 2.1).
    init(member: ItemOrInnerList) throws(SignCoreError) {
        guard case .innerList(let list) = member else { throw Self.malformed("a Signature-Input member is not an inner list") }
        guard list.bareInnerList.count <= Self.maxComponents else { throw Self.malformed("a signature covers more than 32 components") }
        var components: [ComponentIdentifier] = []
        for item in list.bareInnerList {
            let component = try ComponentIdentifier(item: item)
            guard !components.contains(component) else { throw ComponentIdentifier.invalid("a component covered twice") }
            components.append(component)
        }
        self.init(components: components)
        for (name, value) in list.rfc9651Parameters {
            order.append(name)
            switch name {
            case "created", "expires":
                guard case .integer(let time) = value, time >= 0 else { throw Self.malformed("created and expires are non-negative integers") }
                if name == "created" { created = time } else { expires = time }
            case "nonce", "alg", "keyid", "tag":
                guard case .string(let text) = value, text.utf8.count <= Self.maxParameterBytes else {
                    throw Self.malformed("nonce, alg, keyid and tag are strings of at most 256 bytes")
                }
                switch name {
                case "nonce": nonce = text
                case "alg": algorithm = text
                case "keyid": keyID = text
                default: tag = text
                }
            default:
                others.append((name, value))
            }
        }
    }

    /// The serialised inner list (RFC 8941 §4.1.1): the `@signature-params` value and the
    /// `Signature-Input` member. Its items, then its parameters in the order read (for a new one:
    /// `created`, `expires`, `nonce`, `alg`, `keyid`, `tag`, then the others). `signatureFieldsMalformed`
    /// when a string is not printable ASCII or an integer has more than 15 digits (RFC 8941 §3.3).
    public func serializedBytes() throws(SignCoreError) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "(")]
        out.reserveCapacity(64 + 24 * components.count)
        for (index, component) in components.enumerated() {
            if index > 0 { out.append(UInt8(ascii: " ")) }
            component.append(to: &out)
        }
        out.append(UInt8(ascii: ")"))
        let written = order.isEmpty ? ["created", "expires", "nonce", "alg", "keyid", "tag"] + others.map(\.0) : order
        for name in written {
            let value: RFC9651BareItem? = if flags.contains(name) {
                .bool(true)
            } else {
                switch name {
                case "created": created.map { .integer($0) }
                case "expires": expires.map { .integer($0) }
                case "nonce": nonce.map { .string($0) }
                case "alg": algorithm.map { .string($0) }
                case "keyid": keyID.map { .string($0) }
                case "tag": tag.map { .string($0) }
                default: others.first { $0.0 == name }?.1
                }
            }
            guard let value else { continue }
            guard StructuredText.appendParameter(name, value, to: &out) else { throw Self.malformed("a signature parameter cannot be serialised") }
        }
        return out
    }

    /// `serializedBytes` as text.
    public func serialized() throws(SignCoreError) -> String { String(decoding: try serializedBytes(), as: UTF8.self) }

    public static func == (a: SignatureParameters, b: SignatureParameters) -> Bool {
        (try? a.serialized()) == (try? b.serialized())
    }

    static func malformed(_ detail: String) -> SignCoreError { SignCoreError(.signatureFieldsMalformed, detail) }
}

