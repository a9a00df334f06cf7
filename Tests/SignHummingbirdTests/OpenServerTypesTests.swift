import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SignCore
import SignHTTP
import SignHummingbird
import Testing

/// A flow written outside SignCore and SignHTTP, on a real server on loopback: its own proof
/// format (`RequestVerifier`, with a body digest of its own), its own refusal code, a route
/// requirement and a fact in the request context. This is the shape the challenge, device and
/// RFC 9421 flows take.
@Suite struct OpenServerTypesTests {
    static let key = try! SigningKey.generate(.ed25519, id: "device-7")
    static let proofField = HTTPField.Name("x-proof")!
    static let proofMissing = SignCoreError.Code(901, "proofMissing", advice: .reSign, status: 401)

    /// A body digest of the flow's own (here the whash's bytes, with a limit counted by itself).
    struct PrefixedDigest: BodyDigest {
        var hasher = WHash.BodyHasher()
        let limit: UInt64
        var count: UInt64 = 0
        init(limit: UInt64) { self.limit = limit }
        mutating func append(_ chunk: UnsafeRawBufferPointer) throws(SignCoreError) {
            count += UInt64(chunk.count)
            guard count <= limit else { throw SignCoreError(.bodyTooLarge, "over the limit") }
            try hasher.append(chunk)
        }
        consuming func finalize() -> SHA256Digest { hasher.finalize() }
        var mismatch: SignCoreError { SignCoreError(.whashMismatch, "the body is not the one proven") }
    }

    /// The proof: an Ed25519 message signature (SPEC §10) over the method, the path and the
    /// body's digest, in `x-proof`.
    struct ProofVerifier: RequestVerifier {
        typealias Digest = PrefixedDigest
        var allowsUnsignedBody: Bool { false }
        func protectedFields(of request: HTTPRequest) -> Set<String> { [OpenServerTypesTests.proofField.canonicalName] }
        func claimedDigest(of request: HTTPRequest) throws(SignCoreError) -> SHA256Digest {
            throw SignCoreError(OpenServerTypesTests.proofMissing, "streamed bodies are not proven by this format")
        }
        static func message(_ method: String, _ path: String, _ digest: SHA256Digest) -> [UInt8] {
            Array("\(method) \(path) \(digest)".utf8)
        }
        nonisolated(nonsending) func verify(_ request: HTTPRequest, bodyDigest: SHA256Digest, origin: ServerOrigin)
            async throws(SignCoreError) -> VerifiedIdentity {
            guard let proof = request.headerFields[OpenServerTypesTests.proofField],
                  let signature = Array(proof.utf8).withUnsafeBytes({ Base64URL.decode($0) }) else {
                throw SignCoreError(OpenServerTypesTests.proofMissing, "the request carries no proof")
            }
            let key = OpenServerTypesTests.key
            try key.publicOnly().verifyMessage(Self.message(request.method.rawValue, request.path ?? "", bodyDigest), signature: signature,
                                               context: "test-proof/1")
            return VerifiedIdentity(format: "test-proof/1", keyID: key.id, algorithm: key.algorithm, account: "device",
                                    created: 0, expires: 0)
        }
    }

    /// A route requirement of the flow's own, and a fact it puts in the context.
    enum Clearance: RouteRequirement {
        static let defaultValue = 0
        static func strictest(_ a: Int, _ b: Int) -> Int { max(a, b) }
    }
    enum DeviceName: SignCoreContextKey { typealias Value = String }

    /// After the signature middleware: refuses a request below the route's clearance with a
    /// refusal of the flow's own (its field and member), and records the device for the handler.
    struct ClearanceMiddleware: RouterMiddleware {
        typealias Context = BasicSignatureRequestContext
        let policy: RoutePolicy
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            var context = context
            let needed = policy.decision(method: request.method, path: request.uri.path).requirements[Clearance.self]
            if needed > 1, context.signature?.format != "test-proof/1" {
                var fields = HTTPFields()
                fields[HTTPField.Name("x-clearance")!] = String(needed)
                return Response(try Refusal(SignCoreError(OpenServerTypesTests.proofMissing, "this route needs a device proof"),
                                            fields: fields, members: ["clearance": .integer(needed)]))
            }
            context.signCore[DeviceName.self] = context.signature.map { "\($0.keyID) via \($0.format)" }
            return try await next(request, context)
        }
    }

    @Test func aFlowPlugsInItsVerifierRequirementContextValueAndRefusal() async throws {
        var secret = RouteRequirements(signature: .require)
        secret[Clearance.self] = 2
        let policy = try RoutePolicy([.init("/open/**", .off), .init("/secret/**", secret)])
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware<BasicSignatureRequestContext, ProofVerifier>(
            verifier: ProofVerifier(), origin: ServerOrigin(scheme: "https", authority: "api.example.com"), policy: policy))
        router.add(middleware: ClearanceMiddleware(policy: policy))
        router.on("/secret/report", method: .post) { request, context -> String in
            let bytes = try await request.body.collect(upTo: 1 << 16).readableBytes
            return "\(context.signCore[DeviceName.self] ?? "-") \(bytes)"
        }
        router.get("/open/info") { _, context -> String in context.signCore[DeviceName.self] ?? "anonymous" }

        let body = Array("{\"level\":3}".utf8)
        let digest = WHash.ofBody(body)
        let proof = Base64URL.encode(try Self.key.signMessage(ProofVerifier.message("POST", "/secret/report", digest), context: "test-proof/1"))
        try await Application(router: router).test(.live) { client in
            let proven = try await client.execute(uri: "/secret/report", method: .post, headers: [Self.proofField: proof],
                                                  body: ByteBuffer(bytes: body))
            #expect(proven.status == .ok && String(buffer: proven.body) == "device-7 via test-proof/1 11")

            // Another body under the same proof: refused by the flow's verifier, with SPEC §7.1's form.
            let tampered = try await client.execute(uri: "/secret/report", method: .post, headers: [Self.proofField: proof],
                                                    body: ByteBuffer(string: "{\"level\":9}"))
            #expect(tampered.status == .unauthorized && tampered.headers[Refusal.errorField] == "badSignature;code=12;advice=reSign")
            // No proof: the flow's own code.
            let bare = try await client.execute(uri: "/secret/report", method: .post, headers: [:], body: ByteBuffer(bytes: body))
            #expect(bare.status == .unauthorized && bare.headers[Refusal.errorField] == "proofMissing;code=901;advice=reSign")
            let open = try await client.execute(uri: "/open/info", method: .get, headers: [:])
            #expect(open.status == .ok && String(buffer: open.body) == "anonymous")
        }
    }

    @Test func theRouteRequirementRefusesWithTheFlowsFieldAndMember() async throws {
        var secret = RouteRequirements(signature: .off)
        secret[Clearance.self] = 2
        let policy = try RoutePolicy([.init("/secret/**", secret)], fallback: .off)
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: ClearanceMiddleware(policy: policy))
        router.get("/secret/x") { _, _ in "never" }
        try await Application(router: router).test(.live) { client in
            let refused = try await client.execute(uri: "/secret/x", method: .get, headers: [:])
            #expect(refused.status == .unauthorized && refused.headers[HTTPField.Name("x-clearance")!] == "2")
            let problem = try JSONSerialization.jsonObject(with: Data(buffer: refused.body)) as? [String: Any]
            #expect(problem?["clearance"] as? Int == 2 && problem?["code"] as? Int == 901 && problem?["name"] as? String == "proofMissing")
        }
    }
}
