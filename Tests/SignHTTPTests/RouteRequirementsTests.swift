import HTTPTypes
import SignCore
import SignHTTP
import Testing

/// A flow adds a dimension to route requirements without changing SignHTTP (SPEC-free: this is
/// the server's configuration), and a path read under several rules meets the strictest of each.
@Suite struct RouteRequirementsTests {
    /// An attestation level, as the attestation flow will add it: a higher level asks more.
    enum Attestation: RouteRequirement {
        enum Level: Int, Sendable, Equatable { case none, device, hardware }
        static let defaultValue = Level.none
        static func strictest(_ a: Level, _ b: Level) -> Level { a.rawValue >= b.rawValue ? a : b }
    }

    /// A rate limit in requests a minute, nil for none: a lower limit asks more.
    enum RateLimit: RouteRequirement {
        static let defaultValue: Int? = nil
        static func strictest(_ a: Int?, _ b: Int?) -> Int? { [a, b].compactMap { $0 }.min() }
    }

    static func requirements(_ signature: SignatureRequirement, _ level: Attestation.Level, limit: Int? = nil,
                             body: BodyHandling? = nil) -> RouteRequirements {
        var requirements = RouteRequirements(signature: signature, body: body)
        requirements[Attestation.self] = level
        requirements[RateLimit.self] = limit
        return requirements
    }

    static let policy = try! RoutePolicy([
        .init("/public/**", requirements(.off, .none, limit: 600)),
        .init("POST /payments/**", requirements(.require, .hardware, limit: 10, body: .streamed(limit: 1 << 30))),
        .init("/account/**", requirements(.require, .device)),
    ], fallback: requirements(.require, .none, limit: 120))

    @Test func aRuleCarriesItsRequirements() {
        let payment = Self.policy.decision(method: .post, path: "/payments/42")
        #expect(payment.requirements[Attestation.self] == .hardware && payment.requirements[RateLimit.self] == 10)
        #expect(payment.requirements.body == .streamed(limit: 1 << 30) && payment.signature == .require && !payment.ambiguous)
        let account = Self.policy.decision(method: .get, path: "/account/me")
        #expect(account.requirements[Attestation.self] == .device && account.requirements[RateLimit.self] == nil, "unset: the default")
        let other = Self.policy.decision(method: .get, path: "/other")
        #expect(other.route == "*" && other.requirements[RateLimit.self] == 120)
        #expect(Self.requirements(.require, .none) == RouteRequirements.require, "values at their default equal unset ones")
        #expect(Self.requirements(.require, .device) != RouteRequirements.require)
    }

    @Test func aPathReadUnderSeveralRulesMeetsTheStrictestOfEach() {
        // Raw, /public/**; resolved, /payments/**: the payment's attestation and the lowest limit,
        // no rule's body handling.
        let sneaky = Self.policy.decision(method: .post, path: "/public/..%2Fpayments/42")
        #expect(sneaky.ambiguous && sneaky.signature == .require)
        #expect(sneaky.requirements[Attestation.self] == .hardware && sneaky.requirements[RateLimit.self] == 10)
        #expect(sneaky.requirements.body == nil)
        // Case alone tells /Account from /account (a server that ignores case reads it so): the
        // stricter attestation, and the path is plain, so not ambiguous.
        let folded = Self.policy.decision(method: .get, path: "/ACCOUNT/me")
        #expect(folded.requirements[Attestation.self] == .device && !folded.ambiguous)
        // Too long to read every way: the strictest of every rule for the method.
        let long = Self.policy.decision(method: .post, path: "/public/" + String(repeating: "a/", count: 600) + "%41;.")
        #expect(long.ambiguous && long.requirements[Attestation.self] == .hardware && long.requirements[RateLimit.self] == 10)
    }
}
