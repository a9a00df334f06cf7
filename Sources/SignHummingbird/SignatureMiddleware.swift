import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
@_spi(SignCoreTools) import SignCore
import SignAttest
import SignHTTP

/// Verifies every request's proof before the handler runs, as the route's policy asks: `require`
/// refuses a request that fails with its reason (SPEC §7.1), `monitor` logs the verdict and lets
/// the request through, `off` does nothing. A verified request's identity goes into the context
/// (`context.signCore.identity`, read as `context.signature`). The proof is the whash and wtoken
/// (SPEC §5, `WTokenRequestVerifier`) unless another `RequestVerifier` is given.
///
/// Bodies are buffered up to a limit, or streamed (`BodyHandling`): then the handler reads the
/// body as it arrives while it is hashed, and its last chunk is released only when the digest
/// matches the signed whash; otherwise reading the body fails with `whashMismatch`, so a handler
/// never sees a complete tampered body.
///
/// Audit lines go to the request's logger (verdict, code, key id, account, route pattern; never a
/// token, a body, a URL or a header value); counters per verdict and code and a verify-latency
/// timer go to swift-metrics.
public struct SignatureMiddleware<Context: SignatureRequestContext, Verification: RequestVerifier>: RouterMiddleware {
    public let verifier: Verification
    public let origin: ServerOrigin
    public let policy: RoutePolicy
    /// The body handling of routes whose requirements set none (and of paths read under
    /// several rules, `Decision.ambiguous`).
    public let body: BodyHandling
    /// The attestation flow (docs/ATTEST.md), when routes ask for it: their tokens checked right
    /// after the signature, before its nonce is recorded, and the attest endpoint answered.
    public let attestation: AttestationGate?
    /// The rate limits of routes that set them (`RouteRateLimits`, docs/ATTEST.md §10): counted
    /// by address before the signature is checked, by key or account after it.
    public let rateLimits: RateLimitGate?
    let audit: SignatureAudit

