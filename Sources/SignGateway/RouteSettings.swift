import Hummingbird
import NIOCore
import SignAttest
import SignCore
import SignHTTP
import SignHTTPSignatures
@_spi(SignCoreTools) import SignHummingbird

/// How long the upstream may take on a route, in seconds: a requirement of signd's own on the
/// policy's rules, each rule and the fallback given the route's own or the top-level
/// `upstreamTimeout` (nil only on a policy not built here).
enum UpstreamTimeout: RouteRequirement {
    static let defaultValue: Int64? = nil
    /// A path read under two rules gets the shorter.
    static func strictest(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a, let b else { return a ?? b }
        return min(a, b)
    }
}

/// The policy of signd's configuration: each route's signature requirement, body handling and
/// upstream timeout in its rule's requirements, the top-level ones where a route sets none.
struct GatewayRoutes: Sendable {
    let policy: RoutePolicy
    /// Every limit a route counts against.
    let rateLimits: [RateLimit]
    let defaultBody: BodyHandling
    let defaultUpstreamTimeout: TimeAmount

    init(configuration: GatewayConfiguration) throws(SignCoreError) {
        var rules: [RoutePolicy.Rule] = []
        if let attestation = configuration.attestation {
            // The attest endpoint always verifies its requests' signatures, whatever the policy
            // says of its path, and reads an attest request's 4 KiB at most (docs/ATTEST.md §4.1).
            var endpoint = RouteRequirements(signature: .require, body: .buffered(limit: Int64(AttestRequest.maxBytes)))
            endpoint[UpstreamTimeout.self] = configuration.upstreamTimeout
            rules.append(try RoutePolicy.Rule(attestation.endpoint, endpoint))
        }
        var grantable = AttestationLevels()
        for (index, challenge) in (configuration.attestation?.challenges ?? []).enumerated() {
            grantable.formUnion(try GatewayConfiguration.levels(challenge.levels, member: "attestation.challenges[\(index)].levels"))
        }
        let buckets = try configuration.rateLimits?.limits() ?? [:]
        var counted: [RateLimit] = []
        for (index, route) in configuration.policy.routes.enumerated() {
            var requirements = RouteRequirements(signature: route.signature)
            guard Set(route.rateLimits).count == route.rateLimits.count else {
                throw SignCoreError(.invalidConfiguration, "configuration: policy.routes[\(index)].rateLimits names a bucket twice")
            }
            requirements[RouteRateLimits.self] = try route.rateLimits.map { (name) throws(SignCoreError) -> RateLimit in
                guard let limit = buckets[name] else {
                    throw SignCoreError(.invalidConfiguration, "configuration: policy.routes[\(index)].rateLimits names \(name), which rateLimits.buckets does not have")
                }
                return limit
            }
            counted += requirements[RouteRateLimits.self]
            // A route's body members it does not set are the top-level ones.
            requirements.body = route.body.map { body in
                Self.handling(GatewayConfiguration.Body(mode: body.mode ?? configuration.body.mode, limit: body.limit ?? configuration.body.limit))
            }
            requirements[UpstreamTimeout.self] = route.upstreamTimeout ?? configuration.upstreamTimeout
            if let setting = route.attestation, setting.mode != .off {
                let member = "policy.routes[\(index)].attestation"
                let levels = try GatewayConfiguration.levels(setting.levels, member: member + ".levels")
                guard configuration.attestation != nil else {
                    throw SignCoreError(.invalidConfiguration, "configuration: \(member) needs the top-level attestation section")
                }
                guard !levels.isEmpty, grantable.isSuperset(of: levels) else {
                    throw SignCoreError(.invalidConfiguration, "configuration: \(member).levels are levels some attestation challenge grants")
                }
                guard route.signature != .off else {
                    throw SignCoreError(.invalidConfiguration, "configuration: \(member) needs the route's signature checked (a token is bound to its key)")
                }
                requirements[RouteAttestation.self] = AttestationRequirement(mode: setting.mode == .require ? .require : .monitor, levels: levels)
            }
            requirements[RouteSignatureFormat.self] = try Self.formats(route.formats ?? configuration.policy.formats,
                                                                     route.httpSignature ?? configuration.policy.httpSignature,
                                                                     member: "policy.routes[\(index)]")
            rules.append(try RoutePolicy.Rule(route.route, requirements))
        }
        var fallback = RouteRequirements(signature: configuration.policy.fallback)
        fallback[RouteSignatureFormat.self] = try Self.formats(configuration.policy.formats, configuration.policy.httpSignature, member: "policy")
        fallback[UpstreamTimeout.self] = configuration.upstreamTimeout
        policy = RoutePolicy(rules, fallback: fallback)
        rateLimits = counted
        defaultBody = Self.handling(configuration.body)
        defaultUpstreamTimeout = .seconds(configuration.upstreamTimeout)
    }

    /// The formats a route reads and its RFC 9421 policy (docs/HTTPSIG.md §5.4).
    static func formats(_ formats: [GatewayConfiguration.ProofFormat], _ settings: GatewayConfiguration.HTTPSignatureSettings,
                        member: String) throws(SignCoreError) -> SignatureFormatRequirement {
        guard !formats.isEmpty, Set(formats).count == formats.count else {
            throw SignCoreError(.invalidConfiguration, "configuration: \(member).formats names wtoken, httpSignature or both, once each")
        }
        let read: SignatureFormats = formats.reduce([]) { $0.union($1 == .wtoken ? .wtoken : .httpSignature) }
        return SignatureFormatRequirement(formats: read, policy: try settings.policy(member: member + ".httpSignature"))
    }

    static func handling(_ body: GatewayConfiguration.Body) -> BodyHandling {
        switch body.mode {
        case .buffered: .buffered(limit: body.limit)
        case .streamed: .streamed(limit: body.limit)
        }
    }

    /// The body handling for a request the policy decided (the top-level one before it has).
    func body(for decision: RoutePolicy.Decision?) -> BodyHandling { decision?.requirements.body ?? defaultBody }

    func upstreamTimeout(for decision: RoutePolicy.Decision?) -> TimeAmount {
        decision.flatMap { $0.requirements[UpstreamTimeout.self] }.map { .seconds($0) } ?? defaultUpstreamTimeout
    }
}

extension GatewayRoutes {
    /// Decides the request's route once, first thing (`EntryMiddleware`): the access log names
    /// it, the target check, the signature middleware and the proxy apply its requirements.
    func decide(_ request: Request, into context: inout GatewayRequestContext) {
        let decision = policy.decision(method: request.method, path: request.uri.path)
        context.route = decision.route
        context.signCore.recordRouteDecision(decision)
    }
}
