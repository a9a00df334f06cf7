import SignCore

/// A challenge (ATTEST.md §2): fixed-offset binary, authenticated by the server's `oct` key,
/// stateless (issuing writes nothing). Carried in the `attest-challenge` field of a 428.
public struct Challenge: Sendable, Equatable, CustomStringConvertible {
    /// What a client must do to redeem it (ATTEST.md §2.1 `type`).
    public struct Kind: RawRepresentable, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Proof of work (ATTEST.md §3).
        public static let proofOfWork = Kind(rawValue: 1)
        /// A device registration's one-time challenge (ATTEST.md §9.3): grants no level.
        public static let registration = Kind(rawValue: 2)
        /// Answered by a registered device (ATTEST.md §9.6): the key's own signed request, or its
        /// platform's assertion. Grants levels.
        public static let device = Kind(rawValue: 3)
        /// Seed 003's one-time payload (ATTEST.md §9.6): asserted by a platform key at the device
        /// endpoint, never redeemed for a token. Grants no level.
        public static let payload = Kind(rawValue: 4)
        /// A rate limit's bypass offer, the seed's `siteKey` (ATTEST.md §10.3): bound to a bucket
        /// rather than an origin; with work for `SIGNCORE_POW`, without for the device answers.
        /// Grants the pass's levels, never redeemed at the attest endpoint.
        public static let rateBypass = Kind(rawValue: 5)

