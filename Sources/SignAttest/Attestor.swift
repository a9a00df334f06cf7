import SignCore

/// The server side of the attestation flow (ATTEST.md): issues challenges, redeems them for
/// tokens and checks tokens, under one set of server keys shared by the fleet. A value: every
/// node builds the same from its configuration.
public struct Attestor: Sendable {
    public static let skews: ClosedRange<UInt64> = 0...60_000

    public let keys: AttestationKeys
    /// Where redeemed challenge ids are recorded, fleet-wide (ATTEST.md §4.3 step 8).
    public let redemptions: any RedemptionStore
    /// Milliseconds allowed between the clocks of the fleet's nodes (ATTEST.md §1).
    public let skew: UInt64
    /// Seconds a new token is valid for (ATTEST.md §5.1).
    public let tokenTTL: Int
    /// Registered device keys and what they earn (ATTEST.md §9); nil: this node has none.
    public let devices: Devices?

    /// Refuses (`invalidConfiguration`) a skew outside 0-60000 ms and a token TTL outside
    /// 1-86400 s.
    public init(keys: AttestationKeys, redemptions: any RedemptionStore, skew: UInt64 = 5000, tokenTTL: Int = 900,
                devices: Devices? = nil) throws(SignCoreError) {
        guard Self.skews ~= skew else { throw SignCoreError(.invalidConfiguration, "the attestation skew is 0-60000 ms") }
        guard AttestationToken.ttls ~= tokenTTL else { throw SignCoreError(.invalidConfiguration, "a token's TTL is 1-86400 s") }
        self.keys = keys
        self.redemptions = redemptions
        self.skew = skew
        self.tokenTTL = tokenTTL
        self.devices = devices
    }

    /// A new challenge (ATTEST.md §2) for the request signed by the key with `keyThumbprint`,
    /// at `origin`, under the issuing `oct` key. Writes nothing.
    public func challenge(_ policy: ChallengePolicy, keyThumbprint: [UInt8], origin: String, now: UInt64) throws(SignCoreError) -> Challenge {
        try Challenge(kind: policy.kind, difficulty: policy.difficulty, count: policy.count, levels: policy.levels, issuedAt: now, ttl: policy.ttl,
                      minElapsed: policy.minElapsed, keyThumbprint: keyThumbprint, originDigest: AttestationScope.originDigest(origin),
                      key: keys.issuingChallengeKey())
    }
}

/// What a challenge asks and grants (ATTEST.md §2.1): a route's, or a level's, setting.
public struct ChallengePolicy: Sendable, Hashable {
    /// Proof of work, or a registered device's answer (ATTEST.md §9.6).
    public var kind: Challenge.Kind
    /// Leading zero bits per sub-solution; a policy keeps to 12-26 (about 2^d × k hashes).
    public var difficulty: Int
    /// Sub-solutions.
    public var count: Int
    /// What a redemption grants.
    public var levels: AttestationLevels
    /// Seconds a challenge may be redeemed in.
    public var ttl: Int
    /// Milliseconds that must pass between issue and redemption.
    public var minElapsed: Int

    public static let difficulties = 12...26

    /// Refuses (`invalidConfiguration`) values outside ATTEST.md §2.1's ranges, or a difficulty
    /// outside 12-26.
    public init(difficulty: Int = 18, count: Int = 4, levels: AttestationLevels, ttl: Int = 120, minElapsed: Int = 0) throws(SignCoreError) {
        guard Self.difficulties ~= difficulty, Challenge.counts ~= count, !levels.isEmpty, Challenge.ttls ~= ttl,
              minElapsed >= 0, minElapsed < ttl * 1000
        else { throw SignCoreError(.invalidConfiguration, "a challenge policy is d 12-26, k 1-16, levels not empty, ttl 1-3600 s, minElapsed below it") }
        kind = .proofOfWork
        self.difficulty = difficulty
        self.count = count
        self.levels = levels
        self.ttl = ttl
        self.minElapsed = minElapsed
    }

    /// A challenge that a registered device answers (ATTEST.md §9.6): no work, the levels it
    /// grants to a key registered in a format that earns them.
    public static func device(levels: AttestationLevels, ttl: Int = 120) throws(SignCoreError) -> ChallengePolicy {
        guard !levels.isEmpty, Challenge.ttls ~= ttl else {
            throw SignCoreError(.invalidConfiguration, "a device challenge policy has levels and a ttl of 1-3600 s")
        }
        return ChallengePolicy(kind: .device, levels: levels, ttl: ttl)
    }

    private init(kind: Challenge.Kind, levels: AttestationLevels, ttl: Int) {
        self.kind = kind
        difficulty = 0
        count = 0
        self.levels = levels
        self.ttl = ttl
        minElapsed = 0
    }
}
