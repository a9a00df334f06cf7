import HTTPTypes
import SignAttest
import SignCore

/// The header fields of the attestation flow (docs/ATTEST.md §2.3, §5.3): `attest-challenge` on
/// a 428, `attest-token` on a request. A deployment may rename them (`EO-Attest-Challenge`,
/// `EO-Attest-Token`); then its clients must use the same names.
public struct AttestationFieldNames: Sendable, Equatable {
    public var challenge: HTTPField.Name
    public var token: HTTPField.Name
    /// A registered device's counter (docs/ATTEST.md §9.5), covered by the request's signature.
    public var counter: HTTPField.Name

    public init(challenge: HTTPField.Name, token: HTTPField.Name, counter: HTTPField.Name = AttestationFieldNames.counterField) {
        self.challenge = challenge
        self.token = token
        self.counter = counter
    }

    public static let counterField = HTTPField.Name("signcore-counter")!

    public static let standard = AttestationFieldNames(challenge: HTTPField.Name("attest-challenge")!, token: HTTPField.Name("attest-token")!)
}

/// The server's side of the flow, transport-neutral: checks a verified request against its
/// route's attestation requirement (`check`), and answers the attest endpoint (`respond`,
/// AttestEndpoint.swift). Challenges are issued statelessly; only a redemption writes.
public struct AttestationGate: Sendable {
    public let attestor: Attestor
    /// The challenges that earn levels: a missing level is asked for with the first that grants it.
    public let challenges: [ChallengePolicy]
    public let names: AttestationFieldNames
    /// The attest endpoint's path (docs/ATTEST.md §4.1).
    public let endpoint: String
    /// The device endpoint's path (docs/ATTEST.md §9.2): registrations, and their challenges
    /// under `/challenge`. Answered only when the attestor has devices.
    public let deviceEndpoint: String
    /// Milliseconds since the epoch.
    public let clock: @Sendable () -> UInt64

    public static let defaultEndpoint = "/.well-known/signcore/attest"
    public static let defaultDeviceEndpoint = "/.well-known/signcore/devices"
    /// What the client is asked to do (`challenge` on a 428), as every refusal carries it.
    public static let actionField = Refusal.actionField

    /// Refuses (`invalidConfiguration`) keys that cannot issue both challenges and tokens, no
    /// challenge, an endpoint that is not an absolute path
    /// without a query, and a challenge field named like the token's or a refusal's own.
    public init(attestor: Attestor, challenges: [ChallengePolicy], names: AttestationFieldNames = .standard,
                endpoint: String = AttestationGate.defaultEndpoint, deviceEndpoint: String = AttestationGate.defaultDeviceEndpoint,
                clock: @escaping @Sendable () -> UInt64 = { UInt64(max(0, SystemClock.milliseconds())) }) throws(SignCoreError) {
        guard !challenges.isEmpty else { throw SignCoreError(.invalidConfiguration, "attestation needs at least one challenge policy") }
        // A gate issues both: challenges, and tokens for them.
        _ = try attestor.keys.issuingChallengeKey()
        _ = try attestor.keys.issuingTokenKey()
        for path in [endpoint, deviceEndpoint] {
            guard path.hasPrefix("/"), path.count > 1, !path.hasSuffix("/"), !path.contains("?"), !path.contains("#") else {
                throw SignCoreError(.invalidConfiguration, "the attest and device endpoints are absolute paths")
            }
        }
        guard endpoint != deviceEndpoint, !endpoint.hasPrefix(deviceEndpoint + "/") else {
            throw SignCoreError(.invalidConfiguration, "the attest endpoint is not the device endpoint's")
        }
        // Device challenges are answered by registered keys: a gate that issues them has a registry.
        guard attestor.devices != nil || challenges.allSatisfy({ $0.kind == .proofOfWork }) else {
            throw SignCoreError(.invalidConfiguration, "a device challenge policy needs the attestor's devices")
        }
        guard names.challenge != names.token, names.counter != names.token, names.counter != names.challenge,
              names.challenge != Self.actionField,
              !Refusal.ownFields.union(Refusal.framingFields).contains(names.challenge) else {
            throw SignCoreError(.invalidConfiguration, "the attest-challenge field takes a name of its own")
        }
        self.attestor = attestor
        self.challenges = challenges
        self.names = names
        self.endpoint = endpoint
        self.deviceEndpoint = deviceEndpoint
        self.clock = clock
    }

    /// Every level some challenge grants: a route may require only these.
    public var grantableLevels: AttestationLevels { challenges.reduce([]) { $0.union($1.levels) } }

    /// What the gate decided for one request.
    public enum Verdict: Sendable {
        /// Let through, with the token that met the route's levels (nil when the route asks none).
        case pass(AttestationToken?)
        /// Refused: a 428 with a challenge, or another refusal.
        case refuse(Refusal, SignCoreError)
        /// A `monitor` route's request that `require` would have refused, with the reason.
        case monitored(SignCoreError)
    }