    /// - Parameters:
    ///   - origin: the scheme (and, when fixed, the authority) clients sign for.
    ///   - attestation: the gate of routes that ask for attestation (`RouteAttestation`); a route
    ///     that asks for it without one is refused `invalidConfiguration` (500), never let through.
    ///   - rateLimits: the gate of routes that set rate limits (`RouteRateLimits`); a route that
    ///     sets them without one is refused `invalidConfiguration` (500), never let through.
    ///   - metricsFactory: where counters and the timer go (`MetricsSystem.factory` by default).
    public init(verifier: Verification, origin: ServerOrigin, policy: RoutePolicy = .requireAll, body: BodyHandling = .buffered(),
                attestation: AttestationGate? = nil, rateLimits: RateLimitGate? = nil, metricsFactory: (any MetricsFactory)? = nil) {
        self.verifier = verifier
        self.origin = origin
        self.policy = policy
        self.body = body
        self.attestation = attestation
        self.rateLimits = rateLimits
        self.audit = SignatureAudit(factory: metricsFactory ?? MetricsSystem.factory)
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let decision = context.signCore.routeDecision ?? policy.decision(method: request.method, path: request.uri.path)
        // The attest endpoint always verifies its requests, whatever the policy says of its path.
        let isEndpoint = attestation?.isEndpoint(request.head) ?? false
        let requirement = isEndpoint ? .require : decision.signature
        let route = decision.route
        // The endpoint's own requests are attestation's means, never asked for a token (and so
        // their nonces are recorded as any signed request's).
        let attested = isEndpoint ? .off : decision.requirements[RouteAttestation.self]
        if attested.mode != .off, attestation == nil || requirement == .off {
            // Fail closed: a token cannot be checked without a gate, nor bound without a signature.
            return Self.response(for: SignCoreError(.invalidConfiguration, "a route asks for attestation that this server cannot check"))
        }
        // Rate limits by address count before the signature is checked; without a plausible answer
        // or pass, one that fires refuses at once, before any other work (docs/ATTEST.md §10.2).
        let limits = decision.requirements[RouteRateLimits.self]
        var count = RateLimitGate.Count()
        let address = context.signCore.clientAddress ?? (context as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress
        if !limits.isEmpty {
            guard let gate = rateLimits else {
                return Self.response(for: SignCoreError(.invalidConfiguration, "a route sets rate limits that this server cannot count"))
            }
            gate.countBeforeVerification(limits, address: address, into: &count)
            if count.fired, !gate.admitsAttempt(request.head, count: count, address: address,
                                                origin: { () throws(SignCoreError) in try origin.attestationOrigin(of: request.head) }),
               case .refuse(let refusal) = await decide(request, gate: gate, count: count, identity: nil, address: address, reading: false,
                                                        context: context, route: route) {
                return refusal
            }
        }
        // The device endpoint answers for itself, whatever the policy says of its path: a key
        // registers there before any signature of it can verify (docs/ATTEST.md §9.2). Its
        // route's limits count as an unverified request's (registration metered per client).
        if let gate = attestation, let deviceRoute = gate.deviceRoute(of: request.head) {
            if let limiter = rateLimits, !limits.isEmpty {
                limiter.countAfterVerification(limits, identity: nil, address: address, into: &count)
                if case .refuse(let refusal) = await decide(request, gate: limiter, count: count, identity: nil, address: address, context: context,
                                                            route: route) {
                    return refusal
                }
            }
            return await answerDevice(request, gate: gate, route: deviceRoute, context: context)
        }
        if requirement == .off {
            return try await limited(request, limits: limits, count: count, address: address, context: context, route: route, next: next)
        }
        // The verifier as this route configures it (the formats it reads, their policies).
        let verifier = self.verifier.configured(for: decision.requirements)
        var request = request
        let started = ContinuousClock.now
        var record = DeferredRecord.none
        // The nonce waits for the token, which may still refuse without writing (a 428 writes nothing).
        let deferred = attested.mode != .off
        do {
            try checkConnectionField(of: request, verifier: verifier)
            // A path read under several rules gets no rule's own body handling (its requirements have none).
            let body = isEndpoint ? .buffered(limit: Int64(AttestRequest.maxBytes)) : decision.requirements.body ?? self.body
            let tokenVerified: VerifiedFlag? = if case .streamed = body { VerifiedFlag() } else { nil }
            let (bodyDigest, streamed) = try await prepareBody(of: &request, verifier: verifier, body: body, context: context,
                                                              requirement: requirement, route: route, verified: tokenVerified)
            let verified: VerifiedIdentity
            if deferred {
                (verified, record) = try await verifier.verifyDeferringRecord(request.head, bodyDigest: bodyDigest, origin: origin)
            } else {
                verified = try await verifier.verify(request.head, bodyDigest: bodyDigest, origin: origin)
            }
            // A registered device key's counter (docs/ATTEST.md §9.5), with its nonce when that is deferred.
            if let gate = attestation, gate.attestor.devices != nil, verifier.isDeviceKey(verified) {
                let head = request.head
                if !deferred {
                    try await gate.observeCounter(head, identity: verified)
                } else {
                    // The nonce first: a replayed request is `replayed`, never taken for a clone's counter.
                    let nonce = record
                    record = DeferredRecord { () async throws(SignCoreError) in
                        try await nonce()
                        try await gate.observeCounter(head, identity: verified)
                    }
                }
            }
            audit.accepted(verified, requirement: requirement, route: route, logger: context.logger, elapsed: ContinuousClock.now - started)
            context.signCore.identity = verified
            context.signCore.verdict = .verified(bodyStreamed: streamed)
            tokenVerified?.set()
        } catch {
            audit.refused(error, requirement: requirement, route: route, logger: context.logger, elapsed: ContinuousClock.now - started)
            context.signCore.verdict = .failed(error.code)
            // A body over the limit is refused even under monitor: part of it is read and gone. A
            // route that requires attestation needs the signature its token is bound to.
            if requirement == .require || error.code == .bodyTooLarge || attested.mode == .require {
                return Self.response(for: error, adding: verifier.refusalFields(for: error, request: request.head))
            }
        }
        // The token (docs/ATTEST.md §5.5), which writes nothing.
        if let attestation, let identity = context.signCore.identity, attested.mode != .off,
           let refusal = checkToken(request, gate: attestation, identity: identity, requirement: attested, route: route, context: &context) {
            return refusal
        }
        // The deferred nonce (and counter), now that the token has passed.
        if deferred, context.signCore.identity != nil {
            do { try await record() } catch {
                // The nonce was spent or could not be stored: the signature's own failure, as `verify` would have thrown it.
                audit.refused(error, requirement: requirement, route: route, logger: context.logger, elapsed: ContinuousClock.now - started)
                context.signCore.identity = nil
                context.signCore[Attested.self] = nil
                context.signCore.verdict = .failed(error.code)
                if requirement == .require || attested.mode == .require { return Self.response(for: error, adding: verifier.refusalFields(for: error, request: request.head)) }
            }
        }
        // The limits by key or account, then an answer or passes (docs/ATTEST.md §10.7); then the
        // attest endpoint or the handler.
        return try await limited(request, limits: limits, count: count, address: address, context: context, route: route) { request, context in
            if isEndpoint, let attestation, let identity = context.signCore.identity { return await answer(request, gate: attestation, identity: identity) }
            return try await next(request, context)
        }
    }

    /// Counts the request against its route's limits keyed by key or account, and decides
    /// (docs/ATTEST.md §10.5): a refusal, or `next` with the limit's fields (and a new pass) on
    /// its response.
    private func limited(_ request: Request, limits: [RateLimit], count: RateLimitGate.Count, address: String?, context: Context, route: String,
                         next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let gate = rateLimits, !limits.isEmpty else { return try await next(request, context) }
        var count = count
        let identity = context.signCore.identity
        gate.countAfterVerification(limits, identity: identity, address: address, into: &count)
        switch await decide(request, gate: gate, count: count, identity: identity, address: address, context: context, route: route) {
        case .refuse(let response):
            return response
        case .pass(let fields):
            var response = try await next(request, context)
            for field in fields { response.headers[field.name] = nil }
            response.headers.append(contentsOf: fields)
            return response
        }
    }

    private enum RateDecision {
        case pass(HTTPFields)
        case refuse(Response)
    }

    /// The gate's decision at the request's origin, its refusals logged (code and route only).
    private func decide(_ request: Request, gate: RateLimitGate, count: RateLimitGate.Count, identity: VerifiedIdentity?, address: String?,
                        reading: Bool = true, context: Context, route: String) async -> RateDecision {
        let serverOrigin = self.origin, head = request.head
        switch await gate.decide(request.head, count: count, identity: identity, address: address, reading: reading,
                                 origin: { () throws(SignCoreError) in try serverOrigin.attestationOrigin(of: head) }) {
        case .pass(let fields):
            return .pass(fields)
        case .refuse(let refusal, let error):
            context.logger.info("rate limit refused", metadata: [
                "signcore.code": "\(error.code.rawValue)", "signcore.name": "\(error.code.name)", "signcore.route": "\(route)",
            ])
            return .refuse(Response(refusal))
        }
    }

    /// RFC 9110 §7.6.1: a proxy removes the fields `Connection` names. A field the signature
    /// covers (or the verifier requires, or the whash and wtoken) never may be: the request
    /// forwarded would not be the one signed. Refused before the token is verified, so its nonce
    /// is not spent on a request that cannot go on.
    private func checkConnectionField(of request: Request, verifier: Verification) throws(SignCoreError) {
        let connection = request.headers[values: .connection]
        guard !connection.isEmpty else { return }
        let listed = Set(connection.flatMap { $0.split(separator: ",") }.map { option in
            String(option.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()).lowercased()
        })
        if !listed.isDisjoint(with: verifier.protectedFields(of: request.head)) {
            throw SignCoreError(.invalidHeader, "the Connection field names a field the signature covers or requires")
        }
    }

    /// Makes the request's body readable again after verification, and returns the digest the
    /// verifier checks: of the collected body (digested in place, not copied) or, for a streamed
    /// body-class request, the one the request claims (its whash header), which the wrapped body
    /// then checks (`streamed` true: the body is still to arrive).
    private func prepareBody(of request: inout Request, verifier: Verification, body: BodyHandling, context: Context,
                             requirement: SignatureRequirement, route: String, verified: VerifiedFlag?)
        async throws(SignCoreError) -> (digest: Verification.Digest.Value, streamed: Bool) {
        let method = try RequestMethod(token: request.method.rawValue)
        // What the request announces decides before a byte of its body is read (SPEC §5 step 2):
        // a GET, HEAD, OPTIONS or DELETE with a body, or a body larger than the limit, is refused
        // unread, so no unauthenticated client makes the server hold its body.
        let announced = request.headers[.contentLength].flatMap(Int64.init)
        let chunked = request.headers[.transferEncoding] != nil
        if method.contentClass == .url, !verifier.allowsUnsignedBody, chunked || (announced ?? 0) > 0 {
            throw SignCoreError(.unexpectedBody, "a GET, HEAD, OPTIONS or DELETE request carries a body, which no signature covers")
        }
        if let announced, announced > body.limit {
            throw SignCoreError(.bodyTooLarge, "the request body is larger than \(body.limit) bytes")
        }
        switch body {
        // Streamed only when the body is large or of unknown length: a small or empty one is
        // collected and compared with the whash before anything of the request goes on.
        case .streamed(let limit) where method.contentClass == .body && (chunked || (announced ?? 0) > BodyHandling.smallBody):
            let claimed = try verifier.claimedDigest(of: request.head)
            let audit = self.audit
            let logger = context.logger
            let digest = try verifier.bodyDigest(for: request.head, limit: UInt64(max(0, limit)))
            let checked = DigestCheckedBody<RequestBody, Verification.Digest>(request.body, expected: claimed, digest: digest,
                                           enforce: { requirement == .require || verified?.isSet == true }) { error in
                audit.refused(error, requirement: requirement, route: route, logger: logger, elapsed: nil)
            }
            request.body = RequestBody(asyncSequence: checked)
            return (claimed, true)
        case .streamed(let limit), .buffered(let limit):
            let collected = try await request.body.collectStoppingPastLimit(limit)
            request.body = RequestBody(buffer: collected)
            let head = request.head
            let digest: Result<Verification.Digest.Value, SignCoreError> = collected.withUnsafeReadableBytes { bytes in
                Result { () throws(SignCoreError) in try verifier.digest(ofBody: bytes, for: head) }
            }
            return (try digest.get(), false)
        }
    }

    /// The refusal as a Hummingbird response (status, fields and problem document of SPEC §7.1).
    public static func response(for error: SignCoreError) -> Response { Response(Refusal(error, serverTime: SystemClock.seconds())) }

    /// The refusal with a verifier's own fields (`RequestVerifier.refusalFields`).
    static func response(for error: SignCoreError, adding fields: HTTPFields) -> Response {
        var response = response(for: error)
        for field in fields where response.headers[field.name] == nil { response.headers.append(field) }
        return response
    }
}

extension SignatureMiddleware where Verification == WTokenRequestVerifier {
    /// The whash and wtoken (SPEC §5) in the fields `names` gives, checked by `verifier`.
    public init(verifier: Verifier, origin: ServerOrigin, policy: RoutePolicy = .requireAll, body: BodyHandling = .buffered(),
                names: SignHeaderNames = .standard, attestation: AttestationGate? = nil, rateLimits: RateLimitGate? = nil,
                metricsFactory: (any MetricsFactory)? = nil) {
        self.init(verifier: WTokenRequestVerifier(verifier, names: names), origin: origin, policy: policy, body: body,
                  attestation: attestation, rateLimits: rateLimits, metricsFactory: metricsFactory)
    }
}

extension Response {
    /// A refusal's status, header fields and problem document (SPEC §7.1).
    public init(_ refusal: Refusal) {
        self.init(status: refusal.response.status, headers: refusal.response.headerFields,
                  body: ResponseBody(byteBuffer: ByteBuffer(bytes: refusal.body)))
    }
}

/// A SignCore error thrown by a handler (a streamed body that failed its whash while the handler
/// read it) becomes its refusal, not a bare 500.
extension SignCoreError: HTTPResponseError {
    public var status: HTTPResponse.Status { Refusal.status(for: code) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(Refusal(self, serverTime: SystemClock.seconds()))
    }
}

/// Set once a request's token has verified: from then on its streamed body is held to the
/// signed whash, whatever the route's requirement.
final class VerifiedFlag: Sendable {
    private let value = Locked(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
