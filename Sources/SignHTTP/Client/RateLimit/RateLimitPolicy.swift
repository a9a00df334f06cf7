import HTTPTypes
import SignAttest
@_spi(SignCoreTools) import SignCore

/// The client half of rate limits (docs/ATTEST.md §10), built into every client: a SignCore 429
/// that offers a way past the limit that this client can give is answered once, and the request
/// sent again, signed afresh, with the answer (its fields covered by the signature); the pass the
/// server then gives is kept per origin and sent with every later request while it lasts. The
/// ways, in the client's order: the install's registered key (`SIGNCORE_DEVICE_KEY`, with a
/// `DeviceKeyPolicy`), App Attest through the app's `PlatformAsserter` (`APPLE_DEVICE_CHECK`),
/// Play Integrity through a `PlayIntegrityProvider`, and proof of work (`SIGNCORE_POW`). An answer
/// the client cannot give (a solver that gives up) or that the server rejects as a device's
/// (`bypassDeviceRejected`) moves on to the next type the 429 offered, each type once. A 429
/// without SignCore's `signcore-error` and an offer, or one met again after answering, is
/// returned untouched.
public struct RateLimitPolicy: ExchangePolicy {
    public var names: BypassFieldNames
    /// The types this client gives, in the order it prefers them.
    public var types: [BypassType]
    public var solver: ProofOfWorkSolver
    /// App Attest's assertions (`DCAppAttestService.generateAssertion`), when the app has a key.
    public var asserter: (any PlatformAsserter)?
    /// Play Integrity's verdicts (`IntegrityManager.requestIntegrityToken`), on Android.
    public var integrity: (any PlayIntegrityProvider)?

    public init(names: BypassFieldNames = .standard, types: [BypassType] = BypassType.all,
                solver: ProofOfWorkSolver = ProofOfWorkSolver(timeLimit: .seconds(10)), asserter: (any PlatformAsserter)? = nil,
                integrity: (any PlayIntegrityProvider)? = nil) {
        self.names = names
        self.types = types
        self.solver = solver
        self.asserter = asserter
        self.integrity = integrity
    }

    static let knownCodes = SignCoreError.Code.rateLimitCodes

    public func prepare(_ request: inout HTTPRequest, _ context: ExchangeContext) async throws(SignCoreError) {
        let passes = OriginPasses.current(context.origin)
        if !passes.isEmpty { request.headerFields[RateLimitGate.passField] = passes.joined(separator: ", ") }
    }

    public func decide(_ exchange: Exchange) async -> ExchangeDecision {
        if let pass = exchange.response.headerFields[RateLimitGate.passField] { OriginPasses.keep(pass, at: exchange.origin) }
        guard let refusal = ReceivedRefusal(exchange.response, knownCodes: Self.knownCodes, knownAdvice: [.bypass]) else { return .deliver }
        let key = exchange.client.signer.key
        let offers: [RateLimitOffer]
        if exchange.response.status == .tooManyRequests, refusal.advice == .bypass {
            offers = RateLimitOffer.offers(in: exchange.response).filter { $0.isMade(to: key.thumbprint.bytes, at: exchange.origin) }
            exchange.context.values[Offered.self] = offers
        } else if refusal.code == .bypassDeviceRejected || refusal.code == .bypassNotOffered {
            // The server refused this device's answer: the same 429's other offers, once each.
            offers = exchange.context.values[Offered.self] ?? []
        } else {
            return .deliver
        }
        var tried = exchange.context.values[Tried.self] ?? []
        if refusal.code == .bypassExpired, exchange.context.values[Renewed.self] == nil {
            // The answer came too late: fresh offers, answered once more.
            exchange.context.values[Renewed.self] = true
            tried = []
        }
        // A 429 met again after an answer is the caller's.
        guard exchange.response.status != .tooManyRequests || tried.isEmpty else { return .deliver }
        for type in types where !tried.contains(type) {
            guard let offer = offers.first(where: { $0.type == type }) else { continue }
            exchange.context.values[Tried.self] = tried.union([type])
            // An answer this client cannot give now (a solver that gave up, a platform that failed): the next type.
            guard let fields = try? await answer(offer, client: exchange.client) else { continue }
            return .retry(after: .zero, setting: fields)
        }
        return .deliver
    }

