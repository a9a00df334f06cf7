import SignAttest
import SignCore

/// What a route asks of a request's attestation (docs/ATTEST.md): `require` refuses a request
/// without a token that meets `levels` with a 428 and a challenge, `monitor` logs what it would
/// have done and lets the request through, `off` checks nothing. The signature is always checked
/// first: a request that cannot be verified gets its 401, never a challenge.
public struct AttestationRequirement: Sendable, Equatable, CustomStringConvertible {
    public enum Mode: Int, Sendable, Comparable, CaseIterable {
        case off, monitor, require
        public static func < (a: Mode, b: Mode) -> Bool { a.rawValue < b.rawValue }
    }

    public var mode: Mode
    /// The levels a token must hold (ATTEST.md §1); empty when `off`.
    public var levels: AttestationLevels

    public init(mode: Mode, levels: AttestationLevels) {
        self.mode = mode
        self.levels = mode == .off ? [] : levels
    }

    public static let off = AttestationRequirement(mode: .off, levels: [])
    public static func require(_ levels: AttestationLevels) -> AttestationRequirement { .init(mode: .require, levels: levels) }
    public static func monitor(_ levels: AttestationLevels) -> AttestationRequirement { .init(mode: .monitor, levels: levels) }

    public var description: String { mode == .off ? "off" : "\(mode) \(levels)" }
}

/// The attestation dimension of a route's requirements (`RouteRequirements[RouteAttestation.self]`):
/// off by default; a path read under several rules gets the stricter mode and every level either asks.
public enum RouteAttestation: RouteRequirement {
    public static let defaultValue = AttestationRequirement.off

    public static func strictest(_ a: AttestationRequirement, _ b: AttestationRequirement) -> AttestationRequirement {
        AttestationRequirement(mode: max(a.mode, b.mode), levels: a.levels.union(b.levels))
    }
}
