import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import SignAsyncHTTPClient
@_spi(SignCoreTools) import SignCore
import SignAttest
import SignDevice
@testable import SignGateway
import SignHTTP
import SignTestSupport
import Testing

/// Device keys through signd (docs/ATTEST.md §9, docs/SIGND.md "Device keys"), in front of a
/// real upstream, two nodes sharing a real PostgreSQL: a client registers its install key on
/// demand and is accepted by both nodes at once; a revocation reaches the other node within a
/// second; concurrent counters of one device lose no update; the registered-device level
/// through the 428 flow; refused requests never reach the upstream.
@Suite(.serialized) struct GatewayDeviceTests {
    static let serverKeys = GatewayAttestationTests.serverKeys
    static let app = "com.example.app"

    /// Two nodes' configuration: no static client key (every client key is a device key),
    /// devices on PostgreSQL, `/device/**` requiring level 14 earned by a device challenge.
    static func configuration(upstream: Int, folder: TemporaryFolder, server: PostgresServer, fixedOrigin: Bool) throws -> String {
        let keys = try folder.writeKeys([SigningKey.generate(.ed25519).publicOnly()])  // a key no client has
        let attestKeys = try folder.writeKeys(serverKeys, to: "attest.jwks")
        return GatewayTests.configuration(upstream: upstream, keys: keys, [
            "origin": fixedOrigin ? ["scheme": "https", "authority": "gateway.test"] : ["scheme": "http"],
            "replay": GatewayFleetTests.postgresReplay(server),
            "attestation": ["keys": attestKeys, "store": "postgres",
                            "challenges": [["levels": [0], "difficulty": 12, "count": 2], ["kind": "device", "levels": [14]]],
                            "devices": ["appIds": [app], "store": "postgres", "platformLevels": [15]]] as [String: Any],
            "policy": ["routes": [["route": "/device/**", "signature": "require", "attestation": ["mode": "require", "levels": [14]]]]],
        ])
    }

