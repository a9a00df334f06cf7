import SignCore

/// A way to bypass a rate limit (ATTEST.md §10.3), seed 001's `captchaBypassAvailable[].type`.
public struct BypassType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A registered device key signs the retry (§9), covering the answer.
    public static let signcoreDeviceKey = BypassType(rawValue: "SIGNCORE_DEVICE_KEY")
    /// An App Attest assertion whose client data hash is SHA-256 of the offer's text.
    public static let appleDeviceCheck = BypassType(rawValue: "APPLE_DEVICE_CHECK")
    /// A Play Integrity verdict whose nonce is the offer's text.
    public static let androidPlayIntegrity = BypassType(rawValue: "ANDROID_PLAY_INTEGRITY")
    /// A proof of work (§3) over the offer.
    public static let signcorePoW = BypassType(rawValue: "SIGNCORE_POW")

    public static let all: [BypassType] = [.signcoreDeviceKey, .appleDeviceCheck, .androidPlayIntegrity, .signcorePoW]

    /// Whether a device registry answers it (a registered key, an App Attest key, a verdict's policy).
    public var needsDevices: Bool { self != .signcorePoW }

    public var description: String { rawValue }
}

/// What a limit offers when it fires (ATTEST.md §10.3), the same on every node.
public struct BypassPolicy: Sendable, Hashable {
    /// The types offered, in the order the offer lists them.
    public var types: [BypassType]
    /// Seconds an offer may be answered in (1-3600).
    public var offerTTL: Int
    /// Seconds a pass is valid for (1-86400).
    public var passTTL: Int
    /// The levels a pass holds: its own, so that no pass meets a route's attestation requirement
    /// and no attestation token is taken for a pass (their scopes differ too).
    public var passLevels: AttestationLevels
    /// `SIGNCORE_POW`'s work: leading zero bits per sub-solution (12-26) and sub-solutions (1-16).
    public var difficulty: Int
    public var count: Int

    /// Refuses (`invalidConfiguration`) no type or one twice, TTLs out of range, no pass level,
    /// and work outside 12-26 bits and 1-16 sub-solutions.
    public init(types: [BypassType] = BypassType.all, offerTTL: Int = 60, passTTL: Int = 300,
                passLevels: AttestationLevels = .level(15), difficulty: Int = 18, count: Int = 4) throws(SignCoreError) {
        guard !types.isEmpty, Set(types).count == types.count, types.allSatisfy(BypassType.all.contains), Challenge.ttls ~= offerTTL,
              AttestationToken.ttls ~= passTTL, !passLevels.isEmpty, ChallengePolicy.difficulties ~= difficulty, Challenge.counts ~= count
        else {
            throw SignCoreError(.invalidConfiguration,
                                "a bypass policy has known types once each, an offer TTL of 1-3600 s, a pass TTL of 1-86400 s, pass levels, d 12-26, k 1-16")
        }
        self.types = types
        self.offerTTL = offerTTL
        self.passTTL = passTTL
        self.passLevels = passLevels
        self.difficulty = difficulty
        self.count = count
    }
}

/// A rate limit's bucket (ATTEST.md §10.1): the seed's `rateLimitingBucket`, named by the
/// deployment, 1-64 bytes of `A-Z a-z 0-9 - _`.
public enum RateBucket {
    /// Whether `name` is a bucket's name.
    public static func isName(_ name: String) -> Bool { LayoutReader.isKeyID(Array(name.utf8)[...]) }

    /// The bucket digest (§10.3): SHA-256("SignCore/3 rate bucket\n" || origin || "\n" || bucket),
    /// what an offer and a pass are scoped to in place of the origin digest.
    public static func digest(origin: String, bucket: String) -> [UInt8] {
        var hasher = SHA256Hasher()
        hasher.update("SignCore/3 rate bucket\n".utf8)
        hasher.update(origin.utf8)
        hasher.update("\n".utf8)
        hasher.update(bucket.utf8)
        return hasher.finalize().bytes
    }
}

extension Attestor {
    /// The offers of a limit that fired (ATTEST.md §10.3): one challenge of type 5 per type the
    /// policy lists, bound to the bucket at `origin` and to the key with `keyThumbprint` (none:
    /// 32 zero bytes, a limit that fired before any key was verified); `SIGNCORE_POW`'s carries
    /// the work. Writes nothing.
    public func bypassOffers(_ policy: BypassPolicy, bucket: String, origin: String, keyThumbprint: [UInt8]?,
                             now: UInt64) throws(SignCoreError) -> [(type: BypassType, offer: Challenge)] {
        guard RateBucket.isName(bucket) else { throw SignCoreError(.invalidConfiguration, "a bucket's name is 1-64 bytes of A-Z a-z 0-9 - _") }
        let key = try keys.issuingChallengeKey()
        let digest = RateBucket.digest(origin: origin, bucket: bucket)
        var offers: [(type: BypassType, offer: Challenge)] = []
        for type in policy.types {
            let work = type == .signcorePoW
            offers.append((type, try Challenge(kind: .rateBypass, difficulty: work ? policy.difficulty : 0, count: work ? policy.count : 0,
                                                levels: policy.passLevels, issuedAt: now, ttl: policy.offerTTL,
                                                keyThumbprint: keyThumbprint ?? Self.unbound, originDigest: digest, key: key)))
        }
        return offers
    }
}
