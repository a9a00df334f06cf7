import FuzzCommon
import SignAttest
import SignCore
import SignDevice

/// App Attest's parsers (docs/ATTEST.md §9.7) on any bytes: the attestation object (CBOR,
/// certificates, authenticator data) and an assertion checked against a fixed registered key:
/// a refusal with its code, never a trap, and never an assertion that verifies.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppAttest(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let object = try? AppAttestVerifier.AttestationObject(bytes) {
        if object.certificates.count < 2 || object.rpIDHash.count != 32 { Fuzz.broken("an attestation object outside its shape was read") }
    }
    do {
        _ = try AppAttestVerifier(environments: [.development]).verifyAssertion(bytes, clientData: [1, 2, 3], record: record)
        Fuzz.broken("an assertion verified under a key no one holds the private half of")
    } catch {
        if ![.platformTokenMalformed, .assertionInvalid, .appMismatch].contains(error.code) { Fuzz.broken("an unexpected refusal: \(error.code.name)") }
    }
    return 0
}

/// A registered App Attest key whose private half was thrown away.
let record: DeviceRecord = {
    do {
        let key = try SigningKey.generate(.p256).publicOnly()
        return DeviceRecord(keyID: "fuzz", format: .appleAppAttest, publicKey: try JWK.serialize(key, includePrivate: false),
                            appID: "TEAM.fuzz", registeredAt: 0)
    } catch { fatalError("fixed record: \(error)") }
}()