    /// Runs two signd nodes (and an upstream) on one PostgreSQL while `body` runs with their
    /// ports and the configuration's text.
    static func withTwoNodes(fixedOrigin: Bool = false, _ body: @escaping @Sendable (_ ports: [Int], _ json: String, _ upstream: Upstream, _ folder: TemporaryFolder) async throws -> Void) async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let folder = try TemporaryFolder()
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = try Self.configuration(upstream: upstreamPort, folder: folder, server: server, fixedOrigin: fixedOrigin)
            try await withGateway(json) { first in
                try await withGateway(json) { second in try await body([first, second], json, upstream, folder) }
            }
        }
    }

    /// A device client: its key and counter in files of mode 0600 under `folder`.
    static func client(_ folder: TemporaryFolder, name: String = "device", attestation: Bool = false) throws -> SigningClient {
        let key = try SigningKey.loadOrCreate(file: folder.path + "/\(name).jwk")
        let device = DeviceKeyPolicy(appID: app, counter: try DeviceCounter(file: folder.path + "/\(name).counter"))
        return try SigningClient(signer: Signer(key: key), device: device,
                                 attestation: attestation ? AttestationPolicy(solver: ProofOfWorkSolver(workers: 2)) : nil)
    }

    static func get(_ http: HTTPClient, port: Int, _ path: String, client: SigningClient? = nil, fields: [(String, String)] = []) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
        for (name, value) in fields { request.headers.add(name: name, value: value) }
        let response = if let client { try await http.execute(request, client: client, timeout: .seconds(20)) } else {
            try await http.execute(request, timeout: .seconds(20))
        }
        _ = try await response.body.collect(upTo: 1 << 20)
        return response
    }

    static func code(_ response: HTTPClientResponse) -> Int? {
        response.headers.first(name: "signcore-error")?.split(separator: ";").first { $0.hasPrefix("code=") }.flatMap { Int($0.dropFirst(5)) }
    }

    /// The client's request to node B is refused (unknown key, and B caches that); the client
    /// registers through node A on its next request; node B accepts it at once; a revocation
    /// made as `signd --revoke-device` makes reaches node B within a second.
    @Test func registerOnOneNodeAcceptedByTheOtherRevokedEverywhere() async throws {
        try await Self.withTwoNodes { ports, json, upstream, folder in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let key = try SigningKey.loadOrCreate(file: folder.path + "/device.jwk")
            let plain = SigningClient(signer: try Signer(key: key))
            let unknown = try await Self.get(http, port: ports[1], "/data", client: plain)
            #expect(unknown.status == .unauthorized && Self.code(unknown) == 10)
            let client = try Self.client(folder)
            let registered = try await Self.get(http, port: ports[0], "/data", client: client)
            #expect(registered.status == .ok)
            let other = try await Self.get(http, port: ports[1], "/data", client: client)
            #expect(other.status == .ok)
            #expect(upstream.all.map(\.keyID) == [key.id, key.id])
            // The upstream saw the counter the signature covered.
            #expect(upstream.all.allSatisfy { record in record.fields.contains { $0.hasPrefix("signcore-counter: ") } })

            let operatorView = try Gateway(configuration: GatewayConfiguration.parse(Data(json.utf8)), logger: quietLogger)
            #expect(try await operatorView.revokeDevice(keyID: key.id))
            let clock = ContinuousClock(), start = clock.now
            var refused = false
            // Within 3 s, the notification's way through PostgreSQL on a loaded 2-core machine.
            while clock.now - start < .seconds(3) {
                // Refused as unknown, the client tries to register again, and learns the key is revoked.
                do {
                    _ = try await Self.get(http, port: ports[1], "/data", client: client)
                } catch let error as SignCoreError {
                    refused = error.code == .deviceRevoked
                    break
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(refused)
            #expect(try await Self.get(http, port: ports[0], "/data", client: plain).status == .unauthorized)
            #expect(upstream.all.count >= 2 && upstream.all.count <= 3)
        }
    }

    /// 100 requests of one device at once, spread over both nodes: every one accepted, each
    /// counter recorded (none lost), then a repeat of one is refused and never reaches the upstream.
    @Test func concurrentRequestsOfOneDeviceAcrossTwoNodes() async throws {
        try await Self.withTwoNodes { ports, _, upstream, folder in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let client = try Self.client(folder)
            #expect(try await Self.get(http, port: ports[0], "/warm", client: client).status == .ok)
            let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                for index in 0..<100 {
                    group.addTask { try await Self.get(http, port: ports[index % 2], "/items/\(index)", client: client).status.code }
                }
                return try await group.reduce(into: [UInt]()) { $0.append($1) }
            }
            #expect(statuses.count == 100 && statuses.allSatisfy { $0 == 200 })
            #expect(upstream.all.count == 101)
            // A counter sent again (in a freshly signed request): refused by the other node too.
            let key = try SigningKey.loadOrCreate(file: folder.path + "/device.jwk")
            let signer = try Signer(key: key, coveredHeaders: ["signcore-counter"])
            for (counter, code) in [("50", 107), ("0", 109)] {
                let signed = try signer.sign(method: .get, url: "http://127.0.0.1:\(ports[1])/again", body: [], headers: [HeaderField("signcore-counter", counter)])
                let response = try await Self.get(http, port: ports[1], "/again",
                                                  fields: [("whash", signed.whash), ("wtoken", signed.wtoken), ("signcore-counter", counter)])
                #expect(response.status == .conflict && Self.code(response) == code)
            }
            #expect(upstream.all.count == 101)
        }
    }

    /// A route requiring the registered-device level: the client registers, answers the device
    /// challenge with its registered key, and its request arrives with the level.
    @Test func theRegisteredDeviceLevelThroughSignd() async throws {
        try await Self.withTwoNodes { ports, _, upstream, folder in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let client = try Self.client(folder, attestation: true)
            let response = try await Self.get(http, port: ports[0], "/device/profile", client: client)
            #expect(response.status == .ok)
            let record = try #require(upstream.all.last)
            #expect(record.path == "/device/profile")
            #expect(record.fields.contains("signcore-attestation: \(1 << 14)"))
            // The token serves the other node as well.
            #expect(try await Self.get(http, port: ports[1], "/device/other", client: client).status == .ok)
        }
    }

    /// Registration refusals end to end: a wrong app id, a challenge used twice; nothing of them
    /// reaches the upstream.
    @Test func registrationRefusalsThroughSignd() async throws {
        try await Self.withTwoNodes(fixedOrigin: true) { ports, _, upstream, folder in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let key = try SigningKey.loadOrCreate(file: folder.path + "/device.jwk", algorithm: .p256)
            // Requests as a client of the fleet's one origin sends them (Host gateway.test, signed for https://gateway.test).
            func challenge() async throws -> String {
                var ask = HTTPClientRequest(url: "http://127.0.0.1:\(ports[0])/.well-known/signcore/devices/challenge?keyId=\(key.id)")
                ask.headers.add(name: "host", value: "gateway.test")
                let issued = try await http.execute(ask, timeout: .seconds(10))
                let object = try JSONSerialization.jsonObject(with: Data(buffer: try await issued.body.collect(upTo: 4096))) as? [String: Any]
                return try #require(object?["challenge"] as? String)
            }
            func register(at port: Int, challenge: String, app: String = Self.app) async throws -> (UInt, Int?) {
                let body = #"{"format":"signcore","keyId":"\#(key.id)","jwk":\#(try JWK.serialize(key, includePrivate: false)),"challenge":"\#(challenge)","appId":"\#(app)"}"#
                let signed = try Signer(key: key).sign(method: .post, url: "https://gateway.test/.well-known/signcore/devices", body: Array(body.utf8))
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/.well-known/signcore/devices")
                request.method = .POST
                request.headers.add(name: "host", value: "gateway.test")
                request.headers.add(name: "whash", value: signed.whash)
                request.headers.add(name: "wtoken", value: signed.wtoken)
                request.body = .bytes(ByteBuffer(string: body))
                let response = try await http.execute(request, timeout: .seconds(10))
                _ = try await response.body.collect(upTo: 4096)
                return (response.status.code, Self.code(response))
            }
            let wrongApp = try await register(at: ports[0], challenge: try await challenge(), app: "com.example.other")
            #expect(wrongApp.0 == 403 && wrongApp.1 == 105)
            // One challenge (issued by node A), two registrations (one per node): the second is refused.
            let once = try await challenge()
            let first = try await register(at: ports[0], challenge: once)
            let second = try await register(at: ports[1], challenge: once)
            #expect(first.0 == 201 && second.0 == 409 && second.1 == 88)
            #expect(upstream.all.isEmpty)
        }
    }
}

