import Crypto
import Foundation
import SignAttest
@_spi(SignCoreTools) import SignCore

/// Google Play Integrity (docs/ATTEST.md §9.8): a registration of an Android install's SignCore
/// key (a keystore key, through an external signer) vouched for by an integrity verdict, decrypted
/// and verified locally with the keys an operator downloads from the Play Console: a JWE (A256KW,
/// A256GCM) around a JWS (ES256). The verdict's nonce binds the registration challenge and the key.
public struct PlayIntegrityVerifier: PlatformVerifier {
    public let format = DeviceFormat.androidPlayIntegrity
    /// The Play Console's decryption key (AES-256) and verification key (P-256).
    let decryptionKey: SymmetricKey
    let verificationKey: P256.Signing.PublicKey
    /// SHA-256 digests of the app's signing certificates (base64url, no padding) the verdict must
    /// name one of; empty: not checked.
    public let certificateDigests: Set<String>
    /// `appIntegrity.appRecognitionVerdict` values accepted (`PLAY_RECOGNIZED` by default).
    public let appVerdicts: Set<String>
    /// A value `deviceIntegrity.deviceRecognitionVerdict` must hold (`MEETS_DEVICE_INTEGRITY` by
    /// default; `MEETS_STRONG_INTEGRITY` for hardware-backed devices only).
    public let deviceVerdict: String

    /// The longest token read (Play Integrity tokens are a few KB).
    static let maxToken = 16384

    /// - Parameters:
    ///   - decryptionKey: the 32 bytes of the Play Console's decryption key (copied into key
    ///     memory that swift-crypto wipes; the caller wipes its own).
    ///   - verificationKey: the Play Console's verification key, DER (SubjectPublicKeyInfo).
    /// Refuses (`invalidConfiguration`) keys that are not these.
    public init(decryptionKey: [UInt8], verificationKey: [UInt8], certificateDigests: Set<String> = [],
                appVerdicts: Set<String> = ["PLAY_RECOGNIZED"], deviceVerdict: String = "MEETS_DEVICE_INTEGRITY") throws(SignCoreError) {
        guard decryptionKey.count == 32 else { throw SignCoreError(.invalidConfiguration, "the Play Integrity decryption key is 32 bytes") }
        guard let key = try? P256.Signing.PublicKey(derRepresentation: verificationKey) else {
            throw SignCoreError(.invalidConfiguration, "the Play Integrity verification key is a P-256 public key (DER)")
        }
        self.decryptionKey = SymmetricKey(data: decryptionKey)
        self.verificationKey = key
        self.certificateDigests = certificateDigests
        self.appVerdicts = appVerdicts
        self.deviceVerdict = deviceVerdict
    }

    /// The keys as the Play Console gives them, each in a file of its own: the decryption key's
    /// base64 (read into memory that is wiped), the verification key's base64 (DER).
    public init(decryptionKeyFile: String, verificationKeyFile: String, certificateDigests: Set<String> = [],
                appVerdicts: Set<String> = ["PLAY_RECOGNIZED"], deviceVerdict: String = "MEETS_DEVICE_INTEGRITY") throws(SignCoreError) {
        var secret = try readSecretBase64(file: decryptionKeyFile)
        defer { wipeSecret(&secret) }
        let verification = try readSecretBase64(file: verificationKeyFile)  // public, read alike
        try self.init(decryptionKey: secret, verificationKey: verification, certificateDigests: certificateDigests, appVerdicts: appVerdicts,
                      deviceVerdict: deviceVerdict)
    }

    /// The nonce the app asks the verdict for (§9.8): base64url, padded, of
    /// SHA-256(challenge text || the key's 32-byte thumbprint).
    public static func nonce(challenge: String, thumbprint: [UInt8]) -> String {
        let digest = Array(SHA256.hash(data: Array(challenge.utf8) + thumbprint))
        return Base64URL.encode(digest) + "="
    }

    public func verifyRegistration(_ registration: DeviceRegistration, appIDs: [String], now: UInt64) async throws(SignCoreError) -> AttestedKey {
        guard let key = registration.publicKey, let token = registration.token else {
            throw SignCoreError(.registrationMalformed, "a Play Integrity registration has a jwk and a token")
        }
        // The key, as a signcore registration's (§9.4 step 6).
        let thumbprint = key.thumbprint.bytes
        guard registration.keyID == Base64URL.encode(thumbprint), key.id == registration.keyID else {
            throw SignCoreError(.deviceKeyMismatch, "the keyId (and the jwk's kid, when it has one) is not the RFC 7638 thumbprint of the jwk")
        }
        let verdict = try verdict(token)
        let appID = try check(verdict, nonce: Array(SHA256.hash(data: Array(registration.challenge.text.utf8) + thumbprint)), appIDs: appIDs)
        return AttestedKey(keyID: registration.keyID, publicKey: try JWK.serialize(key, includePrivate: false), binding: thumbprint,
                           appID: appID, environment: "")
    }

