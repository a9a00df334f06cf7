import HTTPTypes
import SignAttest
import SignCore

/// The client half of the attestation flow (docs/ATTEST.md), built into every client: a
/// SignCore 428 that carries a challenge is answered by solving it in the background, redeeming
/// it at the attest endpoint and sending the request again, signed afresh, with the token; the
/// token is kept per origin (a `SigningClient` is one key) and sent beside every later request,
/// renewed in the background at `renewal` of its TTL. Concurrent requests share one attestation
/// in flight. A request follows at most `maxChallenges` 428s, each kind and level set once. Only
/// SignCore's own 428s are answered: an application's 428 (a missing `If-Match`, RFC 6585)
/// has no `signcore-error` field and no challenge, and is returned untouched.
///
/// Make the client with `SigningClient(signer:attestation:)`: its signer then covers the token's
/// field (signed as absent until there is a token), so a token cannot be moved onto another
/// request.
public struct AttestationPolicy: ExchangePolicy {
    public var names: AttestationFieldNames
    /// The attest endpoint's path on the origin.
    public var endpoint: String
    /// Solves proofs of work: its workers (cores) and time limit.
    public var solver: ProofOfWorkSolver
    /// 428s answered for one request.
    public var maxChallenges: Int
    /// The share of a token's TTL after which it is renewed in the background (0.5-0.95).
    public var renewal: Double
    /// A body longer than this is sent only with a token, once the origin is known to ask for
    /// one: attesting first costs a round trip, losing the upload to a 428 costs the upload.
    public var attestBeforeUploadsOver: Int64
    /// The longest `Retry-After` of a challenge redeemed too early that is waited for.
    public var maxWait: Duration

    public init(names: AttestationFieldNames = .standard, endpoint: String = AttestationGate.defaultEndpoint,
                solver: ProofOfWorkSolver = ProofOfWorkSolver(), maxChallenges: Int = 3, renewal: Double = 0.8,
                attestBeforeUploadsOver: Int64 = 1 << 20, maxWait: Duration = .seconds(10)) {
        self.names = names
        self.endpoint = endpoint
        self.solver = solver
        self.maxChallenges = max(1, maxChallenges)
        self.renewal = min(0.95, max(0.5, renewal))
        self.attestBeforeUploadsOver = attestBeforeUploadsOver
        self.maxWait = maxWait
    }

    /// The codes and advice of the flow, for reading refusals (SPEC §7.2).
    static let knownCodes = SignCoreError.Code.attestationCodes + SignCoreError.Code.deviceCodes

    public func prepare(_ request: inout HTTPRequest, _ context: ExchangeContext) async throws(SignCoreError) {
        let attestation = OriginAttestation.of(context.origin)
        if let token = attestation.currentToken() {
            request.headerFields[names.token] = token.text
            // Without a transport that outlives this request (an OpenAPI middleware given no
            // `detached`), the token is renewed by the 428 that meets it at its expiry.
            if token.isDue, let detached = context.detached {
                attestation.renewInBackground(token, self, client: context.client, via: detached)
            }
        } else if attestation.isRequired, let length = context.bodyLength, length > attestBeforeUploadsOver,
                  context.values[AttestedFirst.self] == nil {
            context.values[AttestedFirst.self] = true
            // Attest first rather than lose the upload to a 428; if that fails, the request goes
            // without a token and the server decides.
            let levels = attestation.lastLevels
            if let token = try? await attestation.obtain(self, challenge: nil, carrying: nil, wanting: levels, needs: levels,
                                                         client: context.client, via: context.direct) {
                request.headerFields[names.token] = token.text
            }
        }
    }

    public func decide(_ exchange: Exchange) async -> ExchangeDecision {
        guard exchange.response.status == .preconditionRequired,
              let refusal = ReceivedRefusal(exchange.response, knownCodes: Self.knownCodes, knownAdvice: [.attest]),
              refusal.advice == .attest, let field = exchange.response.headerFields[names.challenge],
              let challenge = try? Challenge(parsing: field),
              challenge.isIssued(to: exchange.client.signer.key, at: exchange.origin) else { return .deliver }
        let attestation = OriginAttestation.of(exchange.origin)
        attestation.noteRequired(challenge.levels)
        let sent = exchange.request.headerFields[names.token]
        if refusal.code == .attestationExpired || refusal.code == .attestationInvalid { attestation.drop(sent) }
        // Another request's attestation may have finished since this one was sent: its token is
        // tried first, unless this refusal was for too few levels and it holds no more of them.
        if let current = attestation.currentToken(), current.text != sent,
           refusal.code != .attestationInsufficient || current.levels.meets(challenge.levels) {
            return .retry(after: .zero)
        }
        // At most maxChallenges 428s for this request, each kind and level set once.
        let seen = "\(challenge.kind.rawValue)/\(challenge.levels.rawValue)"
        let answered = exchange.context.values.update(AnsweredChallenges.self) { answered -> Bool in
            var set = answered ?? []
            defer { answered = set }
            guard set.count < maxChallenges, !set.contains(seen) else { return false }
            set.insert(seen)
            return true
        }
        guard answered else { return .deliver }
        do {
            // A genuine token short of the route's levels is carried over into the next (§4.5).
            _ = try await attestation.obtain(self, challenge: challenge, carrying: refusal.code == .attestationInsufficient ? sent : nil,
                                             carryHeld: true, wanting: [], needs: challenge.levels, client: exchange.client,
                                             via: exchange.context.direct)
        } catch {
            return .fail(error)
        }
        return .retry(after: .zero)
    }

    private enum AnsweredChallenges: OriginStateKey { typealias Value = Set<String> }
    private enum AttestedFirst: OriginStateKey { typealias Value = Bool }
}

extension SigningClient {
    /// A client whose requests answer SignCore's 428s (`attestation`) after the default
    /// policies, its signer covering the token's field. Refuses what `Signer` refuses of the
    /// covered names (a 17th name, tokens longer than 1024 bytes).
    public convenience init(signer: Signer, attestation: AttestationPolicy, names: SignHeaderNames = .standard,
                            maxAttempts: Int = 8) throws(SignCoreError) {
        self.init(signer: try signer.covering([attestation.names.token.canonicalName]), names: names,
                  policies: [RetryPolicy(), ClockPolicy(), attestation], maxAttempts: maxAttempts)
    }

    /// Attests at `origin` (`https://host[:port]`) before any request needs it (at start-up),
    /// for `levels` (by default the server's first challenge), through `transport`: asks the
    /// attest endpoint for a challenge, solves and redeems it, and keeps the token for the
    /// origin's requests. Returns the token's levels.
    @discardableResult
    public func attest(at origin: String, levels: AttestationLevels = [], through transport: any DirectTransport)
        async throws(SignCoreError) -> AttestationLevels {
        guard let policy = policies.lazy.compactMap({ $0 as? AttestationPolicy }).first else {
            throw SignCoreError(.invalidConfiguration, "the client has no attestation policy")
        }
        let request = try HTTPRequest(method: .get, urlString: origin + policy.endpoint)
        let state = try originState(for: request)
        return try await OriginAttestation.of(state).obtain(policy, challenge: nil, carrying: nil, wanting: levels, needs: levels,
                                                            client: self, via: transport).levels
    }
}