/// App Attest through signd (docs/ATTEST.md §9.7): a seed 003 registration (unsigned JSON, the
/// attestation made at test time by scripts/device-fixtures under a test root), then the platform
/// level earned by an assertion over the 428's challenge; a replayed counter, a tampered
/// assertion and a revoked key refused, none reaching the upstream.
@Suite(.serialized) struct GatewayAppAttestTests {
    static let app = "TEAM123456.com.example.app"

    struct Made: Decodable {
        let root: String
        let authority: [String: String]
        let registrations: [String: Registration]
        let assertions: [Assertion]
        struct Registration: Decodable { let token: String, keyId: String, privateKey: String }
        struct Assertion: Decodable { let token: String }
    }

    static func make(_ request: [String: Any]) async throws -> Made {
        try JSONDecoder().decode(Made.self, from: try await deviceFixtures(request))
    }

    /// A test CA (made by a first run of the independent implementation), its root written in
    /// `folder` for signd to trust: the authority to make later artefacts under, and the root's file.
    static func testAuthority(in folder: TemporaryFolder) async throws -> (authority: [String: String], rootFile: String) {
        let authority = try await make(["appId": app, "registrations": []]).authority
        let rootFile = folder.path + "/appattest-root.pem"
        try #require(authority["root"]).write(toFile: rootFile, atomically: true, encoding: .utf8)
        return (authority, rootFile)
    }

