import SignCore
import SignHTTP

/// What a route asks of an RFC 9421 signature (docs/HTTPSIG.md §5.1).
public struct HTTPSignaturePolicy: Sendable, Equatable {
    /// What the signature must cover.
    public enum Coverage: Sendable, Equatable {
        /// The request itself: `@method` and its target (`@target-uri`, or `@authority` with
        /// `@request-target`, or `@authority` with `@path` and `@query`), and `content-digest`
        /// when the request has content. A signature over less never passes.
        case request
        /// Who sent it, as Web Bot Auth signs (docs/HTTPSIG.md §7): `@authority`, and
        /// `signature-agent` when the request has that field. The content is not bound: a
        /// handler learns who asked, not that this exact request was signed.
        case agent
    }

    /// What to do with a signature without `nonce`.
    public enum NonceRule: Sendable, Equatable {
        /// Refused (`signatureNonceMissing`): every accepted signature is accepted once.
        case required
        /// Accepted within `maxAge` (replayable until then); one with a nonce is still recorded.
        case optional
    }

    public var coverage: Coverage
    /// Components every signature must also cover (a field such as `content-type`).
    public var requiredComponents: [ComponentIdentifier]
    /// Seconds after `created` a signature is accepted (and its nonce remembered).
    public var maxAge: Int64
    /// Seconds `created` may lie in the future (a client clock ahead).
    public var skew: Int64
    public var nonce: NonceRule
    /// The label verified when a request carries several; nil for any (then `tag`, else the first).
    public var label: String?
    /// The `tag` the verified signature must carry (`web-bot-auth`); nil for any.
    public var tag: String?

    public init(coverage: Coverage = .request, requiredComponents: [ComponentIdentifier] = [], maxAge: Int64 = 300, skew: Int64 = 30,
                nonce: NonceRule = .required, label: String? = nil, tag: String? = nil) {
        self.coverage = coverage
        self.requiredComponents = requiredComponents
        self.maxAge = maxAge
        self.skew = skew
        self.nonce = nonce
        self.label = label
        self.tag = tag
    }

    /// Web Bot Auth's (draft-meunier-web-bot-auth-architecture): agent coverage, `tag="web-bot-auth"`,
    /// nonces optional (its signers send them, not every one), a minute of age.
    public static let webBotAuth = HTTPSignaturePolicy(coverage: .agent, maxAge: 60, nonce: .optional, tag: "web-bot-auth")

    /// The stricter of two policies, for a path read under two rules: request coverage if either
    /// asks it, every required component, the shorter age and skew, nonces required if either
    /// requires them, and `a`'s label and tag where it sets them.
    static func strictest(_ a: HTTPSignaturePolicy, _ b: HTTPSignaturePolicy) -> HTTPSignaturePolicy {
        HTTPSignaturePolicy(coverage: a.coverage == .request || b.coverage == .request ? .request : .agent,
                            requiredComponents: a.requiredComponents + b.requiredComponents.filter { !a.requiredComponents.contains($0) },
                            maxAge: min(a.maxAge, b.maxAge), skew: min(a.skew, b.skew),
                            nonce: a.nonce == .required || b.nonce == .required ? .required : .optional,
                            label: a.label ?? b.label, tag: a.tag ?? b.tag)
    }
}

/// The proof formats a route reads.
public struct SignatureFormats: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// SignCore's whash and wtoken (SPEC §5).
    public static let wtoken = SignatureFormats(rawValue: 1)
    /// RFC 9421 `Signature-Input` / `Signature`, with RFC 9530 `Content-Digest`.
    public static let httpSignature = SignatureFormats(rawValue: 2)
    public static let both: SignatureFormats = [.wtoken, .httpSignature]
}

/// A route's signature formats and RFC 9421 policy (`RouteRequirements[RouteSignatureFormat.self]`).
public struct SignatureFormatRequirement: Sendable, Equatable {
    public var formats: SignatureFormats
    public var policy: HTTPSignaturePolicy

    public init(formats: SignatureFormats, policy: HTTPSignaturePolicy = HTTPSignaturePolicy()) {
        self.formats = formats
        self.policy = policy
    }
}

/// The formats dimension of a route's requirements: wtokens alone by default; a path read under
/// two rules reads only the formats both read (none: nothing verifies, fail closed), under the
/// stricter policy.
public enum RouteSignatureFormat: RouteRequirement {
    public static let defaultValue = SignatureFormatRequirement(formats: .wtoken)

    public static func strictest(_ a: SignatureFormatRequirement, _ b: SignatureFormatRequirement) -> SignatureFormatRequirement {
        SignatureFormatRequirement(formats: a.formats.intersection(b.formats), policy: HTTPSignaturePolicy.strictest(a.policy, b.policy))
    }
}

extension RouteRequirements {
    /// These requirements reading `formats` under `policy`.
    public func reading(_ formats: SignatureFormats, policy: HTTPSignaturePolicy = HTTPSignaturePolicy()) -> RouteRequirements {
        var requirements = self
        requirements[RouteSignatureFormat.self] = SignatureFormatRequirement(formats: formats, policy: policy)
        return requirements
    }
}