        /// Whether `difficulty`, `count` and `levels` are in this kind's ranges (ATTEST.md §2.4):
        /// proof of work has d 1-32, k 1-16 and levels; the device kinds d = k = 0, and levels
        /// only when they earn a token (type 3).
        func admits(difficulty: Int, count: Int, levels: AttestationLevels) -> Bool {
            switch self {
            case .proofOfWork: Challenge.difficulties ~= difficulty && Challenge.counts ~= count && !levels.isEmpty
            case .registration, .payload: difficulty == 0 && count == 0 && levels.isEmpty
            case .device: difficulty == 0 && count == 0 && !levels.isEmpty
            case .rateBypass:
                !levels.isEmpty && (difficulty == 0 && count == 0 || Challenge.difficulties ~= difficulty && Challenge.counts ~= count)
            default: false
            }
        }
    }

    public static let version: UInt8 = 1
    /// The context of the tag's SPEC §10 signature (ATTEST.md §2.2).
    public static let tagContext = "signcore-challenge/1"
    public static let difficulties = 1...32
    public static let counts = 1...16
    public static let ttls = 1...3600
    /// The bytes before the key id (ATTEST.md §2.1), and the tag's.
    static let fixedBytes = 103, tagBytes = 32

    public let kind: Kind
    /// Leading zero bits of each sub-solution (d).
    public let difficulty: Int
    /// Sub-solutions (k).
    public let count: Int
    /// What a redemption grants.
    public let levels: AttestationLevels
    /// Milliseconds since the epoch, by the issuing server's clock.
    public let issuedAt: UInt64
    /// Seconds.
    public let ttl: Int
    /// Milliseconds that must pass between issue and redemption.
    public let minElapsed: Int
    /// The thumbprint of the key the challenge was issued to (a registration challenge: the
    /// key id it is bound to, or 32 zero bytes when unbound).
    public let keyThumbprint: [UInt8]
    /// The origin digest of the request that was challenged.
    public let originDigest: [UInt8]
    public let random: [UInt8]
    /// The id of the server's `oct` key that made the tag.
    public let serverKeyID: String
    /// Every byte: the body, then the tag.
    public let bytes: [UInt8]

    /// The bytes the tag covers (ATTEST.md §2.1).
    public var body: ArraySlice<UInt8> { bytes[..<(bytes.count - Self.tagBytes)] }
    public var tag: ArraySlice<UInt8> { bytes[(bytes.count - Self.tagBytes)...] }
    /// SHA-256 of every byte: the key a redemption is recorded under.
    public var id: SHA256Digest { SHA256Hasher.hash(bytes) }
    /// The header field's value.
    public var text: String { Base64URL.encode(bytes) }
    /// Until when (milliseconds) a redemption may come, before the fleet's skew.
    public var expiresAt: UInt64 { issuedAt.addingSaturated(UInt64(ttl) * 1000) }

    public var description: String { "Challenge(kind \(kind.rawValue), d \(difficulty), k \(count), \(levels), ttl \(ttl) s)" }

    /// Issues a challenge (ATTEST.md §2.1, §2.2) under `key` (an `oct` key). Refuses
    /// (`invalidConfiguration`) parameters outside the layout's ranges.
    public init(kind: Kind = .proofOfWork, difficulty: Int, count: Int, levels: AttestationLevels, issuedAt: UInt64, ttl: Int,
                minElapsed: Int = 0, keyThumbprint: [UInt8], originDigest: [UInt8], random: [UInt8]? = nil,
                key: SigningKey) throws(SignCoreError) {
        guard kind.admits(difficulty: difficulty, count: count, levels: levels),
              Self.ttls ~= ttl, minElapsed >= 0, minElapsed < ttl * 1000, keyThumbprint.count == 32, originDigest.count == 32, random.map({ $0.count == 16 }) ?? true
        else { throw SignCoreError(.invalidConfiguration, "challenge parameters outside ATTEST.md §2.1's ranges") }
        guard key.algorithm == .hmacSHA256 else { throw SignCoreError(.invalidConfiguration, "a challenge is authenticated by an oct key") }
        let random = random ?? Nonce.random().bytes  // 16 bytes of the backend's CSPRNG-seeded generator
        var body = LayoutWriter(capacity: Self.fixedBytes + key.id.utf8.count + Self.tagBytes)
        body.u8(Self.version)
        body.u8(kind.rawValue)
        body.u8(UInt8(difficulty))
        body.u8(UInt8(count))
        body.u16(levels.rawValue)
        body.u64(issuedAt)
        body.u32(UInt32(ttl))
        body.u32(UInt32(minElapsed))
        body.raw(keyThumbprint)
        body.raw(originDigest)
        body.raw(random)
        body.u8(UInt8(key.id.utf8.count))
        body.raw(key.id.utf8)
        let tag = try key.signMessage(body.bytes, context: Self.tagContext)
        try self.init(bytes: body.bytes + tag)
    }

    /// Parses a challenge's header value (ATTEST.md §2.4); every refusal is
    /// `attestationMalformed`. The tag is not checked here: `ChallengeCheck` does that.
    public init(parsing text: String) throws(SignCoreError) {
        guard let bytes = decodeField(text) else { throw Self.malformed("a challenge is base64url of at most 1024 bytes") }
        try self.init(bytes: bytes)
    }

    init(bytes: [UInt8]) throws(SignCoreError) {
        guard bytes.count >= Self.fixedBytes + 1 + Self.tagBytes else { throw Self.malformed("a challenge is at least 136 bytes") }
        let layout = LayoutReader(bytes: bytes)
        let kidLength = Int(layout.u8(at: 102))
        guard layout.u8(at: 0) == Self.version else { throw Self.malformed("the challenge's version is not 1") }
        kind = Kind(rawValue: layout.u8(at: 1))
        guard [Kind.proofOfWork, .registration, .device, .payload, .rateBypass].contains(kind) else { throw Self.malformed("the challenge's type is not one this version knows") }
        difficulty = Int(layout.u8(at: 2))
        count = Int(layout.u8(at: 3))
        levels = AttestationLevels(rawValue: layout.u16(at: 4))
        let issued = layout.u64(at: 6)
        ttl = Int(layout.u32(at: 14))
        minElapsed = Int(layout.u32(at: 18))
        guard kind.admits(difficulty: difficulty, count: count, levels: levels), Self.ttls ~= ttl, minElapsed < ttl * 1000
        else { throw Self.malformed("a challenge field is outside its range") }
        guard bytes.count == Self.fixedBytes + kidLength + Self.tagBytes, LayoutReader.isKeyID(bytes[103..<(103 + kidLength)]) else {
            throw Self.malformed("the challenge's key id or length is wrong")
        }
        issuedAt = issued
        keyThumbprint = layout.raw(at: 22, count: 32)
        originDigest = layout.raw(at: 54, count: 32)
        random = layout.raw(at: 86, count: 16)
        serverKeyID = String(decoding: bytes[103..<(103 + kidLength)], as: UTF8.self)
        self.bytes = bytes
    }

    static func malformed(_ detail: String) -> SignCoreError { SignCoreError(.attestationMalformed, detail) }
}
