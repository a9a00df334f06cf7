import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@_spi(SignCoreTools) import SignCore
import SignAttest
import SignHTTP
import SignHummingbird
import SignTestSupport
import Testing

/// Rate limits and their bypass (docs/ATTEST.md §10) on a real Hummingbird server on loopback:
/// the 429 with seed 001's offer, each of seed 001's error rows over HTTP, proof of work and a
/// registered key getting past a limit, passes, address keys behind a trusted proxy, and buckets
/// that one client cannot spend for another.
@Suite struct RateLimitServerTests {
    static let origin = ServerOrigin(scheme: "https", authority: "api.example.com")
    static let keys = DeviceServerTests.keys
    static let type = HTTPField.Name("x-captcha-type")!, response = HTTPField.Name("x-captcha-response")!
    static let siteKey = HTTPField.Name("x-captcha-site-key")!, pass = HTTPField.Name("signcore-rate-pass")!
    static let forwardedFor = HTTPField.Name("x-forwarded-for")!

    final class Server: Sendable {
        let registry = InMemoryDeviceRegistry()
        let handled = CallCount()
        /// A key the server knows from its key set, registered or not.
        let known: SigningKey
        let attestor: Attestor

        init() throws {
            known = try SigningKey.generate(.ed25519)
            attestor = try Attestor(keys: RateLimitServerTests.keys, redemptions: InMemoryRedemptionStore(),
                                    devices: Devices(registry: registry, policy: DevicePolicy(appIDs: ["com.example.app"])))
        }

        /// `/login`: 2 per minute by address, past it a registered key or a proof of work;
        /// `/search`: 2 per minute by key; `/open` (not verified): 1 per minute by address, a
        /// proof of work; `/plain`: 1 per minute by key, no bypass.
        func app() throws -> some ApplicationProtocol {
            let cache = try KeyCache(source: registry, positiveLifetime: 300, negativeLifetime: 300)
            registry.changes.invalidate(cache)
            let verifier = try Verifier(keys: KeySet([known.publicOnly()]), keyCache: cache, replayGuard: InMemoryReplayGuard(capacity: 10_000, maxShare: 1))
            let bypass = try BypassPolicy(types: [.signcoreDeviceKey, .signcorePoW], difficulty: 12, count: 1)
            func route(_ signature: RouteRequirements, _ limit: RateLimit) -> RouteRequirements {
                var requirements = signature
                requirements[RouteRateLimits.self] = [limit]
                return requirements
            }
            let policy = try RoutePolicy([
                .init("/login", route(.require, try RateLimit(bucket: "LOGIN", quota: 2, window: 60, key: .address, bypass: bypass))),
                .init("/search", route(.require, try RateLimit(bucket: "SEARCH", quota: 2, window: 60, key: .key, bypass: bypass))),
                .init("/open", route(.off, try RateLimit(bucket: "OPEN", quota: 1, window: 60, key: .address,
                                                         bypass: try BypassPolicy(types: [.signcorePoW], difficulty: 12, count: 1)))),
                .init("/plain", route(.require, try RateLimit(bucket: "PLAIN", quota: 1, window: 60, key: .key))),
            ], fallback: .require)
            let gate = try RateLimitGate(attestor: attestor)
            let router = Router(context: BasicSignatureRequestContext.self)
            router.add(middleware: ClientAddressMiddleware(proxies: TrustedProxies([IPNetwork("127.0.0.0/8")!])))
            router.add(middleware: SignatureMiddleware(verifier: verifier, origin: RateLimitServerTests.origin, policy: policy, rateLimits: gate))
            let handled = self.handled
            for path in ["/login", "/search", "/open", "/plain"] {
                router.get(RouterPath(stringLiteral: path)) { _, context -> String in
                    handled.add()
                    return context.signature?.keyID ?? "-"
                }
            }
            return Application(router: router)
        }

        func register(_ key: SigningKey) async throws {
            _ = try await registry.register(DeviceRecord(keyID: key.id, format: .signcore, publicKey: try JWK.serialize(key, includePrivate: false),
                                                         appID: "com.example.app", registeredAt: 1))
        }
    }

