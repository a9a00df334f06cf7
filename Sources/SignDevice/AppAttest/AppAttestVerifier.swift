import Crypto
import Foundation
import SignAttest
@_spi(SignCoreTools) import SignCore
import SwiftASN1
import X509

/// Apple App Attest (docs/ATTEST.md §9.7): a registration's attestation object verified as Apple
/// specifies, and assertions by the key it attests. Trusts Apple's App Attest root unless given
/// others (a test CA), and the environments configured.
public struct AppAttestVerifier: PlatformVerifier {
    public let format = DeviceFormat.appleAppAttest
    public let roots: [Certificate]
    /// `production`, `development`, or both: the AAGUIDs accepted.
    public let environments: Set<Environment>

    public enum Environment: String, Sendable, Hashable, CaseIterable {
        case production, development

        /// The AAGUID of the environment: `appattest` and seven zero bytes, or `appattestdevelop`.
        var aaguid: [UInt8] {
            switch self {
            case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
            case .development: Array("appattestdevelop".utf8)
            }
        }
    }

    /// The OID of the credential certificate's extension holding the nonce.
    static let nonceExtension: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]
    /// Attestation objects are about 5.5 KB; a certificate chain of more than 4 is not App Attest's.
    static let maxChain = 4

    /// Apple's App Attest root.
    public static var appleRoot: Certificate {
        // A constant of this file: it parses, and a test checks it.
        (try? Certificate(pemEncoded: AppleRoot.pem)) ?? { preconditionFailure("the embedded Apple root is a certificate") }()
    }

    public init(roots: [Certificate] = [AppAttestVerifier.appleRoot], environments: Set<Environment> = [.production]) {
        self.roots = roots
        self.environments = environments
    }

    public func verifyRegistration(_ registration: DeviceRegistration, appIDs: [String], now: UInt64) async throws(SignCoreError) -> AttestedKey {
        guard let keyID = DeviceRegistration.decodeBase64(Array(registration.keyID.utf8)), keyID.count == 32 else {
            throw SignCoreError(.registrationMalformed, "an App Attest keyId is the base64 of 32 bytes")
        }
        guard let token = registration.token else { throw SignCoreError(.registrationMalformed, "an App Attest registration has a token") }
        return try await verifyAttestation(token, clientData: Array(registration.challenge.text.utf8), keyID: keyID, appIDs: appIDs,
                                           at: Date(timeIntervalSince1970: Double(now) / 1000))
    }

    /// Apple's steps, in Apple's order (docs/ATTEST.md §9.7): the attestation object `object`
    /// made for `clientData` (whose SHA-256 the app passed as the client data hash) by the key
    /// `keyID`, checked at `time`.
    public func verifyAttestation(_ object: [UInt8], clientData: [UInt8], keyID: [UInt8], appIDs: [String],
                                  at time: Date) async throws(SignCoreError) -> AttestedKey {
        // 0. The object.
        let attestation = try AttestationObject(object)
        let (certificates, authBytes, authData) = (attestation.certificates, attestation.authenticatorData, attestation.authData)
        let credential = certificates[0]
        // 1. The chain, from the credential certificate to a trusted root.
        var verifier = X509.Verifier(rootCertificates: CertificateStore(roots)) { RFC5280Policy(validationTime: time) }
        guard case .validCertificate = await verifier.validate(leaf: credential, intermediates: CertificateStore(certificates.dropFirst())) else {
            throw SignCoreError(.certificateUntrusted, "the attestation's certificates do not chain to a trusted App Attest root")
        }
        // 2-4. nonce = SHA-256(authData || SHA-256(clientData)), the credential certificate's extension.
        let nonce = Array(SHA256.hash(data: authBytes + Array(SHA256.hash(data: clientData))))
        guard let value = credential.extensions[oid: Self.nonceExtension]?.value, Self.octetString(inNonceExtension: Array(value)) == nonce else {
            throw SignCoreError(.nonceMismatch, "the attestation was not made for this challenge")
        }
        // 5. The key id is SHA-256 of the credential's public key (a P-256 point).
        guard let key = P256.Signing.PublicKey(credential.publicKey) else {
            throw SignCoreError(.platformTokenMalformed, "an App Attest credential key is P-256")
        }
        let point = Array(key.x963Representation)
        guard Array(SHA256.hash(data: point)) == keyID else {
            throw SignCoreError(.deviceKeyMismatch, "the attested key is not the keyId's")
        }
        // 6. The RP ID hash is SHA-256 of an app id served (team id, a dot, bundle id).
        guard let appID = appIDs.first(where: { Array(SHA256.hash(data: Array($0.utf8))) == authData.rpIDHash }) else {
            throw SignCoreError(.appMismatch, "the attestation is for an app this server does not serve")
        }
        // 7. The counter of a new key is 0.
        guard authData.counter == 0 else { throw SignCoreError(.platformCounterInvalid, "an attestation's counter is 0") }
        // 8. The environment.
        guard let environment = environments.first(where: { $0.aaguid == authData.aaguid }) else {
            throw SignCoreError(.environmentMismatch, "the attestation is from an App Attest environment this server does not accept")
        }
        // 9. The credential id is the key id.
        guard authData.credentialID == keyID else { throw SignCoreError(.deviceKeyMismatch, "the credential id is not the keyId") }
        let jwk = #"{"kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(Array(point[1..<33])))","y":"\#(Base64URL.encode(Array(point[33..<65])))"}"#
        return AttestedKey(keyID: DeviceRegistration.base64(keyID), publicKey: jwk, binding: keyID, appID: appID,
                           environment: environment.rawValue)
    }

    /// An attestation object read (docs/ATTEST.md §9.7 step 0): CBOR {fmt: "apple-appattest",
    /// attStmt: {x5c: [credCert, CA…], receipt}, authData}, its certificates parsed, its
    /// authenticator data with the attested credential data. `platformTokenMalformed` otherwise.
    public struct AttestationObject: Sendable {
        public let certificates: [Certificate]
        public let authenticatorData: [UInt8]
        let authData: AuthenticatorData

        public init(_ object: [UInt8]) throws(SignCoreError) {
            guard let cbor = try? CBOR(decoding: object), cbor["fmt"] == .text("apple-appattest"),
                  let chain = cbor["attStmt"]?["x5c"]?.arrayValue, (2...AppAttestVerifier.maxChain).contains(chain.count),
                  let der = Optional(chain.compactMap(\.bytesValue)), der.count == chain.count,
                  let certificates = try? der.map({ try Certificate(derEncoded: $0) }),
                  let authBytes = cbor["authData"]?.bytesValue, let authData = AuthenticatorData(authBytes, attested: true)
            else { throw SignCoreError(.platformTokenMalformed, "the token is not an App Attest attestation object") }
            self.certificates = certificates
            authenticatorData = authBytes
            self.authData = authData
        }

        /// The RP ID hash, counter, AAGUID and credential id of the authenticator data.
        public var rpIDHash: [UInt8] { authData.rpIDHash }
        public var counter: UInt32 { authData.counter }
        public var aaguid: [UInt8]? { authData.aaguid }
        public var credentialID: [UInt8]? { authData.credentialID }
    }

    /// An assertion (docs/ATTEST.md §9.7): CBOR {signature, authenticatorData}, the signature an
    /// ECDSA P-256 SHA-256 signature (DER) by the record's key over
    /// SHA-256(authenticatorData || SHA-256(clientData)), the RP ID hash the record's app's. Its counter.
    public func verifyAssertion(_ token: [UInt8], clientData: [UInt8], record: DeviceRecord) throws(SignCoreError) -> UInt64 {
        guard let cbor = try? CBOR(decoding: token), let signature = cbor["signature"]?.bytesValue,
              let authBytes = cbor["authenticatorData"]?.bytesValue, let authData = AuthenticatorData(authBytes, attested: false),
              let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: signature)
        else { throw SignCoreError(.platformTokenMalformed, "the token is not an App Attest assertion") }
        guard let key = keys.key(for: record.publicKey) else { throw SignCoreError(.invalidKey, "the registered App Attest key is not a P-256 JWK") }
        let nonce = Array(SHA256.hash(data: authBytes + Array(SHA256.hash(data: clientData))))
        guard key.isValidSignature(ecdsa, for: nonce) else {
            throw SignCoreError(.assertionInvalid, "the assertion's signature does not verify under the registered key")
        }
        guard authData.rpIDHash == Array(SHA256.hash(data: Array(record.appID.utf8))) else {
            throw SignCoreError(.appMismatch, "the assertion is for another app")
        }
        // The attestation counted 0; every assertion counts from 1 (no "no counter" here).
        guard authData.counter > 0 else { throw SignCoreError(.platformCounterInvalid, "an assertion's counter is at least 1") }
        return UInt64(authData.counter)
    }

    /// Registered keys as parsed, by their JWK text: an assertion does not parse its key again.
    let keys = ParsedKeys()

    final class ParsedKeys: Sendable {
        static let capacity = 4096
        private let parsed = Locked<[String: P256.Signing.PublicKey]>([:])

        /// The P-256 key of a JWK (its x and y), parsed once; nil when it is not one.
        func key(for jwk: String) -> P256.Signing.PublicKey? {
            if let key = parsed.withLock({ $0[jwk] }) { return key }
            guard let signingKey = try? JWK.parseKey(jwk), let key = try? P256.Signing.PublicKey(x963Representation: signingKey.publicKey) else {
                return nil
            }
            parsed.withLock { parsed in
                if parsed.count >= Self.capacity { parsed.removeAll() }
                parsed[jwk] = key
            }
            return key
        }
    }

    /// The octet string of the nonce extension's value: SEQUENCE { [1] EXPLICIT OCTET STRING }.
    static func octetString(inNonceExtension value: [UInt8]) -> [UInt8]? {
        guard let node = try? DER.parse(value) else { return nil }
        return try? DER.sequence(node, identifier: .sequence) { nodes in
            guard let tagged = nodes.next() else { throw ASN1Error.invalidASN1Object(reason: "empty") }
            return try DER.explicitlyTagged(tagged, tagNumber: 1, tagClass: .contextSpecific) { inner in
                Array(try ASN1OctetString(derEncoded: inner).bytes)
            }
        }
    }
}
