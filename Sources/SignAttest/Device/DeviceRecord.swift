import SignCore

/// How a device key was registered (ATTEST.md §9.1): what its registration proved.
public struct DeviceFormat: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A SignCore key that signed its own registration: proof of possession, not of integrity.
    public static let signcore = DeviceFormat(rawValue: "signcore")
    /// An Apple App Attest key whose attestation chains to Apple's App Attest root.
    public static let appleAppAttest = DeviceFormat(rawValue: "apple-app-attest")
    /// A SignCore key registered with a Google Play Integrity verdict.
    public static let androidPlayIntegrity = DeviceFormat(rawValue: "android-play-integrity")

    public static let all: [DeviceFormat] = [.signcore, .appleAppAttest, .androidPlayIntegrity]

    /// Whether a registration in this format proves the device's integrity through its platform.
    public var isPlatformAttested: Bool { self != .signcore }
    /// Whether the key signs SignCore requests (wtokens): SignCore keys do, App Attest keys only
    /// make assertions.
    public var signsRequests: Bool { self != .appleAppAttest }

    public var description: String { rawValue }
}

/// A registered device key (ATTEST.md §9.1): what the registry keeps, on every node alike.
public struct DeviceRecord: Sendable, Hashable {
    /// The key id: a SignCore key's RFC 7638 thumbprint (base64url), an App Attest key's id.
    public var keyID: String
    public var format: DeviceFormat
    /// The public key as a JWK (Ed25519 or P-256), public text.
    public var publicKey: String
    /// The app the key was registered for (`appId` of the registration, or team and bundle).
    public var appID: String
    /// `development` or `production` for App Attest; empty for the other formats.
    public var environment: String
    public var status: KeyRecord.Status
    /// Milliseconds since the epoch.
    public var registeredAt: UInt64
    public var counter: CounterWindow
    /// Milliseconds since the epoch: the last request or assertion the key made that passed.
    public var lastSeen: UInt64
    /// A platform key's (App Attest's): the thumbprint of the SignCore key it answers for, fixed
    /// by its first assertion at the attest endpoint (ATTEST.md §9.6); nil until then.
    public var boundKey: [UInt8]?

    public init(keyID: String, format: DeviceFormat, publicKey: String, appID: String, environment: String = "",
                status: KeyRecord.Status = .active, registeredAt: UInt64, counter: CounterWindow = CounterWindow(), lastSeen: UInt64? = nil,
                boundKey: [UInt8]? = nil) {
        self.keyID = keyID
        self.format = format
        self.publicKey = publicKey
        self.appID = appID
        self.environment = environment
        self.status = status
        self.registeredAt = registeredAt
        self.counter = counter
        self.lastSeen = lastSeen ?? registeredAt
        self.boundKey = boundKey
    }

    /// The record as a verifier's key source answers it: the key when it signs requests (nil
    /// for an App Attest key), with its status and public metadata.
    public func keyRecord() throws(SignCoreError) -> KeyRecord? {
        guard format.signsRequests else { return nil }
        let key = try JWK.parseKey(publicKey)
        guard key.id == keyID else { throw SignCoreError(.invalidKey, "a registered device key's id is not its thumbprint") }
        return KeyRecord(key: key, status: status, metadata: ["device.format": format.rawValue, "device.app": appID])
    }
}

extension KeyRecord.Status {
    /// Read back from a store's text: `active` or `revoked`; nil for anything else.
    public init?(name: String) {
        switch name {
        case "active": self = .active
        case "revoked": self = .revoked
        default: return nil
        }
    }
}