    /// The fields answering `offer`, or nil when this client cannot give its type.
    func answer(_ offer: RateLimitOffer, client: SigningClient) async throws(SignCoreError) -> HTTPFields? {
        var fields = HTTPFields()
        fields[names.type] = offer.type.rawValue
        fields[names.siteKey] = offer.siteKey
        switch offer.type {
        case .signcoreDeviceKey:
            guard client.devicePolicy != nil else { return nil }
            fields[names.response] = Base64URL.encode(client.signer.key.thumbprint.bytes)
        case .appleDeviceCheck:
            guard let asserter = asserter ?? client.devicePolicy?.asserter else { return nil }
            // Seed 001's snippet: clientDataHash = SHA-256 of the site key's text.
            fields[names.response] = DeviceRegistration.base64(try await asserter.assertion(clientData: Array(offer.siteKey.utf8)))
            fields[names.keyID] = asserter.keyID
        case .androidPlayIntegrity:
            guard let integrity else { return nil }
            fields[names.response] = try await integrity.integrityToken(nonce: offer.siteKey)
        case .signcorePoW:
            fields[names.response] = Base64URL.encode(try await solver.solve(offer.offer))
        default:
            return nil
        }
        return fields
    }

    /// This request's offers, and the types it has answered with.
    private enum Offered: OriginStateKey { typealias Value = [RateLimitOffer] }
    private enum Tried: OriginStateKey { typealias Value = Set<BypassType> }
    private enum Renewed: OriginStateKey { typealias Value = Bool }
}

/// An Android app's Play Integrity verdicts, through the platform's own API (a hook: SignCore does
/// not link Google's library): `IntegrityTokenRequest.builder().setNonce(nonce)`, its token.
public protocol PlayIntegrityProvider: Sendable {
    func integrityToken(nonce: String) async throws(SignCoreError) -> String
}

/// The passes a client holds for an origin (docs/ATTEST.md §10.6): at most 4, one per bucket,
/// each until its TTL has passed by the client's monotonic clock.
enum OriginPasses: OriginStateKey {
    struct Pass: Sendable {
        var text: String
        var scope: [UInt8]
        var until: ContinuousClock.Instant
    }

    typealias Value = [Pass]

    /// Keeps a pass the origin gave (replacing one of the same bucket; the oldest leaves past 4).
    static func keep(_ text: String, at origin: OriginState) {
        guard let pass = try? AttestationToken(parsing: text) else { return }
        let until = ContinuousClock.now + .seconds(pass.ttl)
        origin.update(Self.self) { passes in
            var held = (passes ?? []).filter { $0.scope != pass.originDigest && $0.until > .now }
            held.append(Pass(text: text, scope: pass.originDigest, until: until))
            passes = Array(held.suffix(RatePass.maxPasses))
        }
    }

    /// The passes still valid.
    static func current(_ origin: OriginState) -> [String] {
        origin.update(Self.self) { passes in
            passes = passes?.filter { $0.until > .now }
            return passes?.map(\.text) ?? []
        }
    }
}

extension SigningClient {
    /// A client that answers SignCore's 429s (`rateLimit`), with a registered device key
    /// (`device`) and SignCore's 428s (`attestation`) when given: its signer covers the answer's
    /// fields (and the counter's and the token's).
    public convenience init(signer: Signer, device: DeviceKeyPolicy? = nil, attestation: AttestationPolicy? = nil, rateLimit: RateLimitPolicy,
                            names: SignHeaderNames = .standard, maxAttempts: Int = 8) throws(SignCoreError) {
        let covered = (device.map { [$0.counterField.canonicalName] } ?? []) + (attestation.map { [$0.names.token.canonicalName] } ?? [])
            + rateLimit.names.all.map(\.canonicalName)
        // The rate-limit policy before the attestation one, so that it keeps a pass whatever the response.
        let flows: [any ExchangePolicy] = (device.map { [$0] } ?? []) + [rateLimit] + (attestation.map { [$0] } ?? [])
        self.init(signer: try signer.covering(covered), names: names, policies: [RetryPolicy(), ClockPolicy()] + flows, maxAttempts: maxAttempts)
    }
}
