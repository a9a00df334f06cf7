import HTTPTypes
@_spi(SignCoreTools) import SignCore
import SignAttest

/// What a client keeps of attestation for one origin (docs/ATTEST.md §4.4): its token, timed by
/// the client's monotonic clock from the TTL the server gave (so a wrong wall clock does not
/// matter), whether the origin has asked for attestation and for which levels, and the one
/// attestation in flight that concurrent requests share.
final class OriginAttestation: Sendable {
    struct Token: Sendable {
        let text: String
        let levels: AttestationLevels
        let expires: ContinuousClock.Instant
        let renewAt: ContinuousClock.Instant

        var isValid: Bool { ContinuousClock.now < expires }
        var isDue: Bool { ContinuousClock.now >= renewAt }
    }

    private struct State {
        var token: Token?
        var inFlight: Task<Token, any Error>?
        var waiters = 0
        var renewing = false
        var required = false
        var levels: AttestationLevels = []
        /// Attestations completed, for tests and logs.
        var completed = 0
    }

    private let state = Locked(State())

    private enum Key: OriginStateKey { typealias Value = OriginAttestation }

    /// The origin's attestation state, made on first use.
    static func of(_ origin: OriginState) -> OriginAttestation {
        origin.update(Key.self) { value in
            if let value { return value }
            let made = OriginAttestation()
            value = made
            return made
        }
    }

    func currentToken() -> Token? { state.withLock { $0.token.flatMap { $0.isValid ? $0 : nil } } }

    var isRequired: Bool { state.withLock { $0.required } }
    var lastLevels: AttestationLevels { state.withLock { $0.levels } }
    var completed: Int { state.withLock { $0.completed } }

    func noteRequired(_ levels: AttestationLevels) {
        state.withLock { $0.required = true; $0.levels.formUnion(levels) }
    }

    /// Forgets the token `text` (refused as expired or invalid), unless a newer one replaced it.
    func drop(_ text: String?) {
        state.withLock { state in if state.token?.text == text { state.token = nil } }
    }

    /// A token from the attestation in flight, or from a new one: `challenge` (or one asked
    /// for) solved and redeemed, carrying `carrying`, then further challenges until the token
    /// holds `wanting`. Concurrent callers share one attestation; a caller that is cancelled
    /// stops waiting, and the attestation stops when no caller waits for it.
    func obtain(_ policy: AttestationPolicy, challenge: Challenge?, carrying: String?, wanting: AttestationLevels, client: SigningClient,
                origin: String, via transport: any DirectTransport) async throws(SignCoreError) -> Token {
        let task = state.withLock { current -> Task<Token, any Error> in
            current.waiters += 1
            if let inFlight = current.inFlight { return inFlight }
            let task = Task { [self] in
                defer { state.withLock { $0.inFlight = nil } }
                let token = try await AttestExchange(policy: policy, client: client, origin: origin, transport: transport)
                    .obtain(challenge: challenge, carrying: carrying, wanting: wanting)
                state.withLock { done in
                    done.token = token
                    done.completed += 1
                }
                return token
            }
            current.inFlight = task
            return task
        }
        do {
            let token = try await withTaskCancellationHandler {
                try await task.value
            } onCancel: { [self] in
                state.withLock { state in if state.waiters == 1 { task.cancel() } }
            }
            state.withLock { $0.waiters -= 1 }
            return token
        } catch {
            state.withLock { $0.waiters -= 1 }
            if let error = error as? SignCoreError { throw error }
            throw SignCoreError(.challengeAbandoned, "the attestation was cancelled")
        }
    }

    /// Renews `token` in the background (one renewal at a time), for the same levels, through a
    /// transport that outlives the request that noticed it was due. A failed renewal leaves the
    /// token in place until it expires; the next request due starts another.
    func renewInBackground(_ token: Token, _ policy: AttestationPolicy, client: SigningClient, origin: String,
                           via transport: any DirectTransport) {
        let start = state.withLock { state -> Bool in
            guard !state.renewing, state.inFlight == nil else { return false }
            state.renewing = true
            return true
        }
        guard start else { return }
        Task.detached(priority: .utility) { [self] in
            defer { state.withLock { $0.renewing = false } }
            _ = try? await obtain(policy, challenge: nil, carrying: nil, wanting: token.levels, client: client, origin: origin, via: transport)
        }
    }
}