    @Test func registerThenEarnThePlatformLevelWithAnAssertion() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let folder = try TemporaryFolder()
        let client = try SigningKey.generate(.ed25519), otherClient = try SigningKey.generate(.ed25519)
        let keys = try folder.writeKeys([client.publicOnly(), otherClient.publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        let (authority, rootFile) = try await Self.testAuthority(in: folder)
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "origin": ["scheme": "https", "authority": "gateway.test"],
                "replay": GatewayFleetTests.postgresReplay(server),
                "attestation": ["keys": attestKeys, "store": "postgres", "challenges": [["kind": "device", "levels": [15]]],
                                "devices": ["appIds": [Self.app], "store": "postgres", "platformLevels": [15],
                                            "formats": ["signcore", "apple-app-attest"],
                                            "appAttest": ["roots": [rootFile], "environments": ["development"]]]] as [String: Any],
                "policy": ["routes": [["route": "/platform/**", "signature": "require", "attestation": ["mode": "require", "levels": [15]]]]],
            ])
            try await withGateway(json) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                func send(_ method: HTTPMethod, _ path: String, body: String? = nil, signed: Bool = false, by signingKey: SigningKey? = nil,
                          fields: [(String, String)] = []) async throws -> (status: UInt, code: Int?, body: [UInt8], challenge: String?) {
                    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
                    request.method = method
                    request.headers.add(name: "host", value: "gateway.test")
                    for (name, value) in fields { request.headers.add(name: name, value: value) }
                    if signed {
                        let signer = try Signer(key: signingKey ?? client, coveredHeaders: fields.map { $0.0 })
                        let headers = try signer.sign(method: RequestMethod(token: method.rawValue), url: "https://gateway.test" + path,
                                                      body: Array((body ?? "").utf8), headers: fields.map { HeaderField($0.0, $0.1) })
                        request.headers.add(name: "whash", value: headers.whash)
                        request.headers.add(name: "wtoken", value: headers.wtoken)
                    }
                    if let body { request.body = .bytes(ByteBuffer(string: body)) }
                    let response = try await http.execute(request, timeout: .seconds(10))
                    let bytes = Array(buffer: try await response.body.collect(upTo: 1 << 16))
                    return (response.status.code, GatewayDeviceTests.code(response), bytes, response.headers.first(name: "attest-challenge"))
                }
                func object(_ bytes: [UInt8]) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:] }

                // 1. Registration, seed 003's JSON, unsigned: a challenge, an attestation made over its text.
                let issued = try await send(.GET, "/.well-known/signcore/devices/challenge")
                let registrationChallenge = try #require(object(issued.body)["challenge"] as? String)
                let made = try await Self.make(["appId": Self.app, "authority": authority,
                                          "registrations": [["name": "phone", "challenge": registrationChallenge, "variant": "valid"]]])
                let phone = try #require(made.registrations["phone"])
                let registration = #"{"platform":"ios","format":"apple-app-attest","keyId":"\#(phone.keyId)","challenge":"\#(registrationChallenge)","token":"\#(phone.token)"}"#
                let registered = try await send(.POST, "/.well-known/signcore/devices", body: registration)
                #expect(registered.status == 201, "\(String(decoding: registered.body, as: UTF8.self))")
                #expect(object(registered.body)["keyId"] as? String == phone.keyId)
                // The same registration again: its challenge is spent.
                #expect(try await send(.POST, "/.well-known/signcore/devices", body: registration).code == 88)

                // 2. The platform level: a 428 whose device challenge the App Attest key asserts.
                func assertion(over challenge: String, counter: Int, variant: String = "valid") async throws -> String {
                    let made = try await Self.make(["appId": Self.app, "authority": authority, "registrations": [],
                                              "assertions": [["privateKey": phone.privateKey, "clientData": challenge, "counter": counter, "variant": variant]]])
                    return try #require(made.assertions.first).token
                }
                func attest(_ challenge: String, _ token: String, by signingKey: SigningKey? = nil) async throws
                    -> (status: UInt, code: Int?, body: [UInt8], challenge: String?) {
                    let body = #"{"challenge":"\#(challenge)","format":"apple-app-attest","keyId":"\#(phone.keyId)","token":"\#(token)"}"#
                    return try await send(.POST, "/.well-known/signcore/attest", body: body, signed: true, by: signingKey)
                }
                let first = try await send(.GET, "/platform/x", signed: true)
                #expect(first.status == 428 && first.code == 80)
                let d1 = try #require(first.challenge)
                let redeemed = try await attest(d1, try await assertion(over: d1, counter: 1))
                #expect(redeemed.status == 200, "\(String(decoding: redeemed.body, as: UTF8.self))")
                let token = try #require(object(redeemed.body)["token"] as? String)
                let passed = try await send(.GET, "/platform/x", signed: true, fields: [("attest-token", token)])
                #expect(passed.status == 200)
                #expect(upstream.all.last?.fields.contains("signcore-attestation: \(1 << 15)") == true)

                // 3. Refusals: a counter seen already, an assertion over another challenge, a tampered one.
                let d2 = try #require(try await send(.GET, "/platform/y", signed: true).challenge)
                #expect(try await attest(d2, try await assertion(over: d2, counter: 1)).code == 107)
                let d3 = try #require(try await send(.GET, "/platform/y", signed: true).challenge)
                #expect(try await attest(d3, try await assertion(over: d2, counter: 5)).code == 115)
                let d4 = try #require(try await send(.GET, "/platform/y", signed: true).challenge)
                #expect(try await attest(d4, try await assertion(over: d4, counter: 6, variant: "tampered")).code == 115)
                // The phone's App Attest key answers for the key that first used it, not for another install's key.
                let foreign = try #require(try await send(.GET, "/platform/y", signed: true, by: otherClient).challenge)
                #expect(try await attest(foreign, try await assertion(over: foreign, counter: 7), by: otherClient).code == 104)
                // 4. Seed 003's own assertion, unsigned: a one-time payload for the key, an assertion over it.
                let payloadAnswer = try await send(.GET, "/.well-known/signcore/devices/payload?keyId=" + phone.keyId.replacingOccurrences(of: "+", with: "%2B")
                                                    .replacingOccurrences(of: "/", with: "%2F").replacingOccurrences(of: "=", with: "%3D"))
                let payload = try #require(object(payloadAnswer.body)["payload"] as? String)
                let seedToken = try await assertion(over: payload, counter: 10)
                let seed = #"{"platform":"ios","format":"apple-app-attest","keyId":"\#(phone.keyId)","payload":"\#(payload)","token":"\#(seedToken)"}"#
                let verified = try await send(.POST, "/.well-known/signcore/devices/assertions", body: seed)
                #expect(verified.status == 200 && object(verified.body)["counter"] as? Int == 10, "\(String(decoding: verified.body, as: UTF8.self))")
                #expect(try await send(.POST, "/.well-known/signcore/devices/assertions", body: seed).code == 88)
                // A payload is never redeemed at the attest endpoint for a token.
                let payload2 = try #require(object(try await send(.GET, "/.well-known/signcore/devices/payload?keyId=" + phone.keyId
                    .replacingOccurrences(of: "+", with: "%2B").replacingOccurrences(of: "/", with: "%2F").replacingOccurrences(of: "=", with: "%3D")).body)["payload"] as? String)
                let redeemedPayload = try await attest(payload2, try await assertion(over: payload2, counter: 12))
                #expect(redeemedPayload.status == 400 && redeemedPayload.code == 81)
                // 5. Revoked: refused from then on.
                let operatorView = try Gateway(configuration: GatewayConfiguration.parse(Data(json.utf8)), logger: quietLogger)
                #expect(try await operatorView.revokeDevice(keyID: phone.keyId))
                let d5 = try #require(try await send(.GET, "/platform/y", signed: true).challenge)
                #expect(try await attest(d5, try await assertion(over: d5, counter: 13)).code == 101)
                #expect(upstream.all.map(\.path) == ["/platform/x"])
            }
        }
    }
}

