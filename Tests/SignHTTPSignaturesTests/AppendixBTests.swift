import Foundation
import HTTPTypes
import SignCore
import SignHTTP
@testable import SignHTTPSignatures
import Testing

/// RFC 9421's published examples (Fixtures/rfc9421-appendix-b.json, transcribed from the RFC and
/// checked with an independent library): every base of Appendix B.2, B.3 and B.4 byte for byte;
/// B.2.5 (HMAC) and B.2.6 (Ed25519), the deterministic ones, signed byte for byte; B.2.4 (ECDSA)
/// verified; the RSA ones refused by name; the component values of §2. And RFC 9530's digests.
@Suite struct AppendixBTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    nonisolated(unsafe) static let appendix: [String: Any] = load("rfc9421-appendix-b.json")  // read only
    nonisolated(unsafe) static let digests: [String: Any] = load("rfc9530-examples.json")

    static func load(_ name: String) -> [String: Any] {
        guard let data = try? Data(contentsOf: fixtures.appendingPathComponent(name)),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { fatalError("\(name) does not load") }
        return object
    }

    static func section(_ path: String...) -> [String: Any] {
        var node: Any = appendix
        for key in path { node = (node as? [String: Any])?[key] ?? [:] }
        return node as? [String: Any] ?? [:]
    }

    /// The test request or response of B.2 as our message (the request at `https://example.com`).
    static func message(_ name: String) -> MessageComponents {
        let message = appendix[name] as? [String: Any] ?? [:]
        var fields = HTTPFields()
        for pair in message["headers"] as? [[String]] ?? [] where pair[0].lowercased() != "host" {
            fields.append(HTTPField(name: HTTPField.Name(pair[0])!, value: pair[1]))
        }
        if let status = message["status"] as? Int { return MessageComponents(status: status, fields: fields) }
        return MessageComponents(request: .init(method: message["method"] as? String ?? "", scheme: "https", authority: "example.com",
                                                target: message["target"] as? String ?? "", fields: fields))
    }

    static func bytes(_ text: Any?) -> [UInt8] { Array((text as? String ?? "").utf8) }

    /// The entry of a `Signature-Input` / `Signature` pair, as a verifier reads them.
    static func entry(_ example: [String: Any]) throws -> SignatureFields.Entry {
        var fields = HTTPFields()
        fields[SignatureFields.signatureInput] = example["signature_input"] as? String
        fields[SignatureFields.signature] = example["signature"] as? String
        return try #require(try SignatureFields(fields).entries.first)
    }

    static func key(_ name: String) throws -> SigningKey {
        let raw = section("keys", name)["raw"] as? [String: Any] ?? [:]
        func decode(_ field: String) throws -> [UInt8] { try #require(Base64URL.decode(raw[field] as? String ?? "")) }
        switch name {
        case "test-shared-secret":
            return try SigningKey.hmac(secret: try #require(Base64URL.decode(section("keys", name)["bytes_b64url"] as? String ?? "")), id: name)
        case "test-key-ed25519": return try SigningKey.ed25519(seed: try decode("seed_b64url"), id: name)
        default: return try SigningKey.p256(privateKey: try decode("d_b64url"), id: name)
        }
    }

    @Test(arguments: ["B.2.1", "B.2.2", "B.2.3", "B.2.4", "B.2.5", "B.2.6"])
    func theBaseOfEachB2ExampleIsReproducedByteForByte(_ name: String) throws {
        let example = Self.section("B.2", name)
        let entry = try Self.entry(example)
        let message = Self.message(example["message"] as? String == "test-response" ? "response" : "request")
        let base = try SignatureBase.make(entry.parameters, message: message)
        #expect(String(decoding: base, as: UTF8.self) == example["signature_base"] as? String)
        // The fields written again are the fields read.
        let written = try SignatureFields.serialize(label: entry.label, parameters: entry.parameters, signature: try #require(entry.signature))
        #expect(written.input == example["signature_input"] as? String)
        #expect(written.signature == example["signature"] as? String)
    }

    @Test(arguments: [("B.2.5", "test-shared-secret"), ("B.2.6", "test-key-ed25519")])
    func hmacAndEd25519SignTheirExamplesByteForByte(_ name: String, _ keyName: String) throws {
        let example = Self.section("B.2", name)
        let entry = try Self.entry(example)
        let base = try SignatureBase.make(entry.parameters, message: Self.message("request"))
        let key = try Self.key(keyName)
        #expect(try key.signSignatureBase(base) == entry.signature)
        #expect(key.isValidSignature(try #require(entry.signature), forBase: base))
    }

    @Test func theEcdsaResponseSignatureOfB24Verifies() throws {
        let example = Self.section("B.2", "B.2.4")
        let entry = try Self.entry(example)
        let base = try SignatureBase.make(entry.parameters, message: Self.message("response"))
        let key = try Self.key("test-key-ecc-p256")
        #expect(key.isValidSignature(try #require(entry.signature), forBase: base))
        // Our own signature of it verifies too (ECDSA is randomised: never byte for byte).
        #expect(key.isValidSignature(try key.signSignatureBase(base), forBase: base))
        var tampered = base
        tampered[tampered.count / 2] ^= 1
        #expect(!key.isValidSignature(try #require(entry.signature), forBase: tampered))
    }

    @Test func rsaIsRefusedByNameNotGuessed() {
        #expect(SignatureAlgorithm(httpSignatureName: "rsa-pss-sha512") == nil)
        #expect(SignatureAlgorithm(httpSignatureName: "rsa-v1_5-sha256") == nil)
        #expect(SignatureAlgorithm(httpSignatureName: "ecdsa-p384-sha384") == nil)
        #expect(SignatureAlgorithm(httpSignatureName: "ED25519") == nil)
        for algorithm in SignatureAlgorithm.allCases { #expect(SignatureAlgorithm(httpSignatureName: algorithm.httpSignatureName) == algorithm) }
    }

    @Test(arguments: ["B.3", "B.4"])
    func theParametersOfB3AndB4AreWrittenBackAndB3sBaseReproduced(_ name: String) throws {
        let example = Self.section(name)
        let entry = try Self.entry(example)
        let base = try #require(example["signature_base"] as? String)
        // The message each was made over, rebuilt from its own base's lines: every component
        // line's value must be the one our derivation gives for a message with those values.
        #expect(try entry.parameters.serialized() == base.components(separatedBy: "\n").last?.dropFirst("\"@signature-params\": ".count).description)
        if name == "B.3" {
            let signed = example["signed_request"] as? [String: Any] ?? [:]
            var fields = HTTPFields()
            var authority = ""
            for pair in signed["headers"] as? [[String]] ?? [] {
                if pair[0].lowercased() == "host" { authority = pair[1]; continue }
                fields.append(HTTPField(name: HTTPField.Name(pair[0])!, value: pair[1]))
            }
            let message = MessageComponents(request: .init(method: signed["method"] as? String ?? "", scheme: "https", authority: authority,
                                                           target: signed["target"] as? String ?? "", fields: fields))
            #expect(String(decoding: try SignatureBase.make(entry.parameters, message: message), as: UTF8.self) == base)
            let key = try Self.key("test-key-ecc-p256")
            #expect(key.isValidSignature(try #require(entry.signature), forBase: Array(base.utf8)))
        }
    }

    /// B.4: six transformations of one Ed25519-signed request, each valid or not as the RFC says;
    /// and our request coverage refuses even the valid ones (their signature does not cover the
    /// query, which the second one changed).
    @Test func theTransformationsOfB4VerifyAsTheRFCSays() async throws {
        let example = Self.section("B.4")
        let key = try Self.key("test-key-ed25519")
        let verifier = try Verifier(keys: KeySet([try SigningKey.ed25519(publicKey: key.publicKey, id: "test-key-ed25519")]),
                                    replayGuard: InMemoryReplayGuard(capacity: 100), clock: { 1_618_884_473 })
        let messages = example["messages"] as? [[String: Any]] ?? []
        #expect(messages.count == 6)
        for entry in messages {
            let message = try #require(entry["message"] as? [String: Any])
            var fields = HTTPFields()
            var authority = ""
            for pair in message["headers"] as? [[String]] ?? [] {
                if pair[0].lowercased() == "host" { authority = pair[1]; continue }
                fields.append(HTTPField(name: HTTPField.Name(pair[0])!, value: pair[1]))
            }
            let request = HTTPRequest(method: HTTPRequest.Method(message["method"] as? String ?? "")!, scheme: "https", authority: authority,
                                      path: message["target"] as? String, headerFields: fields)
            let parsed = try #require(try SignatureFields(fields).entries.first)
            let base = try SignatureBase.make(parsed.parameters, message: MessageComponents(request: try .init(request, origin: ServerOrigin(scheme: "https"))))
            #expect(key.isValidSignature(try #require(parsed.signature), forBase: base) == (entry["expected_valid"] as? Bool), "\(entry["description"] ?? "")")
            let code = await MessageSignatureVerifierTests.refusal(MessageSignatureVerifier(verifier, policy: HTTPSignaturePolicy(nonce: .optional)), request)
            #expect(code == .headerNotCovered)
        }
    }

    /// §2.1-§2.2's component values, from the messages printed beside them.
    @Test func theComponentValuesOfSection2() throws {
        let examples = Self.appendix["component_examples"] as? [[String: Any]] ?? []
        var checked = 0
        for example in examples {
            let identifier = try #require(example["identifier"] as? String)
            // Trailers are refused (trailersAreRefusedNotRead).
            guard !identifier.hasSuffix(";tr"), let text = example["message"] as? String else { continue }
            // Only origin-form targets reach a verifier (a proxy's absolute form, CONNECT and `*` are refused before).
            if identifier == "\"@request-target\"", !(text.split(separator: " ", maxSplits: 2).dropFirst().first?.hasPrefix("/") ?? false) { continue }
            var fields = HTTPFields()
            let parser = StructuredMessage(text)
            for (name, value) in parser.fields { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            let input = try SignatureFields(HTTPFields([HTTPField(name: SignatureFields.signatureInput, value: "s=(\(identifier))")]))
            let component = try #require(input.entries.first?.parameters.components.first)
            let message: MessageComponents = if let status = parser.status {
                MessageComponents(status: status, fields: fields)
            } else {
                MessageComponents(request: .init(method: parser.method, scheme: identifier == "\"@scheme\"" ? "http" : "https",
                                                 authority: parser.fields.first { $0.0 == "host" }?.1 ?? "", target: parser.target, fields: fields))
            }
            #expect(try message.value(of: component) == example["value"] as? String, "\(identifier)")
            checked += 1
        }
        #expect(checked >= 25)
    }

    @Test func trailersAreRefusedNotRead() throws {
        let input = HTTPFields([HTTPField(name: SignatureFields.signatureInput, value: "s=(\"expires\";tr);created=1")])
        #expect(MessageSignatureVerifierTests.code { try SignatureFields(input) } == .componentInvalid)
    }

    /// RFC 9530's Content-Digest examples whose printed value is the digest of the printed content.
    @Test func rfc9530sDigestsAreComputed() throws {
        var checked = 0
        for vector in Self.digests["vectors"] as? [[String: Any]] ?? [] where vector["matches"] as? Bool == true {
            guard let content = vector["content_utf8"] as? String, let member = vector["published_field_member"] as? String,
                  let algorithm = ContentDigest.Algorithm(rawValue: vector["algorithm"] as? String ?? "") else { continue }
            let digest = ContentDigest.of(Array(content.utf8), algorithms: [algorithm])
            #expect(digest.fieldValue == member)
            let claimed = try ContentDigest.claimed(in: HTTPFields([HTTPField(name: ContentDigest.field, value: member)]))
            #expect(claimed == digest)
            checked += 1
        }
        #expect(checked >= 10)
    }
}

/// An HTTP/1.1 message as RFC 9421 prints it: a start line, then field lines (a folded line joins
/// the one before it with one space, RFC 9112 §5.2), names lower-cased.
struct StructuredMessage {
    var method = "", target = "", status: Int?
    var fields: [(String, String)] = []

    init(_ text: String) {
        var lines = text.components(separatedBy: "\n")
        let start = lines[0].split(separator: " ")
        if start.first?.hasPrefix("HTTP/") == true {
            status = Int(start[1])
            lines.removeFirst()
        } else if start.count == 3, start[2].hasPrefix("HTTP/") {
            method = String(start[0])
            target = String(start[1])
            lines.removeFirst()
        }
        for line in lines {
            if line.isEmpty { break }
            if line.first == " " || line.first == "\t", let last = fields.popLast() {
                fields.append((last.0, last.1 + " " + line.trimmingCharacters(in: .whitespaces)))
            } else if let colon = line.firstIndex(of: ":") {
                fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
        }
    }
}
