import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SignAttest
import SignCore
import SignHTTP

/// The attestation flow on a Hummingbird server (docs/ATTEST.md), after `SignatureMiddleware`:
/// a route whose requirements ask for levels (`RouteRequirements[RouteAttestation.self]`) lets a
/// request through only with a token that meets them, beside a signature by the key the token
/// is bound to; otherwise a 428 with a challenge (`require`), or a log line of what would have
/// been refused (`monitor`). It also answers the attest endpoint, whose requests must always
/// carry a valid signature, whatever the route policy says of its path.
///
/// The token that passed goes into the context (`context.signCore[Attested.self]`).
public struct AttestationMiddleware<Context: SignatureRequestContext>: RouterMiddleware {
    public let gate: AttestationGate
    public let origin: ServerOrigin

    public init(gate: AttestationGate, origin: ServerOrigin) {
        self.gate = gate
        self.origin = origin
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if gate.isEndpoint(request.head) { return try await answerEndpoint(request, context: context) }
        // SignatureMiddleware records the route's decision; without it this middleware is out of
        // place, and fails closed.
        guard let decision = context.signCore.routeDecision else {
            return Response(Refusal(SignCoreError(.invalidConfiguration, "the attestation middleware runs after the signature middleware")))
        }
        let requirement = decision.requirements[RouteAttestation.self]
        guard requirement.mode != .off else { return try await next(request, context) }
        guard let identity = context.signCore.identity else {
            // No verified signature: nothing to bind a token to. A monitor route lets it go on.
            if requirement.mode == .monitor { return try await next(request, context) }
            return Response(Refusal(Self.signatureFailure(of: context), serverTime: Int64(gate.clock() / 1000)))
        }
        let origin: String
        do { origin = try self.origin.attestationOrigin(of: request.head) } catch { return Response(Refusal(error)) }
        switch gate.check(request.head, identity: identity, requirement: requirement, origin: origin) {
        case .pass(let token):
            var context = context
            context.signCore[Attested.self] = token
            return try await next(request, context)
        case .monitored(let error):
            context.logger.info("attestation would have refused", metadata: [
                "signcore.attestation": "monitor", "signcore.code": "\(error.code.rawValue)", "signcore.name": "\(error.code.name)",
                "signcore.route": "\(decision.route)",
            ])
            return try await next(request, context)
        case .refuse(let refusal, let error):
            context.logger.info("attestation refused", metadata: [
                "signcore.attestation": "require", "signcore.code": "\(error.code.rawValue)", "signcore.name": "\(error.code.name)",
                "signcore.route": "\(decision.route)",
            ])
            return Response(refusal)
        }
    }

    private func answerEndpoint(_ request: Request, context: Context) async throws -> Response {
        guard let identity = context.signCore.identity else {
            return Response(Refusal(Self.signatureFailure(of: context), serverTime: Int64(gate.clock() / 1000)))
        }
        do {
            let origin = try self.origin.attestationOrigin(of: request.head)
            // The signature middleware collected the body already (an attest request is small).
            let body = try await request.body.collectStoppingPastLimit(Int64(AttestRequest.maxBytes))
            let (head, bytes) = await gate.respond(to: request.head, body: Array(buffer: body), identity: identity, origin: origin)
            return Response(status: head.status, headers: head.headerFields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
        } catch {
            return Response(Refusal(error, serverTime: Int64(gate.clock() / 1000)))
        }
    }

    /// Why the request has no identity: the signature's own failure (a monitor route's), or no
    /// signature looked at (an `off` route's).
    static func signatureFailure(of context: Context) -> SignCoreError {
        if case .failed(let code) = context.signCore.verdict {
            return SignCoreError(code, "the request's signature did not verify, and attestation needs it")
        }
        return SignCoreError(.missingHeader, "attestation needs a signed request, and this route's signature was not checked")
    }
}

/// The attestation token that met the route's levels (`context.signCore[Attested.self]`).
public enum Attested: SignCoreContextKey {
    public typealias Value = AttestationToken
}