    /// A verdict asked for with a rate limit's offer as its nonce (ATTEST.md §10.5): §9.8's checks,
    /// the nonce decoding to `nonce`.
    public func verifyVerdict(_ token: [UInt8], nonce: [UInt8], appIDs: [String]) throws(SignCoreError) -> String {
        try check(verdict(token), nonce: nonce, appIDs: appIDs)
    }

    /// The verdict's payload: the JWE decrypted (`platformTokenMalformed` when it is not one, or
    /// not for this key), then the JWS verified under Google's key (`certificateUntrusted`).
    public func verdict(_ token: [UInt8]) throws(SignCoreError) -> [String: Any] {
        let malformed = SignCoreError(.platformTokenMalformed, "the token is not a Play Integrity verdict for this app's keys")
        guard token.count <= Self.maxToken else { throw malformed }
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 5, let header = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
              let fields = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
              fields["alg"] as? String == "A256KW", fields["enc"] as? String == "A256GCM",
              let wrapped = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
              let iv = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)),
              let ciphertext = Base64URL.decode(String(decoding: parts[3], as: UTF8.self)),
              let tag = Base64URL.decode(String(decoding: parts[4], as: UTF8.self)),
              let contentKey = try? AES.KeyWrap.unwrap(wrapped, using: decryptionKey),
              let box = try? AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: ciphertext, tag: tag),
              let jws = try? AES.GCM.open(box, using: contentKey, authenticating: Array(parts[0]))
        else { throw malformed }
        let signed = Array(jws).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard signed.count == 3, let jwsHeader = Base64URL.decode(String(decoding: signed[0], as: UTF8.self)),
              (try? JSONSerialization.jsonObject(with: Data(jwsHeader)) as? [String: Any])?["alg"] as? String == "ES256",
              let payload = Base64URL.decode(String(decoding: signed[1], as: UTF8.self)),
              let signature = Base64URL.decode(String(decoding: signed[2], as: UTF8.self))
        else { throw malformed }
        guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
              verificationKey.isValidSignature(ecdsa, for: Array(signed[0]) + [UInt8(ascii: ".")] + Array(signed[1]))
        else { throw SignCoreError(.certificateUntrusted, "the verdict is not signed by the Play Console's verification key") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else { throw malformed }
        return object
    }

    /// The checks of §9.8 steps 3-7 on a verified payload, in order, `nonce` the bytes the
    /// verdict's nonce must decode to; the app id it names.
    func check(_ verdict: [String: Any], nonce: [UInt8], appIDs: [String]) throws(SignCoreError) -> String {
        let request = verdict["requestDetails"] as? [String: Any] ?? [:]
        let app = verdict["appIntegrity"] as? [String: Any] ?? [:]
        let device = verdict["deviceIntegrity"] as? [String: Any] ?? [:]
        // 3. The nonce: this challenge and this key.
        guard let sent = request["nonce"] as? String, DeviceRegistration.decodeBase64(Array(sent.utf8)) == nonce else {
            throw SignCoreError(.nonceMismatch, "the verdict was not made for this challenge")
        }
        // 4. The package, as requested and as recognised.
        guard let package = request["requestPackageName"] as? String, appIDs.contains(package), app["packageName"] as? String == package else {
            throw SignCoreError(.appMismatch, "the verdict is for an app this server does not serve")
        }
        // 5. The signing certificate.
        let digests = app["certificateSha256Digest"] as? [String] ?? []
        guard certificateDigests.isEmpty || !certificateDigests.isDisjoint(with: digests) else {
            throw SignCoreError(.appMismatch, "the app is not signed with a certificate this server accepts")
        }
        // 6-7. The app's and the device's verdicts.
        let appVerdict = app["appRecognitionVerdict"] as? String ?? "none"
        guard appVerdicts.contains(appVerdict) else {
            throw SignCoreError(.integrityVerdictFailed, "the app integrity verdict is \(Self.printable(appVerdict))")
        }
        let deviceVerdicts = device["deviceRecognitionVerdict"] as? [String] ?? []
        guard deviceVerdicts.contains(deviceVerdict) else {
            throw SignCoreError(.integrityVerdictFailed, "the device integrity verdict lacks \(deviceVerdict)")
        }
        return package
    }

    /// A verdict name in a refusal's detail: Google's names are upper-case words; anything else is
    /// not echoed.
    static func printable(_ name: String) -> String {
        name.utf8.count <= 40 && name.utf8.allSatisfy({ (0x41...0x5A).contains($0) || $0 == 0x5F }) ? name : "not one Google defines"
    }
}
