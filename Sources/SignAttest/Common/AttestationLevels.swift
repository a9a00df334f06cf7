/// A set of attestation levels (ATTEST.md §1): bit n stands for level n, which a deployment names.
/// A challenge grants a set, a token holds one, a route requires one; a token meets a requirement
/// when it holds every level of it.
public struct AttestationLevels: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Level `n` alone (0-15).
    public static func level(_ n: Int) -> AttestationLevels {
        precondition((0..<16).contains(n), "a level is 0-15")
        return AttestationLevels(rawValue: 1 << UInt16(n))
    }

    /// Whether a token holding these levels meets `required`.
    public func meets(_ required: AttestationLevels) -> Bool { isSuperset(of: required) }

    /// The lowest level of the set, alone; nil for the empty set.
    public var lowest: AttestationLevels? { isEmpty ? nil : AttestationLevels(rawValue: rawValue & (~rawValue &+ 1)) }

    public var description: String { "levels(\(rawValue))" }
}
