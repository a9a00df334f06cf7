import SignCore

/// What a deployment accepts of devices (ATTEST.md §9.2), the same on every node.
public struct DevicePolicy: Sendable {
    /// The registration formats accepted.
    public var formats: Set<DeviceFormat>
    /// The app ids a registration may name (format `signcore`'s `appId`; team and bundle for
    /// App Attest; the package name for Play Integrity).
    public var appIDs: [String]
    /// Seconds a registration challenge may be answered in (1-3600).
    public var registrationTTL: Int
    /// The levels that only a platform-attested device earns: a device challenge granting any of
    /// them is refused to a key of format `signcore` (`formatNotAccepted`).
    public var platformLevels: AttestationLevels
    /// The verifiers of the platform formats accepted (SignDevice's App Attest and Play Integrity).
    public var verifiers: [DeviceFormat: any PlatformVerifier]

    /// Refuses (`invalidConfiguration`) no format, no app id, a TTL outside 1-3600 s, and a
    /// platform format without its verifier.
    public init(formats: Set<DeviceFormat> = [.signcore], appIDs: [String], registrationTTL: Int = 300,
                platformLevels: AttestationLevels = [], verifiers: [any PlatformVerifier] = []) throws(SignCoreError) {
        guard !formats.isEmpty, !appIDs.isEmpty, appIDs.allSatisfy({ (1...DeviceRegistration.maxTextBytes).contains($0.utf8.count) }),
              Challenge.ttls ~= registrationTTL
        else { throw SignCoreError(.invalidConfiguration, "a device policy has formats, app ids of 1-256 bytes and a registration TTL of 1-3600 s") }
        let byFormat = Dictionary(verifiers.map { ($0.format, $0) }, uniquingKeysWith: { first, _ in first })
        guard formats.allSatisfy({ !$0.isPlatformAttested || byFormat[$0] != nil }) else {
            throw SignCoreError(.invalidConfiguration, "a platform format is accepted only with its verifier")
        }
        self.formats = formats
        self.appIDs = appIDs
        self.registrationTTL = registrationTTL
        self.platformLevels = platformLevels
        self.verifiers = byFormat
    }
}

/// A node's device keys: the fleet's registry and the policy it is read under.
public struct Devices: Sendable {
    public let registry: any DeviceRegistry
    public let policy: DevicePolicy

    public init(registry: any DeviceRegistry, policy: DevicePolicy) {
        self.registry = registry
        self.policy = policy
    }
}

extension Attestor {
    /// The node's devices (`invalidConfiguration` when it has none).
    func configuredDevices() throws(SignCoreError) -> Devices {
        guard let devices else { throw SignCoreError(.invalidConfiguration, "this node has no device registry") }
        return devices
    }

    /// A one-time registration challenge (ATTEST.md §9.3) at `origin`, bound to the 32-byte key
    /// id `keyID` when given (a SignCore key's thumbprint, an App Attest key's id), else to none.
    /// Writes nothing.
    public func registrationChallenge(boundTo keyID: [UInt8]?, origin: String, now: UInt64) throws(SignCoreError) -> Challenge {
        let devices = try configuredDevices()
        guard keyID.map({ $0.count == 32 }) ?? true else { throw SignCoreError(.registrationMalformed, "a key id to bind is 32 bytes") }
        return try Challenge(kind: .registration, difficulty: 0, count: 0, levels: [], issuedAt: now, ttl: devices.policy.registrationTTL,
                             keyThumbprint: keyID ?? Self.unbound, originDigest: AttestationScope.originDigest(origin),
                             key: keys.issuingChallengeKey())
    }

    /// The key field of a registration challenge bound to no key.
    static let unbound = [UInt8](repeating: 0, count: 32)
}
