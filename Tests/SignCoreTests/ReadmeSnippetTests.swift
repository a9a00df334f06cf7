import SignCore
import Testing
#if SIGNCORE_SWIFT_CRYPTO
import Crypto      // CryptoKit on Apple platforms
#endif

// The README's SignCore examples, as printed there: `scripts/check-readme` finds each README
// block between the `README <name>` markers of this file (regions of one name read as one block,
// so the checks can sit between them), and these tests run them.

#if SIGNCORE_SWIFT_CRYPTO
// README external signer: begin
/// A P-256 key whose private half stays with its holder: on a device, a Secure Enclave key
/// (`SecureEnclave.P256.Signing.PrivateKey`, the same API as `P256.Signing.PrivateKey`).
struct DeviceKeySigner: ExternalSigner {
    let key: P256.Signing.PrivateKey   // or SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: saved)
    var algorithm: SignatureAlgorithm { .p256 }
    var publicKey: [UInt8] { Array(key.publicKey.x963Representation) }          // 0x04 || x || y
    func signature(for signingInput: [UInt8]) async throws -> [UInt8] {
        Array(try key.signature(for: signingInput).rawRepresentation)            // ES256: SHA-256 inside, r || s
    }
}
// README external signer: end
#endif

@Suite struct ReadmeSnippetTests {
    /// "Signing messages that are not requests" (SPEC §10), with each key kind.
    @Test(arguments: SignatureAlgorithm.allCases) func messages(_ algorithm: SignatureAlgorithm) throws {
        let key = try SigningKey.generate(algorithm)
        // README messages: begin
        let message = Array("nonce=7f3a;difficulty=18".utf8)
        let signature = try key.signMessage(message, context: "signcore-challenge/1")      // any key that signs
        try key.publicOnly().verifyMessage(message, signature: signature, context: "signcore-challenge/1")
        // another context, message or key: SignCoreError .badSignature
        // README messages: end
        #expect(throws: SignCoreError.self) { try key.verifyMessage(message, signature: signature, context: "signcore-challenge/2") }
    }