    /// Checks the token of a request whose signature verified as `identity`, at `origin`
    /// (docs/ATTEST.md §5.5). A missing, expired or unverifiable token, or one without every
    /// level the route asks, gets a 428 with a challenge for the lowest level it lacks.
    public func check(_ request: HTTPRequest, identity: VerifiedIdentity, requirement: AttestationRequirement, origin: String) -> Verdict {
        guard requirement.mode != .off, !requirement.levels.isEmpty else { return .pass(nil) }
        let now = clock()
        let thumbprint: [UInt8]
        do { thumbprint = try Self.thumbprint(of: identity) } catch {
            return requirement.mode == .monitor ? .monitored(error) : .refuse(refusal(error, now: now), error)
        }
        var lacking = requirement.levels
        let error: SignCoreError
        do throws(SignCoreError) {
            let values = request.headerFields[values: names.token]
            guard let field = values.first else {
                throw SignCoreError(.attestationRequired, "the route requires attestation and the request carries no token")
            }
            guard values.count == 1 else { throw SignCoreError(.attestationMalformed, "the attestation token field is sent more than once") }
            do {
                return .pass(try attestor.checkToken(field, fieldName: names.token.canonicalName, keyThumbprint: thumbprint,
                                                     coveredHeaders: identity.coveredHeaders, origin: origin, now: now,
                                                     required: requirement.levels))
            } catch where error.code == .attestationInsufficient {
                // The token is genuine: ask only for what it lacks.
                if let held = try? AttestationToken(parsing: field).levels { lacking.subtract(held) }
                throw error
            }
        } catch let failure { error = failure }
        if requirement.mode == .monitor { return .monitored(error) }
        guard error.code.advice == .attest else { return .refuse(refusal(error, now: now), error) }
        do {
            return .refuse(refusal(error, now: now, challenge: try challenge(for: lacking, thumbprint: thumbprint, origin: origin, now: now)), error)
        } catch { return .refuse(refusal(error, now: now), error) }
    }

    /// The challenge for the lowest level of `levels`, issued to the key with `thumbprint` at
    /// `origin` (a 428's); `invalidConfiguration` when no policy grants it.
    func challenge(for levels: AttestationLevels, thumbprint: [UInt8], origin: String, now: UInt64) throws(SignCoreError) -> Challenge {
        guard let lowest = levels.lowest, let policy = challenges.first(where: { $0.levels.contains(lowest) }) else {
            throw SignCoreError(.invalidConfiguration, "no challenge policy grants a level the route requires")
        }
        return try attestor.challenge(policy, keyThumbprint: thumbprint, origin: origin, now: now)
    }

    /// The refusal of `error` (SPEC §7.1 with the server's time, docs/ATTEST.md §7), carrying
    /// `challenge` when given, and `Retry-After` when asked (`challengeTooEarly`).
    func refusal(_ error: SignCoreError, now: UInt64, challenge: Challenge? = nil, retryAfter: UInt64? = nil) -> Refusal {
        var fields = HTTPFields()
        if let challenge {
            fields[names.challenge] = challenge.text
        }
        if let retryAfter { fields[.retryAfter] = String(retryAfter) }
        // The names are the flow's own, never a refusal's or a framing field (checked when configured).
        return (try? Refusal(error, serverTime: Int64(now / 1000), fields: fields)) ?? Refusal(error, serverTime: Int64(now / 1000))
    }

    /// The thumbprint of the key a request proved (`invalidConfiguration` for a format that
    /// gives none: its tokens could not be bound).
    static func thumbprint(of identity: VerifiedIdentity) throws(SignCoreError) -> [UInt8] {
        guard let thumbprint = identity.keyThumbprint else {
            throw SignCoreError(.invalidConfiguration, "the request's proof names no key thumbprint to bind an attestation to")
        }
        return thumbprint.bytes
    }
}

extension ServerOrigin {
    /// The origin a request was received at (docs/ATTEST.md §1): the canonical form (SPEC §2)
    /// of this server's scheme and the authority the request was verified under.
    public func attestationOrigin(of request: HTTPRequest) throws(SignCoreError) -> String {
        guard let authority = authority ?? request.authority, !authority.isEmpty else {
            throw SignCoreError(.invalidURL, "the request names no authority (:authority or Host)")
        }
        try Self.validate(authority: authority)
        guard let origin = AttestationScope.origin(ofCanonicalURL: try CanonicalURL.canonicalize(scheme + "://" + authority + "/")) else {
            throw SignCoreError(.invalidURL, "the request's origin is not an http or https origin")
        }
        return origin
    }
}