    /// The fields of a request to `path` signed by `key` (nil: unsigned), with `extra` fields
    /// (covered, unless `cover` is false).
    static func fields(_ path: String, key: SigningKey?, extra: [(HTTPField.Name, String)] = [], cover: Bool = true,
                       from address: String? = nil) throws -> HTTPFields {
        var fields: HTTPFields
        if let key {
            fields = try DeviceServerTests.signed(path, key: key, extra: cover ? extra : [])
            if !cover { for (name, value) in extra { fields.append(HTTPField(name: name, value: value)) } }
        } else {
            fields = HTTPFields()
            for (name, value) in extra { fields.append(HTTPField(name: name, value: value)) }
        }
        if let address { fields[forwardedFor] = address }
        return fields
    }

    static func code(_ response: TestResponse) -> Int? { DeviceServerTests.code(response) }

    static func problem(_ response: TestResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
    }

    /// The offers of a 429's `signcore-bypass`, as a client reads them.
    static func offers(_ response: TestResponse) -> [RateLimitOffer] {
        RateLimitOffer.offers(in: HTTPResponse(status: response.status, headerFields: response.headers))
    }

    /// Sends requests to `path` until one is refused; returns it.
    static func exhaust(_ client: some TestClientProtocol, _ path: String, key: SigningKey?, from address: String? = nil) async throws -> TestResponse {
        for _ in 0..<10 {
            let response = try await client.execute(uri: path, method: .get, headers: fields(path, key: key, from: address))
            if response.status == .tooManyRequests { return response }
            #expect(response.status == .ok)
        }
        Issue.record("the limit of \(path) never fired")
        throw CancellationError()
    }

    /// An answer's fields for `offer`.
    static func answer(_ type: BypassType, _ offer: RateLimitOffer, response: String) -> [(HTTPField.Name, String)] {
        [(Self.type, type.rawValue), (Self.response, response), (Self.siteKey, offer.siteKey)]
    }

    static func solved(_ offer: RateLimitOffer) -> String { Base64URL.encode(ProofOfWork.smallestAnswer(for: offer.offer)) }

