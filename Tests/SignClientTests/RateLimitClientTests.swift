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
import SignTestSupport
import SignURLSession
import Testing

/// The client core answers a SignCore 429 it can (docs/ATTEST.md §10): the install's registered
/// key or a proof of work, once per request, then carries the pass; the app writes nothing. A
/// 429 it cannot answer, an application's own 429 and an offer made to another key are returned
/// untouched.
@Suite struct RateLimitClientTests {
    final class Server: Sendable {
        let registry = InMemoryDeviceRegistry()
        let redemptions = InMemoryRedemptionStore()
        let served = CallCount()

        /// `/search`: 2 per minute by key, past it a registered key or a proof of work; `/plain`:
        /// 1 per minute, no bypass; `/app-limit`: the application's own 429; `/relayed`: a 429
        /// whose offer was made to another key.
        func app(known: [SigningKey] = []) throws -> some ApplicationProtocol {
            let cache = try KeyCache(source: registry)
            registry.changes.invalidate(cache)
            let keys = try AttestationKeys([SigningKey.generate(.hmacSHA256, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")])
            let attestor = try Attestor(keys: keys, redemptions: redemptions,
                                        devices: Devices(registry: registry, policy: DevicePolicy(appIDs: ["com.example.app"])))
            let bypass = try BypassPolicy(types: [.signcoreDeviceKey, .signcorePoW], difficulty: 12, count: 2)
            var search = RouteRequirements.require, plain = RouteRequirements.require
            search[RouteRateLimits.self] = [try RateLimit(bucket: "SEARCH", quota: 2, window: 60, key: .key, bypass: bypass)]
            plain[RouteRateLimits.self] = [try RateLimit(bucket: "PLAIN", quota: 1, window: 60, key: .key)]
            let router = Router(context: BasicSignatureRequestContext.self)
            router.add(middleware: SignatureMiddleware(verifier: try Verifier(keys: KeySet(known.map { try $0.publicOnly() }), keyCache: cache,
                                                                              replayGuard: InMemoryReplayGuard()),
                                                       origin: ServerOrigin(scheme: "http"),
                                                       policy: try RoutePolicy([.init("/search", search), .init("/plain", plain)], fallback: .require),
                                                       attestation: try AttestationGate(attestor: attestor, challenges: [.device(levels: .level(14))]),
                                                       rateLimits: try RateLimitGate(attestor: attestor)))
            let served = self.served
            router.get("/search") { _, _ -> String in
                served.add()
                return "found"
            }
            router.get("/plain") { _, _ -> String in "plain" }
            router.get("/app-limit") { _, _ -> Response in
                Response(status: .tooManyRequests, headers: [.retryAfter: "5"], body: ResponseBody(byteBuffer: ByteBuffer(string: "slow down")))
            }
            router.get("/relayed") { request, _ -> Response in
                // An offer issued elsewhere, to another key: a client that answered it would hand its work to a stranger.
                let offers = try attestor.bypassOffers(bypass, bucket: "SEARCH", origin: "http://" + (request.head.authority ?? ""),
                                                       keyThumbprint: try SigningKey.generate(.ed25519).thumbprint.bytes,
                                                       now: UInt64(SystemClock.milliseconds()))
                var fields = HTTPFields()
                fields[HTTPField.Name("signcore-bypass")!] = offers.map { "\($0.type.rawValue);bucket=\"SEARCH\";site-key=\"\($0.offer.text)\"" }.joined(separator: ", ")
                return Response(try Refusal(SignCoreError(.rateLimited, "relayed"), serverTime: SystemClock.seconds(), fields: fields))
            }
            return Application(router: router)
        }
    }

    static func get(_ base: String, _ path: String, _ client: SigningClient) async throws -> (HTTPResponse, String) {
        let (data, response) = try await URLSession.shared.signedData(for: HTTPRequest(method: .get, url: URL(string: base + path)!), client: client)
        return (response, String(decoding: data, as: UTF8.self))
    }

    @Test func aRegisteredInstallGetsPastTheLimitAndCarriesItsPass() async throws {
        let server = Server()
        let client = try SigningClient(signer: Signer(key: SigningKey.generate(.p256)),
                                       device: DeviceKeyPolicy(appID: "com.example.app", counter: DeviceCounter()), rateLimit: RateLimitPolicy())
        try await server.app().test(.live) { live in
            let base = "http://127.0.0.1:\(live.port ?? 0)"
            for _ in 0..<4 {
                let (response, body) = try await Self.get(base, "/search", client)
                #expect(response.status == .ok && body == "found")
            }
            // 2 free, then an answer moving the key to its own bucket of 2, then that bucket spent:
            // an answer buys no more, and is not even read (the registration's challenge and one answer redeemed).
            #expect(try await Self.get(base, "/search", client).0.status == .tooManyRequests)
            #expect(server.served.count == 4 && server.redemptions.count == 1 + 1)
        }
    }

    @Test func aClientWithoutADeviceKeyAnswersWithWork() async throws {
        let server = Server()
        let client = try SigningClient(signer: Signer(key: SigningKey.generate(.ed25519)), rateLimit: RateLimitPolicy())
        try await server.app().test(.live) { live in
            let base = "http://127.0.0.1:\(live.port ?? 0)"
            // Its key registers itself: the verifier knows only registered keys.
            _ = try await DeviceKeyPolicy(appID: "com.example.app", counter: DeviceCounter())
                .register(client: client, origin: client.originState(for: HTTPRequest(method: .get, url: URL(string: base)!)), via: SessionTransport(session: .shared))
            for _ in 0..<3 { #expect(try await Self.get(base, "/search", client).0.status == .ok) }
            #expect(server.redemptions.count == 1 + 1)
        }
    }

    @Test func what429sTheClientLeavesAlone() async throws {
        let server = Server()
        let client = try SigningClient(signer: Signer(key: SigningKey.generate(.ed25519)),
                                       device: DeviceKeyPolicy(appID: "com.example.app", counter: DeviceCounter()), rateLimit: RateLimitPolicy())
        try await server.app().test(.live) { live in
            let base = "http://127.0.0.1:\(live.port ?? 0)"
            #expect(try await Self.get(base, "/plain", client).0.status == .ok)
            // A limit that offers nothing: the 429 as it came, read as rate-limited with no offer.
            let (limited, body) = try await Self.get(base, "/plain", client)
            #expect(limited.status == .tooManyRequests)
            #expect(SecondaryVerification(limited, body: Array(body.utf8)) == .rateLimited(offers: [], retryAfter: Int(limited.headerFields[.retryAfter] ?? "")))
            #expect(SecondaryVerification.cptCheck(cookie: "", body: Array(body.utf8)) == 1)
            // The application's own 429: no signcore-error, not SignCore's to answer; a pass for the client.
            let (own, ownBody) = try await Self.get(base, "/app-limit", client)
            #expect(own.status == .tooManyRequests && ownBody == "slow down" && SecondaryVerification(own, body: Array(ownBody.utf8)) == .pass)
            #expect(SecondaryVerification.cptCheck(cookie: "", body: Array(ownBody.utf8)) == 0)
            // An offer made to another key is not answered.
            #expect(try await Self.get(base, "/relayed", client).0.status == .tooManyRequests)
            #expect(server.redemptions.count == 1, "only the registration's challenge")
        }
    }

    /// A key the server knows but has not registered answers with its device key first; the
    /// server rejects that (`bypassDeviceRejected`, not registered), and the client answers the
    /// same 429's next offer, its proof of work, by itself.
    @Test func aRejectedDeviceAnswerFallsBackToWork() async throws {
        let server = Server()
        let key = try SigningKey.generate(.ed25519)
        let client = try SigningClient(signer: Signer(key: key), device: DeviceKeyPolicy(appID: "com.example.app", counter: DeviceCounter()),
                                       rateLimit: RateLimitPolicy())
        try await server.app(known: [key]).test(.live) { live async throws in
            let base = "http://127.0.0.1:\(live.port ?? 0)"
            for _ in 0..<3 { #expect(try await Self.get(base, "/search", client).0.status == .ok) }
            #expect(server.served.count == 3 && server.redemptions.count == 1, "the work's offer, redeemed once; the device's answer never")
        }
    }
}
