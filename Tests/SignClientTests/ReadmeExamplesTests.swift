import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import OpenAPIRuntime
import SignAsyncHTTPClient
import SignCore
import SignHTTP
import SignOpenAPI
import SignURLSession
import Testing

/// The README's client examples, as printed there (between the `README` markers).
@Suite struct ReadmeExamplesTests {
    /// The clients: compiled; run against signd by GatewayTests.
    func clientExamples(key: SigningKey, http: HTTPClient) async throws {
        // README clients: begin
        // One client per key, kept: it signs every attempt afresh and decides after each response.
        let client = SigningClient(signer: try Signer(key: key, coveredHeaders: ["content-type"]))

        // URLSession (FoundationNetworking on Linux): a fresh signature for every attempt.
        var request = HTTPRequest(method: .post, url: URL(string: "https://api.example.com/v1/orders")!)
        request.headerFields[.contentType] = "application/json"
        let (data, response) = try await URLSession.shared.signedData(for: request, body: Data(#"{"item":1}"#.utf8), client: client)

        // AsyncHTTPClient: bodies in memory (not copied) or files (hashed once, streamed from disk).
        var upload = HTTPClientRequest(url: "https://api.example.com/v1/blobs/7")
        upload.method = .PUT
        let stored = try await http.execute(upload, body: try .file(atPath: "/tmp/blob.bin"), client: client, timeout: .seconds(60))

        // A generated OpenAPI client: the signing middleware last, so retries before it re-sign.
        let middlewares: [any ClientMiddleware] = [SigningMiddleware(client: client)]
        // README clients: end
        _ = (data, response, stored, middlewares)
    }
}

import Hummingbird
import HummingbirdTesting
import SignAttest
import SignHummingbird

/// The README's attestation example, as printed there, run live: a route that asks level 0, a
/// client that answers the 428 by itself.
@Suite struct ReadmeAttestationExampleTests {
    @Test func theAttestationExampleRuns() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readme-attest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let attestKeysFile = folder.appendingPathComponent("attest.jwks").path
        try Data(try JWK.serialize([SigningKey.generate(.hmacSHA256, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")],
                                   includePrivate: true).utf8).write(to: URL(fileURLWithPath: attestKeysFile))
        let deviceKey = try SigningKey.generate(.ed25519)
        let verifier = try Verifier(keys: KeySet([deviceKey.publicOnly()]), replayGuard: InMemoryReplayGuard())
        let origin = ServerOrigin(scheme: "http")
        let router = Router(context: BasicSignatureRequestContext.self)
        // README attestation: begin
        // Server: the keys every node shares, one challenge policy, a route that asks level 0.
        let keys = try AttestationKeys(jwksFile: attestKeysFile)  // oct keys MAC challenges, OKP/EC keys sign tokens
        let gate = try AttestationGate(attestor: Attestor(keys: keys, redemptions: InMemoryRedemptionStore()),
                                       challenges: [ChallengePolicy(difficulty: 18, count: 4, levels: .level(0))])
        var attested = RouteRequirements.require
        attested[RouteAttestation.self] = .require(.level(0))
        let policy = try RoutePolicy([.init("/v1/orders/**", attested)], fallback: .require)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: origin, policy: policy, attestation: gate))
        // README attestation: end
        router.get("/v1/orders/{id}") { _, context -> String in "levels \(context.signCore[Attested.self]?.levels.rawValue ?? 0)" }
        try await Application(router: router).test(.live) { server in
            let request = HTTPRequest(method: .get, url: URL(string: "http://127.0.0.1:\(server.port ?? 0)/v1/orders/7")!)
            // README attestation: begin

            // Client: 428s answered by itself (solve, attest, retry); the token kept per origin,
            // renewed in the background, sent beside every request and covered by its signature.
            let client = try SigningClient(signer: Signer(key: deviceKey), attestation: AttestationPolicy())
            let (data, response) = try await URLSession.shared.signedData(for: request, client: client)
            // README attestation: end
            #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "levels 1")
        }
    }
}

/// The README's device-keys example, as printed there, run live: an install key that nobody
/// configured registers itself, then reaches a route that asks the registered-device level.
@Suite struct ReadmeDeviceExampleTests {
    @Test func theDeviceExampleRuns() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readme-device-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let appSupport = folder.path
        let keys = try AttestationKeys([SigningKey.generate(.hmacSHA256, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")])
        let origin = ServerOrigin(scheme: "http")
        let router = Router(context: BasicSignatureRequestContext.self)
        // README device: begin
        // Server: the registry is the verifier's key source; its changes reach the key cache at once.
        let registry = InMemoryDeviceRegistry()  // PostgresDeviceRegistry for a fleet
        let cache = try KeyCache(source: registry)
        registry.changes.invalidate(cache)
        let devices = Devices(registry: registry, policy: try DevicePolicy(appIDs: ["com.example.app"]))
        let deviceVerifier = try Verifier(keys: KeySet([]), keyCache: cache, replayGuard: InMemoryReplayGuard())
        let deviceGate = try AttestationGate(attestor: Attestor(keys: keys, redemptions: InMemoryRedemptionStore(), devices: devices),
                                             challenges: [.device(levels: .level(14))])
        var registered = RouteRequirements.require
        registered[RouteAttestation.self] = .require(.level(14))  // "a registered device"
        let devicePolicy = try RoutePolicy([.init("/v1/profile", registered)], fallback: .require)
        router.add(middleware: SignatureMiddleware(verifier: deviceVerifier, origin: origin, policy: devicePolicy, attestation: deviceGate))
        // README device: end
        router.get("/v1/profile") { _, context -> String in "levels \(context.signCore[Attested.self]?.levels.rawValue ?? 0)" }
        try await Application(router: router).test(.live) { server in
            let request = HTTPRequest(method: .get, url: URL(string: "http://127.0.0.1:\(server.port ?? 0)/v1/profile")!)
            // README device: begin

            // Client: the install's key and counter in files of mode 0600; the key registers itself on its
            // first refused request, and every request carries the counter.
            let installKey = try SigningKey.loadOrCreate(file: appSupport + "/install.jwk")
            let device = DeviceKeyPolicy(appID: "com.example.app", counter: try DeviceCounter(file: appSupport + "/install.counter"))
            let installClient = try SigningClient(signer: Signer(key: installKey), device: device, attestation: AttestationPolicy())
            let (profile, answer) = try await URLSession.shared.signedData(for: request, client: installClient)
            // README device: end
            #expect(answer.status == .ok && String(decoding: profile, as: UTF8.self) == "levels \(1 << 14)")
            // The key file and the counter file are the owner's alone.
            for name in ["install.jwk", "install.counter"] {
                let mode = try FileManager.default.attributesOfItem(atPath: appSupport + "/" + name)[.posixPermissions] as? Int
                #expect(mode == 0o600, "\(name)")
            }
        }
    }
}

/// The README's rate-limit example, as printed there, run live: a login limited per address that
/// an install's registered key gets past by itself, and the responses read for what they ask.
@Suite struct ReadmeRateLimitExampleTests {
    @Test func theRateLimitExampleRuns() async throws {
        let keys = try AttestationKeys([SigningKey.generate(.hmacSHA256, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")])
        let registry = InMemoryDeviceRegistry()
        let cache = try KeyCache(source: registry)
        registry.changes.invalidate(cache)
        let deviceVerifier = try Verifier(keys: KeySet([]), keyCache: cache, replayGuard: InMemoryReplayGuard())
        let deviceGate = try AttestationGate(attestor: Attestor(keys: keys, redemptions: InMemoryRedemptionStore(),
                                                                devices: Devices(registry: registry, policy: try DevicePolicy(appIDs: ["com.example.app"]))),
                                             challenges: [.device(levels: .level(14))])
        let origin = ServerOrigin(scheme: "http")
        let router = Router(context: BasicSignatureRequestContext.self)
        // README rate limits: begin
        // Server: 3 logins a minute per client address (behind your proxies); past it, the install's
        // registered key or a proof of work gets through (seed 001's X-Captcha-Type and -Response).
        let login = try RateLimit(bucket: "LOGIN", quota: 3, window: 60, key: .address,
                                  bypass: BypassPolicy(types: [.signcoreDeviceKey, .signcorePoW]))
        var limited = RouteRequirements.require
        limited[RouteRateLimits.self] = [login]
        router.add(middleware: ClientAddressMiddleware(proxies: TrustedProxies([IPNetwork("10.0.0.0/8")!])))
        router.add(middleware: SignatureMiddleware(verifier: deviceVerifier, origin: origin,
                                                   policy: try RoutePolicy([.init("POST /v1/login", limited)], fallback: .require),
                                                   attestation: deviceGate, rateLimits: try RateLimitGate(attestor: deviceGate.attestor)))
        // README rate limits: end
        router.post("/v1/login") { _, _ -> String in "welcome" }
        let appSupport = FileManager.default.temporaryDirectory.appendingPathComponent("readme-limits-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: appSupport, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: appSupport) }
        let installKey = try SigningKey.loadOrCreate(file: appSupport + "/install.jwk")
        let device = DeviceKeyPolicy(appID: "com.example.app", counter: try DeviceCounter(file: appSupport + "/install.counter"))
        try await Application(router: router).test(.live) { server in
            let request = HTTPRequest(method: .post, url: URL(string: "http://127.0.0.1:\(server.port ?? 0)/v1/login")!)
            let cookies = ""
            // README rate limits: begin

            // Client: a SignCore 429 it can answer is answered (the registered key, else work) and the
            // pass kept; any response says what it asks (seed 004's cptCheck: 0 pass, 1 verify).
            let limitedClient = try SigningClient(signer: Signer(key: installKey), device: device, rateLimit: RateLimitPolicy())
            // README rate limits: end
            for _ in 0..<5 {
                // README rate limits: begin
                let (reply, status) = try await URLSession.shared.signedData(for: request, body: Data("{}".utf8), client: limitedClient)
                switch SecondaryVerification(status, body: Array(reply)) {
                case .pass: break
                case .rateLimited(let offers, let retryAfter): print("limited: \(offers.count) offers, retry after \(retryAfter ?? 0) s")
                case .challenge, .register, .resign, .resyncClock, .retryLater, .block: print("refused: \(status.status)")
                }
                let recheck = SecondaryVerification.cptCheck(cookie: cookies, body: Array(reply))
                // README rate limits: end
                #expect(status.status == .ok && String(decoding: reply, as: UTF8.self) == "welcome" && recheck == 0)
            }
        }
    }
}