/// The app's App Attest key behind the hook a real app implements with DCAppAttestService; here
/// the independent implementation (scripts/device-fixtures) holds the key and makes its
/// attestations and assertions.
final class ScriptAsserter: PlatformAsserter {
    let format = DeviceFormat.appleAppAttest
    let keyID: String
    let privateKey: String
    let authority: [String: String]
    let counter = Locked(0)

    init(authority: [String: String]) async throws {
        let made = try await GatewayAppAttestTests.make(["appId": GatewayAppAttestTests.app, "authority": authority,
                                                   "registrations": [["name": "key", "challenge": "-", "variant": "valid"]]])
        let key = try #require(made.registrations["key"])
        keyID = key.keyId
        privateKey = key.privateKey
        self.authority = authority
    }

    func attestation(clientData: [UInt8]) async throws(SignCoreError) -> [UInt8] {
        do {
            let made = try await GatewayAppAttestTests.make(["appId": GatewayAppAttestTests.app, "authority": authority,
                                                       "registrations": [["name": "key", "challenge": String(decoding: clientData, as: UTF8.self),
                                                                          "variant": "valid", "privateKey": privateKey]]])
            let token = try #require(made.registrations["key"]).token
            return Array(try #require(Data(base64Encoded: token)))
        } catch { throw SignCoreError(.cryptoFailure, "the test's App Attest could not attest") }
    }

    func assertion(clientData: [UInt8]) async throws(SignCoreError) -> [UInt8] {
        let next = counter.withLock { value -> Int in
            value += 1
            return value
        }
        do {
            let made = try await GatewayAppAttestTests.make(["appId": GatewayAppAttestTests.app, "authority": authority, "registrations": [],
                                                       "assertions": [["privateKey": privateKey, "clientData": String(decoding: clientData, as: UTF8.self),
                                                                       "counter": next, "variant": "valid"]]])
            let token = try #require(made.assertions.first).token
            return Array(try #require(Data(base64Encoded: token)))
        } catch { throw SignCoreError(.cryptoFailure, "the test's App Attest could not assert") }
    }
}

extension GatewayAppAttestTests {
    /// A client with an App Attest hook: its request to a platform route is answered with a 428,
    /// its key turns out not to be registered, the client registers it (attestation through the
    /// hook) and answers with an assertion; the request arrives with the platform level. The app
    /// writes no 428 or registration handling.
    @Test func aClientWithAnAppAttestHookRegistersAndAssertsByItself() async throws {
        let folder = try TemporaryFolder()
        let client = try SigningKey.generate(.ed25519)
        let keys = try folder.writeKeys([client.publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        let (authority, rootFile) = try await Self.testAuthority(in: folder)
        let asserter = try await ScriptAsserter(authority: authority)
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                "origin": ["scheme": "http"],
                "attestation": ["keys": attestKeys, "challenges": [["kind": "device", "levels": [15]]],
                                "devices": ["appIds": [Self.app], "platformLevels": [15], "formats": ["signcore", "apple-app-attest"],
                                            "appAttest": ["roots": [rootFile], "environments": ["development"]]]] as [String: Any],
                "policy": ["routes": [["route": "/platform/**", "signature": "require", "attestation": ["mode": "require", "levels": [15]]]]],
            ])
            try await withGateway(json) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                let signing = try SigningClient(signer: Signer(key: client),
                                                device: DeviceKeyPolicy(appID: Self.app, counter: DeviceCounter(), asserter: asserter),
                                                attestation: AttestationPolicy())
                let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/platform/profile"), client: signing,
                                                      timeout: .seconds(30))
                _ = try await response.body.collect(upTo: 1 << 16)
                #expect(response.status == .ok)
                #expect(upstream.all.last?.fields.contains("signcore-attestation: \(1 << 15)") == true)
                // The token serves the next request: no second assertion.
                let again = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/platform/other"), client: signing, timeout: .seconds(30))
                #expect(again.status == .ok)
                #expect(asserter.counter.withLock { $0 } == 2)  // the first refused (key not registered), the second accepted
            }
        }
    }
}

