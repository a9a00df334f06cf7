import Foundation
import HTTPTypes
@_spi(SignCoreTools) import SignCore
import SignHTTP
@testable import SignHTTPSignatures
import Testing

/// `Vectors/httpsig.json` (docs/HTTPSIG.md §8), every case, refusals included: the file the
/// Python reference, written from the text alone, generates and checks.
@Suite struct HTTPSignatureVectorTests {
    nonisolated(unsafe) static let file: [String: Any] = {  // read only
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/httpsig.json")
        // A file that does not load has no group: theFileHasEveryGroup fails, the others check nothing.
        guard let data = try? Data(contentsOf: url), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return object
    }()

    static func cases(_ group: String) -> [[String: Any]] { file[group] as? [[String: Any]] ?? [] }

    static func key(_ name: String) throws -> SigningKey {
        let jwk = try #require((file["keys"] as? [String: Any])?[name])
        let json = try JSONSerialization.data(withJSONObject: jwk, options: [.sortedKeys])
        return try JWK.parseKey(String(decoding: json, as: UTF8.self))
    }

    static func fields(_ value: Any?) -> HTTPFields {
        var fields = HTTPFields()
        for pair in value as? [[String]] ?? [] where pair.count == 2 {
            if let name = HTTPField.Name(pair[0]) { fields.append(HTTPField(name: name, value: pair[1])) }
        }
        return fields
    }

    static func requestParts(_ value: Any?) -> MessageComponents.RequestParts? {
        guard let request = value as? [String: Any] else { return nil }
        return MessageComponents.RequestParts(method: request["method"] as? String ?? "", scheme: request["scheme"] as? String ?? "https",
                                              authority: request["authority"] as? String ?? "", target: request["target"] as? String ?? "",
                                              fields: fields(request["fields"]))
    }

    static func message(_ value: Any?) -> MessageComponents {
        let message = value as? [String: Any] ?? [:]
        if let status = message["status"] as? Int {
            return MessageComponents(status: status, fields: fields(message["fields"]), request: requestParts(message["request"]))
        }
        return MessageComponents(request: requestParts(message) ?? .init(method: "", scheme: "https", authority: "", target: "", fields: [:]))
    }

    static func lines(_ value: Any?) -> [String] { value as? [String] ?? (value as? String).map { [$0] } ?? [] }

    static func code(_ error: any Error) -> String { (error as? SignCoreError)?.code.name ?? "\(error)" }

    static func policy(_ value: Any?) throws -> HTTPSignaturePolicy {
        let policy = value as? [String: Any] ?? [:]
        return HTTPSignaturePolicy(coverage: policy["coverage"] as? String == "agent" ? .agent : .request,
                                   requiredComponents: try (policy["requiredComponents"] as? [String] ?? []).map { try ComponentIdentifier(written: $0) },
                                   maxAge: Int64(policy["maxAge"] as? Int ?? 300), skew: Int64(policy["skew"] as? Int ?? 30),
                                   nonce: policy["nonce"] as? String == "optional" ? .optional : .required,
                                   label: policy["label"] as? String, tag: policy["tag"] as? String)
    }