    /// "Using it from Swift": a client signs a POST covering two fields, the server verifies it
    /// with the required fields and a replay guard; the same request again is a replay.
    @Test func signAndVerify() async throws {
        let body = Array(#"{"item":"book","qty":1}"#.utf8)
        // README SignCore: begin
        // Client: one key, one signer; cover the header fields the server acts on.
        let key = try SigningKey.generate(.ed25519)                 // or .hmacSHA256, .p256, or JWK.parseKey(...)
        let signer = try Signer(key: key, lifetime: 60, account: "user-1042", coveredHeaders: ["content-type", "idempotency-key"])
        let fields = [HeaderField("Content-Type", "application/json"), HeaderField("Idempotency-Key", "a1b2")]
        let headers = try signer.sign(method: .post, url: "https://api.example.com/v1/orders", body: body, headers: fields)
        // send headers.whash as `whash` and headers.wtoken as `wtoken`, with the same fields
        // README SignCore: end

        // What the server holds and receives: the public key as a JWK Set, the request as sent.
        let jwksText = try JWK.serialize([key], includePrivate: false)
        #expect(!jwksText.contains("\"d\""))
        let receivedURL = "https://api.example.com/v1/orders"
        let receivedFields = fields
        let whashHeader: String? = headers.whash
        let wtokenHeader: String? = headers.wtoken
        var accepted: [VerifiedRequest] = []
        var refused: [SignCoreError.Code] = []

        // README SignCore: begin
        // Server: the keys it accepts, a replay guard, a clock (injectable for tests).
        let verifier = try Verifier(keys: try KeySet(jwks: jwksText), replayGuard: try InMemoryReplayGuard(),
                                    requiredHeaders: try RequiredHeaders(bodyMethods: ["content-type"]))
        // README SignCore: end
        for _ in 0..<2 {  // the second time, the same token: a replay
            // README SignCore: begin
            do {
                let who = try await verifier.verify(ReceivedRequest(method: "POST", url: receivedURL, body: .bytes(body),
                                                                    headers: receivedFields, whash: whashHeader, wtoken: wtokenHeader))
                // who.keyID, who.account, who.created, who.expires, who.coveredHeaders
                // README SignCore: end
                accepted.append(who)
                // README SignCore: begin
            } catch {                                                   // typed throws: `error` is a SignCoreError
                // error.code: a stable SignCoreError.Code (e.g. .whashMismatch = 30)
                // error.code.advice: .reSign, .refreshKeys, .updateClient, .resyncClock, .retryLater, .fixConfiguration, .fixRequest
                // README SignCore: end
                refused.append(error.code)
                #expect(error.code.advice == .reSign)
                // README SignCore: begin
            }
            // README SignCore: end
        }
        #expect(accepted.count == 1)
        #expect(accepted.first?.keyID == key.id)
        #expect(accepted.first?.account == "user-1042")
        #expect(accepted.first?.algorithm == .ed25519)
        #expect(accepted.first?.coveredHeaders == ["content-type", "idempotency-key"])
        if let who = accepted.first { #expect(who.expires == who.created + 60) }
        #expect(refused == [.replayed])
    }

    /// "Keys and rotation": both keys accepted during the change, then only the new one; the
    /// replay guard keeps its nonces across the replacement.
    @Test func rotation() async throws {
        let oldKey = try SigningKey.hmac(secret: Array(repeating: 1, count: 32), id: "2025-old")
        let newKey = try SigningKey.hmac(secret: Array(repeating: 2, count: 32), id: "2026-new")
        let verifier = try Verifier(keys: KeySet([oldKey]), replayGuard: InMemoryReplayGuard(capacity: 1_000, maxShare: 1))
        let url = "https://api.example.com/v1/orders"
        func request(_ key: SigningKey) throws -> ReceivedRequest {
            let headers = try Signer(key: key).sign(method: .get, url: url)
            return ReceivedRequest(method: "GET", url: url, whash: headers.whash, wtoken: headers.wtoken)
        }
        func outcome(_ request: ReceivedRequest) async -> SignCoreError.Code? {
            do { _ = try await verifier.verify(request) } catch { return error.code }
            return nil
        }
        let spent = try request(oldKey)
        let early = try request(newKey)
        #expect(await outcome(spent) == nil)
        #expect(await outcome(early) == .unknownKey)

        // README rotation: begin
        verifier.replaceKeys(try KeySet([oldKey, newKey]))   // 1. every verifier accepts both
        // README rotation: end
        let (oldDuring, newDuring) = (try request(oldKey), try request(newKey))
        #expect(await outcome(oldDuring) == nil)
        #expect(await outcome(newDuring) == nil)
        #expect(await outcome(spent) == .replayed)            // the guard kept the old key's nonce
        // README rotation: begin
        // 2. move signers to newKey; 3. once the old key's last tokens have expired (maxLifetime):
        verifier.replaceKeys(try KeySet([newKey]))
        // README rotation: end
        let (oldAfter, newAfter) = (try request(oldKey), try request(newKey))
        #expect(await outcome(oldAfter) == .unknownKey)
        #expect(await outcome(newAfter) == nil)
    }

    #if SIGNCORE_SWIFT_CRYPTO
    /// "Keys that never leave the hardware": the holder's ES256 signatures verify under the
    /// public key the server registered (with the swift-crypto backend: CI's
    /// `--traits SwiftCryptoBackend` run, and every Apple platform).
    @Test func externalSigner() async throws {
        let body = Array(#"{"item":"book"}"#.utf8)
        // README external signer: begin
        let deviceKey = try SigningKey.external(DeviceKeySigner(key: P256.Signing.PrivateKey()))
        let signer = try Signer(key: deviceKey, account: "alice")
        let headers = try await signer.signAsync(method: .post, url: "https://api.example.com/v1/orders", body: body)
        // Register the public key with the server once: JWK.serialize(deviceKey, includePrivate: false)
        // README external signer: end
        let registered = try JWK.parseKey(try JWK.serialize(deviceKey, includePrivate: false))
        #expect(registered.id == deviceKey.id)
        let verifier = try Verifier(keys: KeySet([registered]), replayGuard: InMemoryReplayGuard(capacity: 1_000, maxShare: 1))
        let verified = try await verifier.verify(ReceivedRequest(method: "POST", url: "https://api.example.com/v1/orders",
                                                                 body: .bytes(body), whash: headers.whash, wtoken: headers.wtoken))
        #expect(verified.keyID == deviceKey.id && verified.account == "alice" && verified.algorithm == .p256)
        #expect(throws: SignCoreError.self) { try signer.sign(method: .get, url: "https://api.example.com/") }  // external keys sign async only
    }
    #endif
}
