import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import SignAsyncHTTPClient
import SignAttest
@_spi(SignCoreTools) import SignCore
import SignDevice
import SignHTTP
@testable import SignGateway
import SignTestSupport
import Testing

/// Rate limits through signd (docs/ATTEST.md §10, docs/SIGND.md "Rate limits"): a limit fires
/// before anything reaches the upstream; clients behind a trusted proxy are counted apart; each
/// platform's answer (App Attest and Play Integrity, their artefacts made at test time by an
/// independent implementation) gets past it, and a weak verdict or a tampered assertion is
/// refused with its reason.
@Suite(.serialized) struct GatewayRateLimitTests {
    static let app = "TEAM123456.com.example.app", package = "com.example.app"
    static let bypassFields = ["x-captcha-type", "x-captcha-response", "x-captcha-site-key", "x-captcha-key-id"]

    struct Reply {
        let status: UInt
        let code: Int?
        let fields: HTTPHeaders
        let body: [UInt8]
        var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        var offers: [RateLimitOffer] {
            var response = HTTPResponse(status: .init(code: Int(status)))
            for field in fields { if let name = HTTPField.Name(field.name) { response.headerFields.append(HTTPField(name: name, value: field.value)) } }
            return RateLimitOffer.offers(in: response)
        }
    }