    @Test func theFileHasEveryGroup() {
        for group in ["base", "sign", "verify", "digest", "accept", "domain"] { #expect(!Self.cases(group).isEmpty, "\(group)") }
        let total = ["base", "sign", "verify", "digest", "accept", "domain"].map { Self.cases($0).count }.reduce(0, +)
        #expect(Self.file["numberOfTests"] as? Int == total)
    }

    @Test func base() throws {
        for vector in Self.cases("base") {
            let comment = vector["comment"] as? String ?? ""
            var fields = HTTPFields()
            for line in Self.lines(vector["signatureInput"]) { fields.append(HTTPField(name: SignatureFields.signatureInput, value: line)) }
            for line in Self.lines(vector["signature"]) { fields.append(HTTPField(name: SignatureFields.signature, value: line)) }
            do {
                let parsed = try SignatureFields(fields)
                let label = vector["label"] as? String
                guard let entry = label.map({ label in parsed.entries.first { $0.label == label } }) ?? parsed.entries.first else {
                    #expect(vector["error"] != nil, "\(comment): no entry")
                    continue
                }
                let base = try SignatureBase.make(entry.parameters, message: Self.message(vector["message"]))
                #expect(String(decoding: base, as: UTF8.self) == vector["base"] as? String, "\(comment)")
            } catch {
                #expect(Self.code(error) == vector["error"] as? String, "\(comment)")
            }
        }
    }

    @Test func sign() throws {
        for vector in Self.cases("sign") {
            let key = try Self.key(try #require(vector["key"] as? String))
            let base = Array((vector["base"] as? String ?? "").utf8)
            #expect(Base64URL.encode(try key.signSignatureBase(base)) == vector["signature"] as? String, "\(vector["comment"] ?? "")")
        }
    }

    @Test func verify() async throws {
        let keys = try ["hmac", "ed25519", "p256"].map { name -> SigningKey in
            let key = try Self.key(name)
            return key.algorithm == .hmacSHA256 ? key : try JWK.parseKey(JWK.serialize(key, includePrivate: false))
        }
        for vector in Self.cases("verify") {
            let comment = vector["comment"] as? String ?? ""
            let now = Int64(vector["now"] as? Int ?? 0)
            let replayGuard = try InMemoryReplayGuard(capacity: 1000)
            let verifier = try Verifier(keys: KeySet(keys), replayGuard: replayGuard, clock: { now })
            let checker = MessageSignatureVerifier(verifier, policy: try Self.policy(vector["policy"]))
            let seenNonces = vector["seen"] as? [[String]] ?? []
            let request = vector["request"] as? [String: Any] ?? [:]
            // swift-http-types does not hold a target with a control byte as it is (and no server
            // hands one on: its HTTP parser refuses it first); those cases are the reference's alone.
            if (request["target"] as? String ?? "").utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { continue }
            let origin = vector["origin"] as? [String: Any] ?? [:]
            let head = HTTPRequest(method: HTTPRequest.Method(request["method"] as? String ?? "GET") ?? .get, scheme: nil,
                                   authority: request["authority"] as? String, path: request["target"] as? String,
                                   headerFields: Self.fields(request["fields"]))
            let body = Base64URL.decode(vector["body"] as? String ?? "") ?? []
            do {
                // The verifier's own order (docs/HTTPSIG.md §5.2: Content-Digest at step 9); a server
                // refuses an unreadable one before reading the body (§4.2), which this file does not pin.
                var digest = (try? checker.bodyDigest(for: head, limit: .max)) ?? ContentDigest.Hasher(limit: .max)
                let appended: Result<Void, SignCoreError> = body.withUnsafeBytes { bytes in Result { () throws(SignCoreError) in try digest.append(bytes) } }
                try appended.get()
                let serverOrigin = ServerOrigin(scheme: origin["scheme"] as? String ?? "https", authority: origin["authority"] as? String)
                let value = digest.finalize()
                // Nonces seen before: recorded until when this request's would be (the in-memory
                // guard finds a replay under its expiry), when the checks before the guard pass.
                if let until = try? checker.check(head, bodyDigest: value, origin: ServerOrigin(scheme: origin["scheme"] as? String ?? "https",
                                                                                                   authority: origin["authority"] as? String), now: now).rememberUntil {
                    for seen in seenNonces where seen.count == 2 {
                        try await replayGuard.record(keyID: seen[0], nonce: MessageSignatureVerifier.replayNonce(seen[1]), expires: until, now: now)
                    }
                }
                let (identity, record) = try await checker.verifyDeferringRecord(head, bodyDigest: value, origin: serverOrigin)
                try await record()
                let checked = try checker.check(head, bodyDigest: value, origin: serverOrigin, now: now)
                let result = try #require(vector["result"] as? [String: Any], "\(comment): accepted, expected \(vector["error"] ?? "-")")
                #expect(identity.format == result["format"] as? String, "\(comment)")
                #expect(identity.keyID == result["keyID"] as? String, "\(comment)")
                #expect(identity.algorithm.httpSignatureName == result["algorithm"] as? String, "\(comment)")
                #expect(identity.created == Int64(result["created"] as? Int ?? -1), "\(comment)")
                #expect(identity.expires == Int64(result["expires"] as? Int ?? -1), "\(comment)")
                let entry = checker.selected(try SignatureFields(head.headerFields))
                #expect(entry?.parameters.components.map(\.description) == result["covered"] as? [String], "\(comment)")
                #expect(identity.coveredHeaders == entry?.parameters.components.filter(\.coversWholeField).map(\.name), "\(comment)")
                let nonceHex = checked.nonce.map { $0.bytes.map { String(format: "%02x", $0) }.joined() }
                #expect(nonceHex == result["replayNonce"] as? String, "\(comment)")
                #expect(checked.nonce == nil ? result["rememberUntil"] is NSNull || result["rememberUntil"] == nil
                        : checked.rememberUntil == Int64(result["rememberUntil"] as? Int ?? -1), "\(comment)")
            } catch {
                #expect(Self.code(error) == vector["error"] as? String, "\(comment): \(error)")
            }
        }
    }

    @Test func digest() throws {
        for vector in Self.cases("digest") {
            let comment = vector["comment"] as? String ?? ""
            let fields = Self.fields(vector["fields"])
            let body = Base64URL.decode(vector["body"] as? String ?? "") ?? []
            do {
                let claimed = try ContentDigest.claimed(in: fields)
                let result = try #require(vector["result"] as? [String: Any], "\(comment): read, expected \(vector["error"] ?? "-")")
                let expected = (result["claimed"] as? [[String]] ?? []).map { "\($0[0])=:\($0[1]):" }.joined(separator: ", ")
                #expect((claimed?.fieldValue ?? "") == expected, "\(comment)")
                if let claimed {
                    let computed = ContentDigest.of(body, algorithms: claimed.digests.map(\.0))
                    #expect((computed == claimed) == (result["matches"] as? Bool), "\(comment)")
                }
            } catch {
                #expect(Self.code(error) == vector["error"] as? String, "\(comment)")
            }
        }
    }

    @Test func accept() throws {
        for vector in Self.cases("accept") {
            let policy = try Self.policy(vector["policy"])
            let verifier = try Verifier(keys: KeySet(), replayGuard: InMemoryReplayGuard(capacity: 10))
            let request = HTTPRequest(method: HTTPRequest.Method(vector["method"] as? String ?? "GET") ?? .get, scheme: "https",
                                      authority: "api.example.com", path: "/")
            let fields = MessageSignatureVerifier(verifier, policy: policy).refusalFields(for: SignCoreError(.badSignature, ""), request: request)
            #expect(fields[SignatureFields.acceptSignature] == vector["field"] as? String, "\(vector["comment"] ?? "")")
        }
    }

    @Test func domain() throws {
        let key = try Self.key("ed25519")
        for vector in Self.cases("domain") {
            let input = Base64URL.decode(vector["input"] as? String ?? "") ?? []
            let taken = (try? key.signSignatureBase(input)) != nil
            #expect(taken == (vector["isBase"] as? Bool), "\(vector["comment"] ?? "")")
        }
    }
}
