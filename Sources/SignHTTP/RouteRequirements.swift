import SignCore

/// What a route asks of a request (a `RoutePolicy` rule's, or its fallback's): the signature,
/// how the body is read and how much of it, and what other flows add as requirements of their
/// own (an attestation level, a rate limit, the signature formats accepted), each under a key
/// type of its flow, with no change here.
public struct RouteRequirements: Sendable, Equatable {
    public var signature: SignatureRequirement
    /// How the body is read; nil for the middleware's default.
    public var body: BodyHandling?
    private var values: [ObjectIdentifier: any RequirementBox] = [:]

    public init(signature: SignatureRequirement = .require, body: BodyHandling? = nil) {
        self.signature = signature
        self.body = body
    }

    /// Verified, refused when it fails; the middleware's body handling.
    public static let require = RouteRequirements(signature: .require)
    /// Verified and logged, never refused.
    public static let monitor = RouteRequirements(signature: .monitor)
    /// Not verified.
    public static let off = RouteRequirements(signature: .off)

    /// A flow's requirement on this route: its default until set.
    public subscript<Requirement: RouteRequirement>(_ requirement: Requirement.Type) -> Requirement.Value {
        get { (values[ObjectIdentifier(requirement)] as? Box<Requirement>)?.value ?? Requirement.defaultValue }
        set { values[ObjectIdentifier(requirement)] = Box<Requirement>(value: newValue) }
    }

    /// Each requirement at the stricter of the two (a path read under two rules must meet both):
    /// the stricter signature, each flow's `strictest`; the body handling of neither (nil).
    func strictest(with other: RouteRequirements) -> RouteRequirements {
        var merged = RouteRequirements(signature: signature.strictness >= other.signature.strictness ? signature : other.signature)
        for key in Set(values.keys).union(other.values.keys) {
            merged.values[key] = values[key].map { $0.strictest(with: other.values[key]) } ?? other.values[key]?.strictest(with: nil)
        }
        return merged
    }

    public static func == (a: RouteRequirements, b: RouteRequirements) -> Bool {
        guard a.signature == b.signature, a.body == b.body else { return false }
        // A value set to its default equals one never set.
        return Set(a.values.keys).union(b.values.keys).allSatisfy { key in
            if let box = a.values[key] { return box.equals(b.values[key]) }
            return b.values[key]?.equals(nil) ?? true
        }
    }
}

/// One dimension of a route's requirements that a flow adds: a type naming it, with its value's
/// type, its value on a route that does not set it, and which of two values asks more.
public protocol RouteRequirement {
    associatedtype Value: Sendable & Equatable
    static var defaultValue: Value { get }
    /// The value that asks more of a request: a path whose readings fall under two rules gets it.
    static func strictest(_ a: Value, _ b: Value) -> Value
}

/// A flow's value with what comparing and merging it needs, its type erased.
private protocol RequirementBox: Sendable {
    /// Equal to `other`, or to the default when `other` is nil.
    func equals(_ other: (any RequirementBox)?) -> Bool
    /// The strictest of this and `other` (the default when nil).
    func strictest(with other: (any RequirementBox)?) -> any RequirementBox
}

private struct Box<Requirement: RouteRequirement>: RequirementBox {
    let value: Requirement.Value

    func equals(_ other: (any RequirementBox)?) -> Bool {
        value == ((other as? Box<Requirement>)?.value ?? Requirement.defaultValue)
    }

    func strictest(with other: (any RequirementBox)?) -> any RequirementBox {
        Box(value: Requirement.strictest(value, (other as? Box<Requirement>)?.value ?? Requirement.defaultValue))
    }
}

/// How the middleware reads a request body before verifying it.
public enum BodyHandling: Sendable, Equatable {
    /// Collected in memory, up to `limit` bytes (a larger body is refused `bodyTooLarge`, 413).
    case buffered(limit: Int64 = 1 << 20)
    /// For POST, PUT and PATCH bodies over `smallBody` bytes or of unknown length (chunked): the
    /// token is checked against the whash header first, then the body reaches the handler as it
    /// arrives, hashed on the way, up to `limit` bytes; its last chunk is released only when the
    /// digest matches, so a handler must act on nothing before the body's end. Needs the whash
    /// header. Smaller bodies, empty ones and other methods are collected as in `buffered`.
    case streamed(limit: Int64 = .max)

    /// The most bytes a request may send.
    public var limit: Int64 {
        switch self {
        case .buffered(let limit), .streamed(let limit): limit
        }
    }

    /// Bodies up to this size are collected even in streamed mode: checked whole before the
    /// handler (or an upstream) sees any of the request, at a cost of at most this much memory.
    public static let smallBody: Int64 = 64 << 10
}