    @Test func aLimitFiresWithSeed001sOffer() async throws {
        let server = try Server()
        let key = try SigningKey.generate(.ed25519)
        try await server.register(key)
        try await server.app().test(.live) { client async throws in
            let first = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: key))
            #expect(first.status == .ok && first.headers[HTTPField.Name("ratelimit")!] == #""LOGIN";r=1;t=30"#)
            #expect(first.headers[HTTPField.Name("ratelimit-policy")!] == #""LOGIN";q=2;w=60"#)
            let limited = try await Self.exhaust(client, "/login", key: key)
            #expect(server.handled.count == 2, "the refused request never reached the handler")
            #expect(Self.code(limited) == 120 && limited.headers[HTTPField.Name("signcore-action")!] == "rate-limited")
            let error = try #require(limited.headers[HTTPField.Name("signcore-error")!])
            #expect(error.hasPrefix("rateLimited;code=120;advice=bypass;now="))
            #expect(Int(try #require(limited.headers[.retryAfter])).map { (1...30).contains($0) } == true)
            #expect(limited.headers[HTTPField.Name("ratelimit")!]?.hasPrefix(#""LOGIN";r=0;t="#) == true)
            // Seed 001's members, and the same offers in one field.
            let problem = try Self.problem(limited)
            let errors = try #require(problem["errors"] as? [[String: Any]])
            #expect(errors.first?["message"] as? String == "Rate limit exceeded")
            #expect((errors.first?["extensions"] as? [String: Any])?["code"] as? String == "RATE_LIMITED")
            let firing = try #require(((problem["extensions"] as? [String: Any])?["rateLimitersFiring"] as? [[String: Any]])?.first)
            #expect(firing["rateLimitingBucket"] as? String == "LOGIN")
            let available = try #require(firing["captchaBypassAvailable"] as? [[String: String]])
            let offers = Self.offers(limited)
            #expect(available.map { $0["type"] } == ["SIGNCORE_DEVICE_KEY", "SIGNCORE_POW"])
            #expect(offers.map(\.type) == [.signcoreDeviceKey, .signcorePoW] && available.map { $0["siteKey"] } == offers.map(\.siteKey))
            #expect(problem["action"] as? String == "rate-limited" && problem["code"] as? Int == 120)
            // Refused before the signature was checked: bound to the bucket, to no key.
            for offer in offers {
                #expect(offer.offer.kind == .rateBypass && offer.offer.keyThumbprint == [UInt8](repeating: 0, count: 32))
                #expect(offer.offer.originDigest == RateBucket.digest(origin: "https://api.example.com", bucket: "LOGIN"))
            }
            #expect(offers[1].offer.difficulty == 12 && offers[0].offer.difficulty == 0)
        }
    }

    @Test func proofOfWorkGetsPastTheLimitOnceAndEarnsAPass() async throws {
        let server = try Server()
        let key = server.known
        try await server.app().test(.live) { client async throws in
            let limited = try await Self.exhaust(client, "/login", key: key)
            let offer = try #require(Self.offers(limited).first { $0.type == .signcorePoW })
            let fields = Self.answer(.signcorePoW, offer, response: Self.solved(offer))
            let passed = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: key, extra: fields))
            #expect(passed.status == .ok && String(buffer: passed.body) == key.id)
            let pass = try AttestationToken(parsing: try #require(passed.headers[Self.pass]))
            #expect(pass.levels == .level(15) && pass.ttl == 300 && pass.keyThumbprint == key.thumbprint.bytes)
            #expect(pass.originDigest == RateBucket.digest(origin: "https://api.example.com", bucket: "LOGIN"))
            // The same answer twice: replay detected.
            let again = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: key, extra: fields))
            #expect(again.status == .conflict && Self.code(again) == 124)
            // The pass moves the key to a bucket of its own (2 requests, the answered one included), not unlimited ones.
            let carried = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: key, extra: [(Self.pass, pass.text)]))
            #expect(carried.status == .ok)
            let spent = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: key, extra: [(Self.pass, pass.text)]))
            #expect(spent.status == .tooManyRequests && Self.code(spent) == 120)
            // A further answer buys nothing more: the key's own bucket refuses before the answer is read,
            // so the offer stays unanswered.
            let offer2 = try #require(Self.offers(spent).first { $0.type == .signcorePoW })
            let solved2 = Self.answer(.signcorePoW, offer2, response: Self.solved(offer2))
            let more = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: key, extra: solved2))
            #expect(more.status == .tooManyRequests && Self.code(more) == 120 && more.headers[Self.pass] == nil)
            // Unsigned, from another address whose bucket is spent too, the same offer is verified: the route
            // requires a signature, so the answer is not read without one (and was never spent).
            _ = try await Self.exhaust(client, "/login", key: key, from: "198.18.1.1")
            let unsigned = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: nil, extra: solved2, from: "198.18.1.1"))
            #expect(unsigned.status == .unauthorized)
            // Bound to its key: another key's request with it is counted as one without.
            let thief = try SigningKey.generate(.ed25519)
            try await server.register(thief)
            _ = try await Self.exhaust(client, "/search", key: thief)
            let stolen = try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: thief, extra: [(Self.pass, pass.text)]))
            #expect(stolen.status == .tooManyRequests)
        }
    }

    @Test func aRegisteredKeyGetsPastItsOwnLimit() async throws {
        let server = try Server()
        let device = try SigningKey.generate(.p256)
        try await server.register(device)
        try await server.app().test(.live) { client async throws in
            let limited = try await Self.exhaust(client, "/search", key: device)
            let offer = try #require(Self.offers(limited).first { $0.type == .signcoreDeviceKey })
            // Refused after the signature was checked: bound to the key.
            #expect(offer.offer.keyThumbprint == device.thumbprint.bytes)
            let fields = Self.answer(.signcoreDeviceKey, offer, response: Base64URL.encode(device.thumbprint.bytes))
            let passed = try await client.execute(uri: "/search", method: .get, headers: Self.fields("/search", key: device, extra: fields))
            #expect(passed.status == .ok && passed.headers[Self.pass] != nil)
            #expect(server.handled.count == 3)
        }
    }

    /// Seed 001's error table, each row its own code, over HTTP; and the checks around it.
    @Test func everyRowOfSeed001sErrorTable() async throws {
        let server = try Server()
        let device = try SigningKey.generate(.ed25519), stranger = server.known
        try await server.register(device)
        try await server.app().test(.live) { client async throws in
            // Each answer from an address of its own: a client's answers are counted (§10.5).
            let next = Locked(0)
            func send(_ path: String, key: SigningKey?, _ extra: [(HTTPField.Name, String)], cover: Bool = true) async throws -> TestResponse {
                let address = next.withLock { $0 += 1; return "198.18.0.\($0)" }
                return try await client.execute(uri: path, method: .get, headers: Self.fields(path, key: key, extra: extra, cover: cover, from: address))
            }
            let limited = try await Self.exhaust(client, "/search", key: device)
            let pow = try #require(Self.offers(limited).first { $0.type == .signcorePoW })
            let keyOffer = try #require(Self.offers(limited).first { $0.type == .signcoreDeviceKey })
            // Invalid token format.
            #expect(Self.code(try await send("/search", key: device, Self.answer(.signcorePoW, pow, response: "AAAA"))) == 121)
            #expect(Self.code(try await send("/search", key: device, [(Self.type, "SIGNCORE_POW"), (Self.response, Self.solved(pow))])) == 121)
            #expect(Self.code(try await send("/search", key: device, Self.answer(BypassType(rawValue: "CAPTCHA"), pow, response: "x"))) == 121)
            let twice = Self.answer(.signcorePoW, pow, response: Self.solved(pow)) + [(Self.type, "SIGNCORE_POW")]
            #expect(Self.code(try await send("/search", key: device, twice)) == 121)
            // Not covered by the signature.
            #expect(Self.code(try await send("/search", key: device, Self.answer(.signcorePoW, pow, response: Self.solved(pow)), cover: false)) == 32)
            // Nonce mismatch: a forged offer, another bucket's, another key's.
            var forgedBytes = pow.offer.bytes
            forgedBytes[forgedBytes.count - 1] ^= 1
            let forged = try #require(RateLimitOffer.offers(in: HTTPResponse(status: .tooManyRequests, headerFields: [
                HTTPField.Name("signcore-bypass")!: "SIGNCORE_POW;bucket=\"SEARCH\";site-key=\"\(Base64URL.encode(forgedBytes))\""])).first)
            let forgedResponse = try await send("/search", key: device, Self.answer(.signcorePoW, forged, response: Self.solved(forged)))
            #expect(forgedResponse.status == .forbidden && Self.code(forgedResponse) == 122)
            let other = try await Self.exhaust(client, "/login", key: device)
            let loginOffer = try #require(Self.offers(other).first { $0.type == .signcorePoW })
            #expect(Self.code(try await send("/search", key: device, Self.answer(.signcorePoW, loginOffer, response: Self.solved(loginOffer)))) == 122)
            _ = try await Self.exhaust(client, "/search", key: stranger)
            #expect(Self.code(try await send("/search", key: stranger, Self.answer(.signcorePoW, pow, response: Self.solved(pow)))) == 122)
            // Expired nonce: a 429 with a fresh offer.
            let stale = try server.attestor.bypassOffers(BypassPolicy(types: [.signcorePoW], difficulty: 12, count: 1), bucket: "SEARCH",
                                                         origin: "https://api.example.com", keyThumbprint: device.thumbprint.bytes,
                                                         now: UInt64(SystemClock.milliseconds()) - 120_000)[0].offer
            let staleOffer = try #require(RateLimitOffer(type: .signcorePoW, bucket: "SEARCH", siteKey: stale.text))
            let expired = try await send("/search", key: device, Self.answer(.signcorePoW, staleOffer, response: Self.solved(staleOffer)))
            #expect(expired.status == .tooManyRequests && Self.code(expired) == 123 && expired.headers[HTTPField.Name("signcore-action")!] == "rate-limited")
            let fresh = Self.offers(expired)
            #expect(fresh.count == 2 && !fresh.contains { $0.siteKey == stale.text } && fresh.allSatisfy { $0.offer.keyThumbprint == device.thumbprint.bytes })
            // A wrong proof of work; a type the limit does not offer.
            var wrong = [UInt8](repeating: 0, count: 8)
            while ProofOfWork.isValid(wrong, for: pow.offer) { wrong[7] &+= 1 }
            #expect(Self.code(try await send("/search", key: device, Self.answer(.signcorePoW, pow, response: Base64URL.encode(wrong)))) == 127)
            #expect(Self.code(try await send("/search", key: device, Self.answer(.appleDeviceCheck, pow, response: "AAAA"))) == 126)
            // An offer is answered as the type it was made for: the proof-of-work offer by a device, the device's by work.
            #expect(Self.code(try await send("/search", key: device, Self.answer(.signcoreDeviceKey, pow,
                                                                                response: Base64URL.encode(device.thumbprint.bytes)))) == 121)
            #expect(Self.code(try await send("/search", key: device, Self.answer(.signcorePoW, keyOffer, response: "AAAAAAAAAAA"))) == 121)
            // Device integrity failed: a key that is not registered, one revoked; with the reason.
            let strangerLimited = try await send("/search", key: stranger, [])
            let strangerOffer = try #require(Self.offers(strangerLimited).first { $0.type == .signcoreDeviceKey })
            let unregistered = try await send("/search", key: stranger, Self.answer(.signcoreDeviceKey, strangerOffer,
                                                                                   response: Base64URL.encode(stranger.thumbprint.bytes)))
            #expect(unregistered.status == .forbidden && Self.code(unregistered) == 125)
            let why = try Self.problem(unregistered)
            #expect(why["reason"] as? String == "notRegistered" && why["cause"] as? String == "deviceUnknown")
            try await server.register(stranger)
            #expect(try await server.registry.revoke(keyID: stranger.id))
            let revoked = try await send("/search", key: stranger, Self.answer(.signcoreDeviceKey, strangerOffer,
                                                                              response: Base64URL.encode(stranger.thumbprint.bytes)))
            #expect(try Self.code(revoked) == 125 && Self.problem(revoked)["reason"] as? String == "revoked")
            // Replay detected.
            let keyAnswer = Self.answer(.signcoreDeviceKey, keyOffer, response: Base64URL.encode(device.thumbprint.bytes))
            #expect(try await send("/search", key: device, keyAnswer).status == .ok)
            _ = try await Self.exhaust(client, "/search", key: device)
            let replayed = try await send("/search", key: device, keyAnswer)
            #expect(replayed.status == .conflict && Self.code(replayed) == 124)
            // A limit that offers nothing: a 429 with no offer, and an answer is not offered.
            let plain = try await Self.exhaust(client, "/plain", key: device)
            #expect(Self.offers(plain).isEmpty && plain.headers[HTTPField.Name("signcore-bypass")!] == nil)
            #expect(Self.code(try await send("/plain", key: device, keyAnswer)) == 126)
        }
    }

    @Test func oneClientCannotSpendAnothersBucket() async throws {
        let server = try Server()
        let victim = try SigningKey.generate(.ed25519), flooder = try SigningKey.generate(.ed25519)
        try await server.register(victim)
        try await server.register(flooder)
        try await server.app().test(.live) { client async throws in
            // Keyed by key: the flooder's requests, from the same address, spend its own bucket.
            for _ in 0..<6 { _ = try await client.execute(uri: "/search", method: .get, headers: Self.fields("/search", key: flooder)) }
            // Naming the victim's key id without its key: 401, and the victim's bucket untouched.
            for _ in 0..<6 {
                var fields = try Self.fields("/search", key: flooder)
                let token = try #require(fields[HTTPField.Name("wtoken")!])
                fields[HTTPField.Name("wtoken")!] = token.replacingOccurrences(of: flooder.id, with: victim.id)
                #expect(try await client.execute(uri: "/search", method: .get, headers: fields).status == .unauthorized)
            }
            let served = try await client.execute(uri: "/search", method: .get, headers: Self.fields("/search", key: victim))
            #expect(served.status == .ok && served.headers[HTTPField.Name("ratelimit")!]?.hasPrefix(#""SEARCH";r=1;"#) == true)
            // Keyed by address behind a trusted proxy: each client's own, an IPv6 client's /64.
            _ = try await Self.exhaust(client, "/login", key: flooder, from: "203.0.113.5")
            #expect(try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: victim, from: "203.0.113.6")).status == .ok)
            _ = try await Self.exhaust(client, "/login", key: flooder, from: "2001:db8::1")
            #expect(try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: victim, from: "2001:db8::2")).status == .tooManyRequests)
            #expect(try await client.execute(uri: "/login", method: .get, headers: Self.fields("/login", key: victim, from: "2001:db8:0:1::1")).status == .ok)
        }
    }

    @Test func anUnsignedRouteIsLimitedByAddressAndAnsweredWithWork() async throws {
        let server = try Server()
        try await server.app().test(.live) { client async throws in
            let limited = try await Self.exhaust(client, "/open", key: nil)
            let offer = try #require(Self.offers(limited).first)
            #expect(offer.type == .signcorePoW)
            let passed = try await client.execute(uri: "/open", method: .get,
                                                  headers: Self.fields("/open", key: nil, extra: Self.answer(.signcorePoW, offer, response: Self.solved(offer))))
            // Through, with no pass: there is no key to bind one to.
            #expect(passed.status == .ok && passed.headers[Self.pass] == nil)
            // A SIGNCORE_DEVICE_KEY answer needs a signature.
            let second = try await Self.exhaust(client, "/open", key: nil, from: "198.18.2.1")
            let again = try #require(Self.offers(second).first)
            let unsigned = try await client.execute(uri: "/open", method: .get,
                                                    headers: Self.fields("/open", key: nil, extra: Self.answer(.signcoreDeviceKey, again, response: "x"), from: "198.18.2.1"))
            #expect(Self.code(unsigned) == 126)
            // The client's answers are counted: one more is refused before it is read.
            let third = try await Self.exhaust(client, "/open", key: nil)
            let counted = try await client.execute(uri: "/open", method: .get,
                                                   headers: Self.fields("/open", key: nil, extra: Self.answer(.signcorePoW, try #require(Self.offers(third).first),
                                                                                                         response: "AAAAAAAAAAA")))
            #expect(counted.status == .tooManyRequests && Self.code(counted) == 120)
        }
    }

    /// Registration is metered per client address: a route's limits apply to the device endpoint,
    /// which otherwise answers whatever the policy says of its path.
    @Test func registrationIsMeteredPerAddress() async throws {
        let server = try Server()
        var metered = RouteRequirements.off
        metered[RouteRateLimits.self] = [try RateLimit(bucket: "REGISTER", quota: 2, window: 60, key: .address)]
        let policy = try RoutePolicy([.init("/.well-known/signcore/devices", metered), .init("/.well-known/signcore/devices/**", metered)],
                                     fallback: .require)
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: ClientAddressMiddleware(proxies: TrustedProxies([IPNetwork("127.0.0.0/8")!])))
        router.add(middleware: SignatureMiddleware(verifier: try Verifier(keys: KeySet([]), replayGuard: InMemoryReplayGuard()), origin: Self.origin,
                                                   policy: policy, attestation: try AttestationGate(attestor: server.attestor, challenges: [.device(levels: .level(14))]),
                                                   rateLimits: try RateLimitGate(attestor: server.attestor)))
        try await Application(router: router).test(.live) { client async throws in
            let uri = AttestationGate.defaultDeviceEndpoint + "/challenge"
            for _ in 0..<2 { #expect(try await client.execute(uri: uri, method: .get, headers: Self.fields(uri, key: nil, from: "203.0.113.9")).status == .ok) }
            let limited = try await client.execute(uri: uri, method: .get, headers: Self.fields(uri, key: nil, from: "203.0.113.9"))
            #expect(limited.status == .tooManyRequests && Self.code(limited) == 120)
            let posted = try await client.execute(uri: AttestationGate.defaultDeviceEndpoint, method: .post,
                                                  headers: Self.fields(uri, key: nil, from: "203.0.113.9"), body: ByteBuffer(string: "{}"))
            #expect(posted.status == .tooManyRequests)
            #expect(try await client.execute(uri: uri, method: .get, headers: Self.fields(uri, key: nil, from: "203.0.113.10")).status == .ok)
        }
    }

    /// A limit that fired before the signature is checked lets the request reach verification only
    /// with a plausible answer (an unexpired offer of this fleet for that bucket) or pass: one
    /// header is not enough, so a flood costs no signature check.
    @Test func onlyAPlausibleAnswerIsVerified() async throws {
        let server = try Server()
        let key = server.known
        try await server.app().test(.live) { client async throws in
            let limited = try await Self.exhaust(client, "/login", key: key)
            let offer = try #require(Self.offers(limited).first { $0.type == .signcorePoW })
            func forged(_ extra: [(HTTPField.Name, String)]) throws -> HTTPFields {
                var fields = try Self.fields("/login", key: key, extra: extra)
                let token = try #require(fields[HTTPField.Name("wtoken")!])
                fields[HTTPField.Name("wtoken")!] = String(token.dropLast(3)) + (token.hasSuffix("AAA") ? "BBB" : "AAA")
                return fields
            }
            // Junk answers and passes: refused at once, unverified (a 429, not the forged signature's 401).
            for extra in [[(Self.type, "x")], [(Self.pass, "x")], [(Self.siteKey, offer.siteKey + "x")],
                          [(Self.pass, try server.attestor.bypassOffers(BypassPolicy(types: [.signcorePoW]), bucket: "SEARCH", origin: "https://api.example.com",
                                                                         keyThumbprint: nil, now: UInt64(SystemClock.milliseconds()))[0].offer.text)]] {
                let status = try await client.execute(uri: "/login", method: .get, headers: forged(extra)).status
                #expect(status == .tooManyRequests, "\(extra.map(\.0)) \(status)")
            }
            // A genuine offer: verified, so the forged signature is found.
            let genuine = try await client.execute(uri: "/login", method: .get,
                                                   headers: forged(Self.answer(.signcorePoW, offer, response: Self.solved(offer))))
            #expect(genuine.status == .unauthorized)
            // And the offer was not spent by it.
            let answered = try await client.execute(uri: "/login", method: .get,
                                                    headers: Self.fields("/login", key: key, extra: Self.answer(.signcorePoW, offer, response: Self.solved(offer))))
            #expect(answered.status == .ok)
        }
    }

    /// An account limit counts the account under the key that signs it: the account is the
    /// signer's word, so no key spends another's account's bucket.
    @Test func anAccountIsCountedUnderItsKey() async throws {
        let keyA = try SigningKey.generate(.ed25519), keyB = try SigningKey.generate(.ed25519)
        var route = RouteRequirements.require
        route[RouteRateLimits.self] = [try RateLimit(bucket: "ACCOUNT", quota: 1, window: 60, key: .account)]
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: try Verifier(keys: KeySet([keyA.publicOnly(), keyB.publicOnly()]), replayGuard: InMemoryReplayGuard()),
                                                   origin: Self.origin, policy: try RoutePolicy([.init("/me", route)], fallback: .require),
                                                   rateLimits: try RateLimitGate()))
        router.get("/me") { _, context -> String in context.signature?.account ?? "-" }
        try await Application(router: router).test(.live) { client async throws in
            func send(_ key: SigningKey, account: String) async throws -> HTTPResponse.Status {
                let headers = try Signer(key: key, account: account).sign(method: .get, url: "https://api.example.com/me", body: [])
                return try await client.execute(uri: "/me", method: .get, headers: [HTTPField.Name("whash")!: headers.whash,
                                                                                     HTTPField.Name("wtoken")!: headers.wtoken]).status
            }
            #expect(try await send(keyA, account: "alice") == .ok)
            #expect(try await send(keyA, account: "alice") == .tooManyRequests)
            // Another key naming alice has a bucket of its own; alice under key A another account's.
            #expect(try await send(keyB, account: "alice") == .ok)
            #expect(try await send(keyA, account: "bob") == .ok)
        }
    }

    /// On a route that asks for attestation, the limits by key count after the token: a request
    /// answered with a 428 spends nothing of its key's bucket (nor writes its nonce).
    @Test func aTokenlessRequestSpendsNoBucket() async throws {
        let server = try Server()
        let key = server.known
        var route = RouteRequirements.require
        route[RouteRateLimits.self] = [try RateLimit(bucket: "ATTESTED", quota: 1, window: 60, key: .key)]
        route[RouteAttestation.self] = .require(.level(0))
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: try Verifier(keys: KeySet([key.publicOnly()]), replayGuard: InMemoryReplayGuard()),
                                                   origin: Self.origin, policy: try RoutePolicy([.init("/attested", route)], fallback: .require),
                                                   attestation: try AttestationGate(attestor: server.attestor, challenges: [try ChallengePolicy(difficulty: 12, count: 1, levels: .level(0))]),
                                                   rateLimits: try RateLimitGate(attestor: server.attestor)))
        router.get("/attested") { _, _ -> String in "ok" }
        try await Application(router: router).test(.live) { client async throws in
            for _ in 0..<3 {
                let response = try await client.execute(uri: "/attested", method: .get, headers: Self.fields("/attested", key: key))
                #expect(response.status == .preconditionRequired)
            }
        }
    }
}

