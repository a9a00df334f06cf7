/// WebAuthn's authenticator data as App Attest writes it (docs/ATTEST.md §9.7): the RP ID hash
/// (SHA-256 of the app id), flags, the signature counter and, in an attestation, the attested
/// credential data (AAGUID, credential id). The credential public key after them is not read:
/// the certificate carries the key.
struct AuthenticatorData {
    let bytes: [UInt8]
    let rpIDHash: [UInt8]
    let flags: UInt8
    let counter: UInt32
    /// The AAGUID and credential id, when the data has them (an attestation's).
    let aaguid: [UInt8]?
    let credentialID: [UInt8]?

    /// Reads `bytes`: at least 37; with attested credential data, 55 more and the credential id.
    init?(_ bytes: [UInt8], attested: Bool) {
        guard bytes.count >= 37 else { return nil }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        counter = bytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard attested else {
            aaguid = nil
            credentialID = nil
            return
        }
        guard bytes.count >= 55 else { return nil }
        aaguid = Array(bytes[37..<53])
        let length = Int(bytes[53]) << 8 | Int(bytes[54])
        guard bytes.count >= 55 + length else { return nil }
        credentialID = Array(bytes[55..<55 + length])
    }
}