    /// Sends a GET of `path` to signd at `port` (host gateway.test), signed by `key` when given,
    /// covering `fields`.
    static func send(_ http: HTTPClient, port: Int, _ path: String, key: SigningKey?, fields: [(String, String)] = [], from: String? = nil,
                     method: HTTPMethod = .GET, body: String = "") async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
        request.method = method
        request.headers.add(name: "host", value: "gateway.test")
        if let from { request.headers.add(name: "x-forwarded-for", value: from) }
        for (name, value) in fields { request.headers.add(name: name, value: value) }
        if let key {
            let signer = try Signer(key: key, coveredHeaders: fields.map { $0.0 })
            let headers = try signer.sign(method: RequestMethod(token: method.rawValue), url: "https://gateway.test" + path, body: Array(body.utf8),
                                          headers: fields.map { HeaderField($0.0, $0.1) })
            request.headers.add(name: "whash", value: headers.whash)
            request.headers.add(name: "wtoken", value: headers.wtoken)
        }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await http.execute(request, timeout: .seconds(10))
        return Reply(status: response.status.code, code: GatewayDeviceTests.code(response), fields: response.headers,
                     body: Array(buffer: try await response.body.collect(upTo: 1 << 16)))
    }

    static func exhaust(_ http: HTTPClient, port: Int, _ path: String, key: SigningKey?, from: String? = nil) async throws -> Reply {
        for _ in 0..<10 {
            let reply = try await send(http, port: port, path, key: key, from: from)
            if reply.status == 429 { return reply }
        }
        Issue.record("the limit of \(path) never fired")
        throw CancellationError()
    }

    static func answer(_ type: BypassType, _ offer: RateLimitOffer, _ response: String, keyID: String? = nil) -> [(String, String)] {
        [("x-captcha-type", type.rawValue), ("x-captcha-response", response), ("x-captcha-site-key", offer.siteKey)]
            + (keyID.map { [("x-captcha-key-id", $0)] } ?? [])
    }

    @Test func aLimitFiresThroughSigndAndWorkGetsPast() async throws {
        let folder = try TemporaryFolder()
        let client = try SigningKey.generate(.ed25519)
        let keys = try folder.writeKeys([client.publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "origin": ["scheme": "https", "authority": "gateway.test"], "trustedProxies": ["127.0.0.0/8"],
                "attestation": ["keys": attestKeys, "challenges": [["levels": [0]]]],
                "rateLimits": ["buckets": [
                    "LOGIN": ["quota": 2, "window": 60, "key": "address", "bypass": ["types": ["SIGNCORE_POW"], "difficulty": 12, "count": 1]],
                    "SEARCH": ["quota": 3, "window": 60, "key": "key"],
                ]] as [String: Any],
                "policy": ["routes": [["route": "/login", "signature": "require", "rateLimits": ["LOGIN"]],
                                      ["route": "/search", "signature": "require", "rateLimits": ["SEARCH", "LOGIN"]]]],
            ])
            try await withGateway(json) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                let limited = try await Self.exhaust(http, port: port, "/login", key: client, from: "198.51.100.7")
                #expect(limited.code == 120 && limited.fields.first(name: "signcore-action") == "rate-limited")
                #expect(limited.fields.first(name: "ratelimit-policy") == #""LOGIN";q=2;w=60"#)
                #expect(upstream.all.count == 2, "the refused request never reached the upstream")
                // Another client behind the same trusted proxy has its own bucket.
                #expect(try await Self.send(http, port: port, "/login", key: client, from: "198.51.100.8").status == 200)
                // A proof of work gets past; the upstream sees the answered request, the client a pass.
                let offer = try #require(limited.offers.first)
                let work = Base64URL.encode(ProofOfWork.smallestAnswer(for: offer.offer))
                let passed = try await Self.send(http, port: port, "/login", key: client, fields: Self.answer(.signcorePoW, offer, work), from: "198.51.100.7")
                #expect(passed.status == 200 && passed.fields.first(name: "signcore-rate-pass") != nil)
                #expect(upstream.all.count == 4)
                // Two limits on one route: each counts, the tighter is reported.
                let search = try await Self.send(http, port: port, "/search", key: client, from: "198.51.100.9")
                #expect(search.status == 200 && search.fields.first(name: "ratelimit")?.hasPrefix(#""LOGIN";r=1"#) == true)
            }
        }
    }

    /// The configuration is checked: an unknown bucket, an offer without attestation keys, a
    /// device's bypass without devices.
    @Test func rateLimitSettingsAreChecked() throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([SigningKey.generate(.ed25519).publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        func refusal(_ overrides: [String: Any]) -> String? {
            do {
                _ = try Gateway(configuration: GatewayConfiguration.parse(Data(GatewayTests.configuration(upstream: 1, keys: keys, overrides).utf8)),
                                logger: quietLogger)
                return nil
            } catch { return error.detail }
        }
        let route: [String: Any] = ["routes": [["route": "/login", "signature": "require", "rateLimits": ["LOGIN"]]]]
        #expect(refusal(["policy": route])?.contains("rateLimits.buckets does not have") == true)
        #expect(refusal(["policy": route, "rateLimits": ["buckets": ["LOGIN": ["quota": 0, "window": 60]]]])?.contains("rateLimits.buckets.LOGIN") == true)
        #expect(refusal(["policy": route, "rateLimits": ["buckets": ["LOGIN": ["quota": 5, "window": 60, "bypass": [:] as [String: Any]]]]])?
            .contains("attestation section") == true)
        #expect(refusal(["policy": route, "attestation": ["keys": attestKeys, "challenges": [["levels": [0]]]],
                         "rateLimits": ["buckets": ["LOGIN": ["quota": 5, "window": 60, "bypass": ["types": ["SIGNCORE_DEVICE_KEY"]]]]]])?
            .contains("devices") == true)
        #expect(refusal(["policy": route, "rateLimits": ["buckets": ["LOG IN": ["quota": 5, "window": 60]]]]) != nil)
        let twice: [String: Any] = ["routes": [["route": "/login", "signature": "require", "rateLimits": ["LOGIN", "LOGIN"]]]]
        #expect(refusal(["policy": twice, "rateLimits": ["buckets": ["LOGIN": ["quota": 5, "window": 60]]]])?.contains("a bucket twice") == true)
        #expect(refusal(["policy": route, "rateLimits": ["buckets": ["LOGIN": ["quota": 5, "window": 60, "key": "cookie"]]]]) != nil)
        #expect(refusal(["policy": route, "attestation": ["keys": attestKeys, "challenges": [["levels": [0]]]],
                         "rateLimits": ["buckets": ["LOGIN": ["quota": 5, "window": 60, "bypass": ["types": ["CAPTCHA"]]]]]])?.contains("bypass.types") == true)
        #expect(refusal(["policy": route, "attestation": ["keys": attestKeys, "challenges": [["levels": [0]]]],
                         "rateLimits": ["buckets": ["LOGIN": ["quota": 5, "window": 60, "bypass": ["types": ["SIGNCORE_POW"]]]]]]) == nil)
    }

    @Test func anAppAttestAssertionOverTheSiteKeyGetsPast() async throws {
        let folder = try TemporaryFolder()
        let client = try SigningKey.generate(.ed25519)
        let keys = try folder.writeKeys([client.publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        let (authority, rootFile) = try await GatewayAppAttestTests.testAuthority(in: folder)
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "origin": ["scheme": "https", "authority": "gateway.test"],
                "attestation": ["keys": attestKeys, "challenges": [["levels": [0]]],
                                "devices": ["appIds": [Self.app], "formats": ["signcore", "apple-app-attest"],
                                            "appAttest": ["roots": [rootFile], "environments": ["development"]]]] as [String: Any],
                "rateLimits": ["buckets": ["LOGIN": ["quota": 5, "window": 60, "key": "key", "bypass": ["types": ["APPLE_DEVICE_CHECK"]]]]],
                "policy": ["routes": [["route": "/login", "signature": "require", "rateLimits": ["LOGIN"]]]],
            ])
            try await withGateway(json) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                // The App Attest key, registered as seed 003 does.
                let issued = try await Self.send(http, port: port, "/.well-known/signcore/devices/challenge", key: nil)
                let registrationChallenge = try #require(issued.object["challenge"] as? String)
                let made = try await GatewayAppAttestTests.make(["appId": Self.app, "authority": authority,
                                                           "registrations": [["name": "phone", "challenge": registrationChallenge, "variant": "valid"]]])
                let phone = try #require(made.registrations["phone"])
                let registration = #"{"platform":"ios","format":"apple-app-attest","keyId":"\#(phone.keyId)","challenge":"\#(registrationChallenge)","token":"\#(phone.token)"}"#
                #expect(try await Self.send(http, port: port, "/.well-known/signcore/devices", key: nil, method: .POST, body: registration).status == 201)
                func assertion(over siteKey: String, counter: Int, variant: String = "valid") async throws -> String {
                    let made = try await GatewayAppAttestTests.make(["appId": Self.app, "authority": authority, "registrations": [],
                                                               "assertions": [["privateKey": phone.privateKey, "clientData": siteKey, "counter": counter, "variant": variant]]])
                    return try #require(made.assertions.first).token
                }
                // Seed 001's flow: the limit fires; the assertion's client data hash is SHA-256 of the site key.
                let limited = try await Self.exhaust(http, port: port, "/login", key: client)
                let offer = try #require(limited.offers.first)
                #expect(offer.type == .appleDeviceCheck && offer.offer.keyThumbprint == client.thumbprint.bytes)
                let tampered = try await Self.send(http, port: port, "/login", key: client,
                                                   fields: Self.answer(.appleDeviceCheck, offer, try assertion(over: offer.siteKey, counter: 1, variant: "tampered"), keyID: phone.keyId))
                #expect(tampered.status == 403 && tampered.code == 125)
                #expect(tampered.object["reason"] as? String == "attestationFailed" && tampered.object["cause"] as? String == "assertionInvalid")
                let passed = try await Self.send(http, port: port, "/login", key: client,
                                                 fields: Self.answer(.appleDeviceCheck, offer, try assertion(over: offer.siteKey, counter: 2), keyID: phone.keyId))
                #expect(passed.status == 200 && passed.fields.first(name: "signcore-rate-pass") != nil, "\(String(decoding: passed.body, as: UTF8.self))")
                // An assertion over another text, and a key id no one registered.
                let again = try #require(try await Self.exhaust(http, port: port, "/login", key: client).offers.first)
                let other = try await Self.send(http, port: port, "/login", key: client,
                                                fields: Self.answer(.appleDeviceCheck, again, try assertion(over: offer.siteKey, counter: 3), keyID: phone.keyId))
                #expect(other.code == 125 && other.object["reason"] as? String == "attestationFailed")
                let unknownKey = Base64URL.encode(Array(repeating: 9, count: 32)).replacingOccurrences(of: "-", with: "+") + "="
                let stranger = try await Self.send(http, port: port, "/login", key: client,
                                                   fields: Self.answer(.appleDeviceCheck, again, try assertion(over: again.siteKey, counter: 4), keyID: unknownKey))
                #expect(stranger.code == 125 && stranger.object["reason"] as? String == "notRegistered")
                #expect(upstream.all.count == 5 + 1)
            }
        }
    }

    @Test func aPlayIntegrityVerdictOverTheSiteKeyGetsPast() async throws {
        let folder = try TemporaryFolder()
        let install = try SigningKey.generate(.p256)
        let keys = try folder.writeKeys([install.publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        let decryptionFile = folder.path + "/play-decryption.txt", verificationFile = folder.path + "/play-verification.txt"
        // Offers are stateless: any holder of signd's attestation keys issues ones signd accepts, so
        // the verdicts (made with Play Console keys signd must trust from its start) are made first.
        let issuer = try Attestor(keys: AttestationKeys(GatewayAttestationTests.serverKeys), redemptions: InMemoryRedemptionStore())
        let offers = try (0..<4).map { _ in
            try issuer.bypassOffers(BypassPolicy(types: [.androidPlayIntegrity]), bucket: "LOGIN", origin: "https://gateway.test",
                                    keyThumbprint: install.thumbprint.bytes, now: UInt64(Date().timeIntervalSince1970 * 1000))[0].offer
        }.map { try #require(RateLimitOffer(type: .androidPlayIntegrity, bucket: "LOGIN", siteKey: $0.text)) }
        let made = try await GatewayPlayIntegrityTests.make([(offers[0].siteKey, "noDeviceIntegrity"), (offers[1].siteKey, "wrongNonce"),
                                                       (offers[2].siteKey, "valid"), (offers[3].siteKey, "unrecognized")])
        try made.decryptionKey.write(toFile: decryptionFile, atomically: true, encoding: .utf8)
        try made.verificationKey.write(toFile: verificationFile, atomically: true, encoding: .utf8)
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "origin": ["scheme": "https", "authority": "gateway.test"],
                "attestation": ["keys": attestKeys, "challenges": [["levels": [0]]],
                                "devices": ["appIds": [Self.package], "formats": ["android-play-integrity"],
                                            "playIntegrity": ["decryptionKeyFile": decryptionFile, "verificationKeyFile": verificationFile,
                                                              "certificateDigests": [made.certificateDigest]]]] as [String: Any],
                "rateLimits": ["buckets": ["LOGIN": ["quota": 6, "window": 60, "key": "key", "bypass": ["types": ["ANDROID_PLAY_INTEGRITY"]]]]],
                "policy": ["routes": [["route": "/login", "signature": "require", "rateLimits": ["LOGIN"]]]],
            ])
            try await withGateway(json) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                _ = try await Self.exhaust(http, port: port, "/login", key: install)
                func answer(_ index: Int) async throws -> Reply {
                    try await Self.send(http, port: port, "/login", key: install, fields: Self.answer(.androidPlayIntegrity, offers[index], made.tokens[index].token))
                }
                let weak = try await answer(0)
                #expect(weak.status == 403 && weak.code == 125 && weak.object["reason"] as? String == "verdictTooWeak")
                #expect(weak.object["cause"] as? String == "integrityVerdictFailed")
                let mismatch = try await answer(1)
                #expect(mismatch.status == 403 && mismatch.code == 122)
                let unrecognized = try await answer(3)
                #expect(unrecognized.code == 125 && unrecognized.object["reason"] as? String == "verdictTooWeak")
                let passed = try await answer(2)
                #expect(passed.status == 200 && passed.fields.first(name: "signcore-rate-pass") != nil, "\(String(decoding: passed.body, as: UTF8.self))")
                // The same verdict twice: replay detected.
                #expect(try await answer(2).code == 124)
                // A token that is none: invalid format.
                let junk = try await Self.send(http, port: port, "/login", key: install, fields: Self.answer(.androidPlayIntegrity, offers[3], "a.b.c.d.e"))
                #expect(junk.status == 400 && junk.code == 121)
                #expect(upstream.all.count == 6 + 1)
            }
        }
    }

    /// Seed 001 end to end through signd with the client core: the client meets signd's 429,
    /// answers its proof of work by itself, carries the pass, and the app sees only 200s.
    @Test func theClientGetsPastSigndsLimitByItself() async throws {
        let folder = try TemporaryFolder()
        let key = try SigningKey.generate(.ed25519)
        let keys = try folder.writeKeys([key.publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "attestation": ["keys": attestKeys, "challenges": [["levels": [0]]]],
                "rateLimits": ["buckets": ["SEARCH": ["quota": 2, "window": 60, "key": "key",
                                                      "bypass": ["types": ["SIGNCORE_POW"], "difficulty": 12, "count": 1]]]],
                "policy": ["routes": [["route": "/search", "signature": "require", "rateLimits": ["SEARCH"]]]],
            ])
            try await withGateway(json) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                let client = try SigningClient(signer: Signer(key: key), rateLimit: RateLimitPolicy(types: [.signcorePoW]))
                for _ in 0..<4 {
                    let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/search"), client: client, timeout: .seconds(20))
                    #expect(response.status == .ok)
                }
                // Two free, then one answer: its request and the next counted in the key's own bucket.
                #expect(upstream.all.count == 4)
                #expect(upstream.all.filter { $0.fields.contains { $0.hasPrefix("x-captcha-type:") } }.count == 1)
            }
        }
    }
}