/// The limiter alone: GCRA's arithmetic on a clock of the test's, and a table that stays bounded.
@Suite struct RateLimiterTests {
    final class Clock: Sendable {
        private let value = Locked<UInt64>(1_000_000_000_000)
        var now: UInt64 { value.withLock { $0 } }
        func advance(seconds: UInt64) { value.withLock { $0 += seconds * 1_000_000_000 } }
    }

    @Test func aBucketRefillsAtItsRate() throws {
        let clock = Clock()
        let limiter = RateLimiter(clock: { clock.now })
        let limit = try RateLimit(bucket: "B", quota: 6, window: 60, burst: 3)  // one each 10 s, 3 at once
        #expect((0..<3).map { _ in limiter.take(limit, client: "c").remaining } == [2, 1, 0])
        let refused = limiter.take(limit, client: "c")
        #expect(!refused.allowed && refused.retryAfter == 10 && refused.reset == 30)
        clock.advance(seconds: 10)
        #expect(limiter.take(limit, client: "c").allowed && !limiter.take(limit, client: "c").allowed)
        clock.advance(seconds: 30)
        #expect((0..<3).allSatisfy { _ in limiter.take(limit, client: "c").allowed })
        #expect(limiter.take(limit, client: "other").remaining == 2)
    }

    @Test func aFullTableSweepsAtMostOnceASecondAndSharesOneBucketMeanwhile() throws {
        let clock = Clock()
        let limiter = RateLimiter(capacity: 4, clock: { clock.now })
        let limit = try RateLimit(bucket: "B", quota: 1, window: 60)
        for client in ["a", "b", "c", "d"] { #expect(limiter.take(limit, client: client).allowed) }
        // Full, and no bucket full again: new clients share one bucket (limited together, not let through).
        #expect(limiter.take(limit, client: "e").allowed)
        #expect(!limiter.take(limit, client: "f").allowed)
        #expect(limiter.clients(of: limit) == 5)
        // Once the buckets are full again, the sweep forgets them and new clients have their own.
        clock.advance(seconds: 61)
        #expect(limiter.take(limit, client: "g").allowed && limiter.clients(of: limit) == 1)
    }
}
