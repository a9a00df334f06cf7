import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import Hummingbird
import HummingbirdTesting
import SignAttest
@_spi(SignCoreTools) import SignCore
import SignHTTP
import SignHummingbird
import SignURLSession
import Testing

/// A device key whose private half never leaves its holder (a Secure Enclave or keystore key,
/// through `ExternalSigner`; here a CryptoKit P-256 key, as an iOS app holds one) registers itself
/// and earns the registered-device level, the app writing no registration or 428 handling.
@Suite struct DeviceClientTests {
    /// CryptoKit's P-256 signing, as `SecureEnclave.P256.Signing.PrivateKey` answers it.
    struct EnclaveKey: ExternalSigner {
        let key = P256.Signing.PrivateKey()
        var algorithm: SignatureAlgorithm { .p256 }
        var publicKey: [UInt8] { Array(key.publicKey.x963Representation) }
        func signature(for signingInput: [UInt8]) async throws -> [UInt8] { Array(try key.signature(for: signingInput).rawRepresentation) }
    }

    @Test func anExternalKeyRegistersItselfAndCounts() async throws {
        let registry = InMemoryDeviceRegistry()
        let cache = try KeyCache(source: registry)
        registry.changes.invalidate(cache)
        let keys = try AttestationKeys([SigningKey.generate(.hmacSHA256, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")])
        let gate = try AttestationGate(attestor: Attestor(keys: keys, redemptions: InMemoryRedemptionStore(),
                                                          devices: Devices(registry: registry, policy: DevicePolicy(appIDs: ["com.example.app"]))),
                                       challenges: [.device(levels: .level(14))])
        var registered = RouteRequirements.require
        registered[RouteAttestation.self] = .require(.level(14))
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: try Verifier(keys: KeySet([]), keyCache: cache, replayGuard: InMemoryReplayGuard()),
                                                   origin: ServerOrigin(scheme: "http"),
                                                   policy: try RoutePolicy([.init("/v1/profile", registered)], fallback: .require), attestation: gate))
        router.get("/v1/profile") { _, context -> String in "levels \(context.signCore[Attested.self]?.levels.rawValue ?? 0)" }
        router.get("/v1/plain") { _, context -> String in context.signature?.keyID ?? "-" }
        let enclave = try SigningKey.external(EnclaveKey())
        let client = try SigningClient(signer: Signer(key: enclave), device: DeviceKeyPolicy(appID: "com.example.app", counter: DeviceCounter()),
                                       attestation: AttestationPolicy())
        try await Application(router: router).test(.live) { server in
            let base = "http://127.0.0.1:\(server.port ?? 0)"
            let (profile, answer) = try await URLSession.shared.signedData(for: HTTPRequest(method: .get, url: URL(string: base + "/v1/profile")!), client: client)
            #expect(answer.status == .ok && String(decoding: profile, as: UTF8.self) == "levels \(1 << 14)")
            let (plain, _) = try await URLSession.shared.signedData(for: HTTPRequest(method: .get, url: URL(string: base + "/v1/plain")!), client: client)
            #expect(String(decoding: plain, as: UTF8.self) == enclave.id)
            // Registered once, counting: each attempt carried the next counter.
            let record = try #require(try await registry.device(keyID: enclave.id))
            #expect(record.format == .signcore && record.counter.highest >= 4)
        }
    }

    /// A server that relays another server's challenge (bound to a key of its own) gets no work
    /// and no assertion: the client answers only challenges issued to its key at that origin, and
    /// delivers the 428 as it came.
    @Test func aRelayedChallengeIsNotAnswered() async throws {
        let keys = try AttestationKeys([SigningKey.generate(.hmacSHA256, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")])
        let attestor = try Attestor(keys: keys, redemptions: InMemoryRedemptionStore())
        let relayer = try SigningKey.generate(.ed25519)
        let attests = Locked(0)
        let router = Router()
        router.get("/v1/profile") { request, _ -> Response in
            // A challenge issued elsewhere, to the relaying server's own key.
            let challenge = try attestor.challenge(.device(levels: .level(15)), keyThumbprint: relayer.thumbprint.bytes,
                                                   origin: "https://victim.example", now: UInt64(SystemClock.milliseconds()))
            let refusal = try Refusal(SignCoreError(.attestationRequired, "a challenge"), serverTime: SystemClock.seconds(),
                                  fields: [HTTPField.Name("attest-challenge")!: challenge.text])
            return Response(refusal)
        }
        router.post("/.well-known/signcore/attest") { _, _ -> String in
            attests.withLock { $0 += 1 }
            return "{}"
        }
        let client = try SigningClient(signer: Signer(key: SigningKey.generate(.ed25519)), attestation: AttestationPolicy())
        try await Application(router: router).test(.live) { server in
            let url = URL(string: "http://127.0.0.1:\(server.port ?? 0)/v1/profile")!
            let (_, response) = try await URLSession.shared.signedData(for: HTTPRequest(method: .get, url: url), client: client)
            #expect(response.status == .preconditionRequired)
            #expect(attests.withLock { $0 } == 0)
        }
    }
}
