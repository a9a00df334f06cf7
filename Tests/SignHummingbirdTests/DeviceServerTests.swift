import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@_spi(SignCoreTools) import SignCore
import SignAttest
import SignHTTP
import SignHummingbird
import Testing

/// Device keys (docs/ATTEST.md §9) on a real Hummingbird server on loopback: a key refused as
/// unknown registers against a one-time challenge and is accepted at once; counters with a
/// window; revocation; the registered-device level through the 428 flow.
@Suite struct DeviceServerTests {
    static let origin = ServerOrigin(scheme: "https", authority: "api.example.com")
    static let keys = try! AttestationKeys([SigningKey.hmac(secret: Array(repeating: 5, count: 32), id: "challenge-1"),
                                            SigningKey.generate(.ed25519, id: "token-1")])
    static let registered = AttestationLevels.level(14), platform = AttestationLevels.level(15)
    static let counterField = HTTPField.Name("signcore-counter")!
    static let devices = AttestationGate.defaultDeviceEndpoint

    /// A server whose verifier finds device keys through `registry` (a key cache invalidated by
    /// its changes); `/registered/x` requires the registered-device level, `/platform/x` the
    /// platform one, everything else a signature.
    static func app(registry: InMemoryDeviceRegistry) throws -> some ApplicationProtocol {
        let cache = try KeyCache(source: registry, positiveLifetime: 300, negativeLifetime: 300)
        registry.changes.invalidate(cache)
        let verifier = try Verifier(keys: KeySet([]), keyCache: cache, replayGuard: InMemoryReplayGuard(capacity: 10_000, maxShare: 1))
        var registeredRoute = RouteRequirements.require
        registeredRoute[RouteAttestation.self] = .require(registered)
        var platformRoute = RouteRequirements.require
        platformRoute[RouteAttestation.self] = .require(platform)
        let policy = try RoutePolicy([.init("/registered/**", registeredRoute), .init("/platform/**", platformRoute)], fallback: .require)
        let attestor = try Attestor(keys: keys, redemptions: InMemoryRedemptionStore(),
                                    devices: Devices(registry: registry, policy: DevicePolicy(appIDs: ["com.example.app"], platformLevels: platform)))
        let gate = try AttestationGate(attestor: attestor, challenges: [.device(levels: registered), .device(levels: platform)])
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: origin, policy: policy, attestation: gate))
        for path in ["/data", "/registered/x", "/platform/x"] {
            router.get(RouterPath(stringLiteral: path)) { _, context -> String in
                "\(context.signature?.keyID ?? "-") levels \(context.signCore[Attested.self]?.levels.rawValue ?? 0)"
            }
        }
        return Application(router: router)
    }

    /// The fields of a request signed by `key`, with `extra` fields, all covered.
    static func signed(_ path: String, key: SigningKey, method: RequestMethod = .get, body: [UInt8] = [],
                       extra: [(HTTPField.Name, String)] = []) throws -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in extra { fields.append(HTTPField(name: name, value: value)) }
        let signer = try Signer(key: key, coveredHeaders: extra.map(\.0.canonicalName))
        let headers = try signer.sign(method: method, url: "https://api.example.com" + path, body: body,
                                      headers: fields.map { HeaderField($0.name.rawName, $0.value) })
        fields[HTTPField.Name("whash")!] = headers.whash
        fields[HTTPField.Name("wtoken")!] = headers.wtoken
        return fields
    }

    static func code(_ response: TestResponse) -> Int? {
        guard let field = response.headers[HTTPField.Name("signcore-error")!] else { return nil }
        return field.split(separator: ";").first { $0.hasPrefix("code=") }.flatMap { Int($0.dropFirst(5)) }
    }

    /// Asks for a registration challenge (bound to the key when `bind`), and registers `key`.
    static func register(_ client: some TestClientProtocol, _ key: SigningKey, bind: Bool = true, appID: String = "com.example.app",
                         challenge: String? = nil) async throws -> TestResponse {
        var text = challenge
        if text == nil {
            let query = bind ? "?keyId=" + key.id : ""
            let issued = try await client.execute(uri: devices + "/challenge" + query, method: .get)
            #expect(issued.status == .ok && issued.headers[.cacheControl] == "no-store")
            let object = try JSONSerialization.jsonObject(with: Data(buffer: issued.body)) as? [String: Any]
            text = object?["challenge"] as? String
        }
        let jwk = try JWK.serialize(key, includePrivate: false)
        let body = Array(#"{"format":"signcore","keyId":"\#(key.id)","jwk":\#(jwk),"challenge":"\#(try #require(text))","appId":"\#(appID)"}"#.utf8)
        return try await client.execute(uri: devices, method: .post, headers: signed(devices, key: key, method: .post, body: body),
                                        body: ByteBuffer(bytes: body))
    }

    @Test func anUnknownKeyRegistersAndIsAcceptedAtOnce() async throws {
        let device = try SigningKey.generate(.p256)
        try await Self.app(registry: InMemoryDeviceRegistry()).test(.live) { client async throws in
            let refused = try await client.execute(uri: "/data", method: .get, headers: Self.signed("/data", key: device))
            #expect(refused.status == .unauthorized && Self.code(refused) == 10)
            let registration = try await Self.register(client, device)
            #expect(registration.status == .created)
            #expect(String(buffer: registration.body) == #"{"keyId":"\#(device.id)","format":"signcore","appId":"com.example.app","status":"active"}"#)
            // The negative cache entry is gone with the registration, not after its 300 s.
            let accepted = try await client.execute(uri: "/data", method: .get, headers: Self.signed("/data", key: device))
            #expect(accepted.status == .ok && String(buffer: accepted.body) == "\(device.id) levels 0")
            // Registering again keeps the record: 200.
            #expect(try await Self.register(client, device).status == .ok)
        }
    }

    @Test func registrationRefusalsOverHTTP() async throws {
        let device = try SigningKey.generate(.ed25519), other = try SigningKey.generate(.ed25519)
        try await Self.app(registry: InMemoryDeviceRegistry()).test(.live) { client async throws in
            #expect(Self.code(try await Self.register(client, device, appID: "com.example.other")) == 105)
            // A challenge bound to another key.
            let issued = try await client.execute(uri: Self.devices + "/challenge?keyId=" + other.id, method: .get)
            let bound = try #require((try JSONSerialization.jsonObject(with: Data(buffer: issued.body)) as? [String: Any])?["challenge"] as? String)
            #expect(Self.code(try await Self.register(client, device, challenge: bound)) == 86)
            // Used once: the second registration with it is refused.
            #expect(try await Self.register(client, other, challenge: bound).status == .created)
            #expect(Self.code(try await Self.register(client, other, challenge: bound)) == 88)
            // Signed by another key than the one registered: its signature does not verify as the body's key.
            let fresh = try await client.execute(uri: Self.devices + "/challenge", method: .get)
            let text = try #require((try JSONSerialization.jsonObject(with: Data(buffer: fresh.body)) as? [String: Any])?["challenge"] as? String)
            let body = Array(#"{"format":"signcore","keyId":"\#(device.id)","jwk":\#(try JWK.serialize(device, includePrivate: false)),"challenge":"\#(text)","appId":"com.example.app"}"#.utf8)
            let forged = try await client.execute(uri: Self.devices, method: .post, headers: Self.signed(Self.devices, key: other, method: .post, body: body),
                                                  body: ByteBuffer(bytes: body))
            #expect(Self.code(forged) == 104)
            // Malformed bodies, a bad keyId query, a wrong method.
            let junk = try await client.execute(uri: Self.devices, method: .post, body: ByteBuffer(string: "{\"format\":1}"))
            #expect(junk.status == .badRequest && Self.code(junk) == 102)
            #expect(Self.code(try await client.execute(uri: Self.devices + "/challenge?keyId=abc", method: .get)) == 102)
            #expect(Self.code(try await client.execute(uri: Self.devices + "/challenge", method: .post)) == 40)
            let large = try await client.execute(uri: Self.devices, method: .post, body: ByteBuffer(repeating: 0x20, count: 20_000))
            #expect(large.status == .contentTooLarge)
        }
    }

    @Test func countersPassConcurrentOrderAndRefuseRepeats() async throws {
        let device = try SigningKey.generate(.ed25519)
        try await Self.app(registry: InMemoryDeviceRegistry()).test(.live) { client async throws in
            #expect(try await Self.register(client, device).status == .created)
            func send(_ counter: String, cover: Bool = true) async throws -> TestResponse {
                var fields = try Self.signed("/data", key: device, extra: cover ? [(Self.counterField, counter)] : [])
                if !cover { fields[Self.counterField] = counter }
                return try await client.execute(uri: "/data", method: .get, headers: fields)
            }
            // Concurrent requests arrive in any order: all pass.
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for counter in (1...40).shuffled() { group.addTask { try await send(String(counter)).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == .ok })
            #expect(Self.code(try await send("17")) == 107)
            #expect(try await send("200").status == .ok)
            #expect(Self.code(try await send("41")) == 108)
            #expect(Self.code(try await send("0")) == 109)
            #expect(Self.code(try await client.execute(uri: "/data", method: .get, headers: Self.signed("/data", key: device))) == 109)
            #expect(Self.code(try await send("201", cover: false)) == 32)
            #expect(Self.code(try await send("0202")) == 45)
            #expect(Self.code(try await send("9223372036854775808")) == 45)
            #expect(try await send("9223372036854775807").status == .ok)
        }
    }

    @Test func aRevokedKeyIsRefusedAtOnce() async throws {
        let device = try SigningKey.generate(.ed25519)
        let registry = InMemoryDeviceRegistry()
        try await Self.app(registry: registry).test(.live) { client async throws in
            #expect(try await Self.register(client, device).status == .created)
            #expect(try await client.execute(uri: "/data", method: .get, headers: Self.signed("/data", key: device)).status == .ok)
            #expect(try await registry.revoke(keyID: device.id))
            #expect(Self.code(try await client.execute(uri: "/data", method: .get, headers: Self.signed("/data", key: device))) == 10)
            #expect(Self.code(try await Self.register(client, device)) == 101)
        }
    }

    @Test func theRegisteredDeviceLevelThroughThe428Flow() async throws {
        let device = try SigningKey.generate(.p256)
        try await Self.app(registry: InMemoryDeviceRegistry()).test(.live) { client async throws in
            #expect(try await Self.register(client, device).status == .created)
            let first = try await client.execute(uri: "/registered/x", method: .get, headers: Self.signed("/registered/x", key: device))
            #expect(first.status == .preconditionRequired && Self.code(first) == 80)
            let challenge = try Challenge(parsing: try #require(first.headers[HTTPField.Name("attest-challenge")!]))
            #expect(challenge.kind == .device && challenge.levels == Self.registered)
            let body = AttestRequest(challenge: challenge, answer: []).body
            let attested = try await client.execute(uri: AttestationGate.defaultEndpoint, method: .post,
                                                    headers: Self.signed(AttestationGate.defaultEndpoint, key: device, method: .post, body: body,
                                                                         extra: [(Self.counterField, "1")]),
                                                    body: ByteBuffer(bytes: body))
            #expect(attested.status == .ok)
            let token = try AttestResponse(body: Array(buffer: attested.body)).token
            let retried = try await client.execute(uri: "/registered/x", method: .get,
                                                   headers: Self.signed("/registered/x", key: device, extra: [(HTTPField.Name("attest-token")!, token),
                                                                                                            (Self.counterField, "2")]))
            #expect(retried.status == .ok && String(buffer: retried.body) == "\(device.id) levels \(Self.registered.rawValue)")
            // The platform level is not for a signcore key.
            let platform = try await client.execute(uri: "/platform/x", method: .get, headers: Self.signed("/platform/x", key: device, extra: [(Self.counterField, "3")]))
            let asked = try Challenge(parsing: try #require(platform.headers[HTTPField.Name("attest-challenge")!]))
            let refusedBody = AttestRequest(challenge: asked, answer: []).body
            let refused = try await client.execute(uri: AttestationGate.defaultEndpoint, method: .post,
                                                   headers: Self.signed(AttestationGate.defaultEndpoint, key: device, method: .post, body: refusedBody,
                                                                        extra: [(Self.counterField, "4")]),
                                                   body: ByteBuffer(bytes: refusedBody))
            #expect(refused.status == .forbidden && Self.code(refused) == 106)
        }
    }
}