/// Play Integrity through signd (docs/ATTEST.md §9.8): an Android install's key registers with an
/// integrity verdict (tokens made at test time under Play Console keys made there too), earns the
/// platform level with its own signature, and a verdict below the policy is refused.
@Suite(.serialized) struct GatewayPlayIntegrityTests {
    static let package = "com.example.app"

    struct Made: Decodable {
        let playIntegrity: Play
        struct Play: Decodable { let decryptionKey: String, verificationKey: String, certificateDigest: String, tokens: [Token] }
        struct Token: Decodable { let token: String }
    }

    /// The Play Console's keys (made by scripts/device-fixtures) and a verdict for each (nonce, variant).
    static func make(_ cases: [(String, String)]) async throws -> Made.Play {
        let request: [String: Any] = ["appId": package, "registrations": [],
                                      "playIntegrity": ["package": package, "cases": cases.map { ["nonce": $0.0, "variant": $0.1] }]]
        return try JSONDecoder().decode(Made.self, from: try await deviceFixtures(request)).playIntegrity
    }

    @Test func anAndroidInstallRegistersWithAVerdictAndEarnsThePlatformLevel() async throws {
        let folder = try TemporaryFolder()
        let install = try SigningKey.loadOrCreate(file: folder.path + "/install.jwk", algorithm: .p256)
        let keys = try folder.writeKeys([SigningKey.generate(.ed25519).publicOnly()])
        let attestKeys = try folder.writeKeys(GatewayAttestationTests.serverKeys, to: "attest.jwks")
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let decryptionFile = folder.path + "/play-decryption.txt", verificationFile = folder.path + "/play-verification.txt"
            func configuration(digest: String) -> String {
                GatewayTests.configuration(upstream: upstreamPort, keys: keys, [
                    "origin": ["scheme": "https", "authority": "gateway.test"],
                    "attestation": ["keys": attestKeys, "challenges": [["kind": "device", "levels": [15]]],
                                    "devices": ["appIds": [Self.package], "platformLevels": [15], "formats": ["android-play-integrity"],
                                                "playIntegrity": ["decryptionKeyFile": decryptionFile, "verificationKeyFile": verificationFile,
                                                                  "certificateDigests": [digest]]]] as [String: Any],
                    "policy": ["routes": [["route": "/platform/**", "signature": "require", "attestation": ["mode": "require", "levels": [15]]]]],
                ])
            }
            // The verdicts are made with the Play Console's keys, which signd must trust from its start:
            // so the registration challenges are issued first, by an Attestor holding signd's
            // attestation keys (challenges are stateless: any holder of the keys issues ones signd accepts).
            let issuer = try Attestor(keys: AttestationKeys(GatewayAttestationTests.serverKeys), redemptions: InMemoryRedemptionStore(),
                                      devices: Devices(registry: InMemoryDeviceRegistry(), policy: DevicePolicy(appIDs: [Self.package])))
            let now = UInt64(Date().timeIntervalSince1970 * 1000)
            let challenges = try (0..<2).map { _ in try issuer.registrationChallenge(boundTo: install.thumbprint.bytes, origin: "https://gateway.test", now: now) }
            let made = try await Self.make([(PlayIntegrityVerifier.nonce(challenge: challenges[0].text, thumbprint: install.thumbprint.bytes), "noDeviceIntegrity"),
                                 (PlayIntegrityVerifier.nonce(challenge: challenges[1].text, thumbprint: install.thumbprint.bytes), "valid")])
            try made.decryptionKey.write(toFile: decryptionFile, atomically: true, encoding: .utf8)
            try made.verificationKey.write(toFile: verificationFile, atomically: true, encoding: .utf8)
            try await withGateway(configuration(digest: made.certificateDigest)) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                func send(_ method: HTTPMethod, _ path: String, body: String = "", fields: [(String, String)] = []) async throws -> (UInt, Int?, [UInt8], String?) {
                    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
                    request.method = method
                    request.headers.add(name: "host", value: "gateway.test")
                    for (name, value) in fields { request.headers.add(name: name, value: value) }
                    let signer = try Signer(key: install, coveredHeaders: fields.map { $0.0 })
                    let headers = try signer.sign(method: RequestMethod(token: method.rawValue), url: "https://gateway.test" + path,
                                                  body: Array(body.utf8), headers: fields.map { HeaderField($0.0, $0.1) })
                    request.headers.add(name: "whash", value: headers.whash)
                    request.headers.add(name: "wtoken", value: headers.wtoken)
                    if !body.isEmpty { request.body = .bytes(ByteBuffer(string: body)) }
                    let response = try await http.execute(request, timeout: .seconds(10))
                    let bytes = Array(buffer: try await response.body.collect(upTo: 1 << 16))
                    return (response.status.code, GatewayDeviceTests.code(response), bytes, response.headers.first(name: "attest-challenge"))
                }
                func registration(_ index: Int) throws -> String {
                    #"{"platform":"android","format":"android-play-integrity","keyId":"\#(install.id)","jwk":\#(try JWK.serialize(install, includePrivate: false)),"challenge":"\#(challenges[index].text)","token":"\#(made.tokens[index].token)"}"#
                }
                // A device without integrity: refused, with the reason.
                let weak = try await send(.POST, "/.well-known/signcore/devices", body: try registration(0))
                #expect(weak.0 == 403 && weak.1 == 116)
                // A genuine one: registered, then the platform level with the key's own signature and counter.
                let registered = try await send(.POST, "/.well-known/signcore/devices", body: try registration(1))
                #expect(registered.0 == 201, "\(String(decoding: registered.2, as: UTF8.self))")
                let first = try await send(.GET, "/platform/x", fields: [("signcore-counter", "1")])
                #expect(first.0 == 428)
                let challenge = try #require(first.3)
                let attested = try await send(.POST, "/.well-known/signcore/attest", body: #"{"challenge":"\#(challenge)"}"#,
                                              fields: [("signcore-counter", "2")])
                #expect(attested.0 == 200)
                let token = try #require((try JSONSerialization.jsonObject(with: Data(attested.2)) as? [String: Any])?["token"] as? String)
                let passed = try await send(.GET, "/platform/x", fields: [("attest-token", token), ("signcore-counter", "3")])
                #expect(passed.0 == 200)
                #expect(upstream.all.map(\.path) == ["/platform/x"])
            }
        }
    }
}

