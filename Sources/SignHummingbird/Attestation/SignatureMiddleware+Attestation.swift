import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SignAttest
import SignCore
import SignHTTP

/// The attestation flow inside `SignatureMiddleware` (docs/ATTEST.md): a route's token checked
/// right after the signature it is bound to, and before that signature's nonce is recorded, so
/// that a request answered with a 428 writes nothing to any store; and the attest endpoint,
/// whose requests are always verified. In the signature middleware itself, so that no order of
/// middlewares can let a request through with its nonce unrecorded or its token unchecked.
extension SignatureMiddleware {
    /// Checks the token for `requirement` (docs/ATTEST.md §5.5), which writes nothing: the
    /// refusal (a 428 with a challenge, say), or nil when the request goes on (its token in the
    /// context when it passed; logged when a monitor route's would have been refused).
    func checkToken(_ request: Request, gate: AttestationGate, identity: VerifiedIdentity, requirement: AttestationRequirement,
                    route: String, context: inout Context) -> Response? {
        let origin: String
        do { origin = try self.origin.attestationOrigin(of: request.head) } catch { return Self.response(for: error) }
        switch gate.check(request.head, identity: identity, requirement: requirement, origin: origin) {
        case .pass(let token):
            context.signCore[Attested.self] = token
        case .monitored(let error):
            Self.log("attestation would have refused", error, mode: "monitor", route: route, logger: context.logger)
        case .refuse(let refusal, let error):
            Self.log("attestation refused", error, mode: "require", route: route, logger: context.logger)
            return Response(refusal)
        }
        return nil
    }

    /// Answers the attest endpoint (docs/ATTEST.md §4) for a verified request; its body was
    /// collected by the signature check (4 KiB at most).
    func answer(_ request: Request, gate: AttestationGate, identity: VerifiedIdentity) async -> Response {
        do {
            let origin = try self.origin.attestationOrigin(of: request.head)
            let body = try await request.body.collectStoppingPastLimit(Int64(AttestRequest.maxBytes))
            let (head, bytes) = await gate.respond(to: request.head, body: Array(buffer: body), identity: identity, origin: origin)
            return Response(status: head.status, headers: head.headerFields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
        } catch {
            return Self.response(for: error)
        }
    }

    /// Answers the device endpoint (docs/ATTEST.md §9.2): a registration challenge, or a
    /// registration (16 KiB at most), verified under the key it registers when its format signs.
    func answerDevice(_ request: Request, gate: AttestationGate, route: AttestationGate.DeviceRoute, context: Context) async -> Response {
        let head: HTTPResponse, bytes: [UInt8]
        do {
            let origin = try self.origin.attestationOrigin(of: request.head)
            switch route {
            case .challenge:
                (head, bytes) = gate.registrationChallenge(for: request.head, origin: origin)
            case .payload:
                (head, bytes) = gate.assertionPayload(for: request.head, origin: origin)
            case .assertion:
                let body = try await request.body.collectStoppingPastLimit(Int64(AttestRequest.maxBytes))
                (head, bytes) = await gate.verifyAssertion(request.head, body: Array(buffer: body), origin: origin)
            case .registration:
                let body = try await request.body.collectStoppingPastLimit(Int64(DeviceRegistration.maxBytes))
                let requestHead = request.head, verifier = self.verifier
                let digested: Result<Verification.Digest.Value, SignCoreError> = body.withUnsafeReadableBytes { bytes in
                    Result { () throws(SignCoreError) in try verifier.digest(ofBody: bytes, for: requestHead) }
                }
                let digest = try digested.get()
                let signedFor = self.origin
                (head, bytes) = await gate.register(request.head, body: Array(buffer: body), origin: origin) { key async throws(SignCoreError) in
                    try await verifier.verify(request.head, bodyDigest: digest, origin: signedFor, offeredKey: key)
                }
                context.logger.info(head.status.code < 300 ? "device registered" : "device registration refused", metadata: [
                    "signcore.status": "\(head.status.code)", "signcore.code": "\(head.headerFields[Refusal.errorField] ?? "-")",
                ])
            }
        } catch {
            return Self.response(for: error)
        }
        return Response(status: head.status, headers: head.headerFields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func log(_ message: Logger.Message, _ error: SignCoreError, mode: String, route: String, logger: Logger) {
        logger.info(message, metadata: [
            "signcore.attestation": "\(mode)", "signcore.code": "\(error.code.rawValue)", "signcore.name": "\(error.code.name)",
            "signcore.route": "\(route)",
        ])
    }
}

/// The attestation token that met the route's levels (`context.signCore[Attested.self]`).
public enum Attested: SignCoreContextKey {
    public typealias Value = AttestationToken
}
