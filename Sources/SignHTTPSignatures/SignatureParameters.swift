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

    /// The inner list with its parameters, in the order read (or RFC 9421 §2.3's for a new one).
    var innerList: InnerList {
        var list = BareInnerList()
        for component in components { list.append(component.item) }
        var parameters = OrderedMap<String, RFC9651BareItem>()
        let written = order.isEmpty ? ["created", "expires", "nonce", "alg", "keyid", "tag"] + others.map(\.0) : order
        for name in written {
            if flags.contains(name) {
                parameters[name] = .bool(true)
                continue
            }
            switch name {
            case "created": if let created { parameters[name] = .integer(created) }
            case "expires": if let expires { parameters[name] = .integer(expires) }
            case "nonce": if let nonce { parameters[name] = .string(nonce) }
            case "alg": if let algorithm { parameters[name] = .string(algorithm) }
            case "keyid": if let keyID { parameters[name] = .string(keyID) }
            case "tag": if let tag { parameters[name] = .string(tag) }
            default: if let value = others.first(where: { $0.0 == name })?.1 { parameters[name] = value }
            }
        }
        return InnerList(bareInnerList: list, parameters: parameters)
    }

    /// The serialised inner list: the `@signature-params` value and the `Signature-Input` member.
    /// `signatureFieldsMalformed` when a string is not printable ASCII (RFC 8941 §3.3.3).
    public func serialized() throws(SignCoreError) -> String {
        var serializer = StructuredFieldValueSerializer()
        do {
            return String(decoding: try serializer.writeListFieldValue([.innerList(innerList)]), as: UTF8.self)
        } catch {
            throw Self.malformed("a signature parameter cannot be serialised")
        }
    }

    public static func == (a: SignatureParameters, b: SignatureParameters) -> Bool {
        (try? a.serialized()) == (try? b.serialized())
    }

    static func malformed(_ detail: String) -> SignCoreError { SignCoreError(.signatureFieldsMalformed, detail) }
}

