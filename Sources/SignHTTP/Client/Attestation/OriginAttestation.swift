import HTTPTypes
@_spi(SignCoreTools) import SignCore
import SignAttest

/// What a client keeps of attestation for one origin (docs/ATTEST.md §4.4): its token, timed by
/// the client's monotonic clock from the TTL the server gave (so a wrong wall clock does not
/// matter), whether the origin has asked for attestation and for which levels, and the one
/// attestation in flight that concurrent requests share.
///
/// The request that starts an attestation runs it itself, in its own task (so the transport of
/// that request is never used after it returns, and cancelling it stops the solve); requests
/// that meet a 428 meanwhile wait for its token, each stopping its wait when it is cancelled.
/// A token that does not hold the levels a waiter needs sends that waiter on to attest itself.
final class OriginAttestation: Sendable {
    struct Token: Sendable {
        let text: String
        let levels: AttestationLevels
        let expires: ContinuousClock.Instant
        let renewAt: ContinuousClock.Instant

        var isValid: Bool { ContinuousClock.now < expires }
        var isDue: Bool { ContinuousClock.now >= renewAt }
    }

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Token?, any Error>
    }

    private struct State {
        var token: Token?
        var inFlight = false
        var waiters: [Waiter] = []
        var nextWaiter = 0
        var renewing = false
        /// A failed renewal is not tried again before this.
        var renewAfter: ContinuousClock.Instant?
        var required = false
        var levels: AttestationLevels = []
    }

    private let state = Locked(State())
    let origin: OriginState

    private init(origin: OriginState) { self.origin = origin }

    private enum Key: OriginStateKey { typealias Value = OriginAttestation }

    /// The origin's attestation state, made on first use.
    static func of(_ origin: OriginState) -> OriginAttestation {
        origin.update(Key.self) { value in
            if let value { return value }
            let made = OriginAttestation(origin: origin)
            value = made
            return made
        }
    }

    func currentToken() -> Token? { state.withLock { $0.token.flatMap { $0.isValid ? $0 : nil } } }

    var isRequired: Bool { state.withLock { $0.required } }
    var lastLevels: AttestationLevels { state.withLock { $0.levels } }

    func noteRequired(_ levels: AttestationLevels) {
        state.withLock { $0.required = true; $0.levels.formUnion(levels) }
    }

    /// Forgets the token `text` (refused as expired or invalid), unless a newer one replaced it.
    func drop(_ text: String?) {
        state.withLock { state in if state.token?.text == text { state.token = nil } }
    }

    /// A token holding `needs`: the one an attestation in flight brings, when it holds them, or a
    /// new attestation's: `challenge` (or one asked for) solved and redeemed, carrying
    /// `carrying` (or, with `carryHeld`, the token held), then further challenges until the
    /// token holds `wanting`. A renewal carries nothing: a carried token would bound the new
    /// one's expiry by its own (§4.5).
    func obtain(_ policy: AttestationPolicy, challenge: Challenge?, carrying: String?, carryHeld: Bool = false, wanting: AttestationLevels,
                needs: AttestationLevels, client: SigningClient, via transport: any DirectTransport) async throws(SignCoreError) -> Token {
        while true {
            let leads = state.withLock { state -> Bool in
                guard !state.inFlight else { return false }
                state.inFlight = true
                return true
            }
            if leads {
                // A 428's attestation carries the token held (valid, this key's), so that levels
                // proven for another route are kept beside the new ones (§4.5), never dropped.
                return try await lead(policy, challenge: challenge, carrying: carrying ?? (carryHeld ? currentToken()?.text : nil),
                                      wanting: wanting, client: client, via: transport)
            }
            // Another request's attestation: its token, when it holds what this request needs.
            if let token = try await follow(), token.levels.meets(needs) { return token }
            if Task.isCancelled { throw SignCoreError(.challengeAbandoned, "the attestation was cancelled") }
        }
    }

    /// Runs the attestation in this task, then hands its outcome to every waiter.
    private func lead(_ policy: AttestationPolicy, challenge: Challenge?, carrying: String?, wanting: AttestationLevels,
                      client: SigningClient, via transport: any DirectTransport) async throws(SignCoreError) -> Token {
        let outcome: Result<Token, SignCoreError>
        do {
            let token = try await AttestExchange(policy: policy, client: client, origin: origin, transport: transport)
                .obtain(challenge: challenge, carrying: carrying, wanting: wanting)
            outcome = .success(token)
        } catch {
            outcome = .failure(error)
        }
        let waiters = state.withLock { state -> [Waiter] in
            if case .success(let token) = outcome {
                // Never a token with fewer levels in place of one still valid.
                if !(state.token.map { $0.isValid && !token.levels.isSuperset(of: $0.levels) } ?? false) { state.token = token }
            }
            state.inFlight = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters {
            switch outcome {
            case .success(let token): waiter.continuation.resume(returning: token)
            // The leader's request was cancelled: the others go on by themselves.
            case .failure where Task.isCancelled: waiter.continuation.resume(returning: nil)
            // Any other failure is theirs too: no request repeats an attestation that just failed.
            case .failure(let error): waiter.continuation.resume(throwing: error)
            }
        }
        return try outcome.get()
    }

    /// Waits for the attestation in flight: its token, its error, or nil when its leader was
    /// cancelled or it had finished already. A cancelled waiter stops waiting at once.
    private func follow() async throws(SignCoreError) -> Token? {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Token?, any Error>) in
                    let waiting = state.withLock { state -> Bool in
                        guard state.inFlight, !Task.isCancelled else { return false }
                        state.waiters.append(Waiter(id: id, continuation: continuation))
                        return true
                    }
                    if !waiting { continuation.resume(returning: nil) }
                }
            } onCancel: { [self] in
                let waiter = state.withLock { state -> Waiter? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                waiter?.continuation.resume(throwing: CancellationError())
            }
        } catch let error as SignCoreError {
            throw error
        } catch {
            throw SignCoreError(.challengeAbandoned, "the attestation was cancelled")
        }
    }

    /// Renews `token` in the background for the same levels, through a transport that outlives
    /// the request that noticed it was due: one renewal at a time, and after one fails, none
    /// again before half the token's remaining time (at most 30 s) has passed. The token stays
    /// in place until a renewal replaces it or it expires.
    func renewInBackground(_ token: Token, _ policy: AttestationPolicy, client: SigningClient, via transport: any DirectTransport) {
        let start = state.withLock { state -> Bool in
            guard !state.renewing, !state.inFlight, state.renewAfter.map({ ContinuousClock.now >= $0 }) ?? true else { return false }
            state.renewing = true
            return true
        }
        guard start else { return }
        Task.detached(priority: .utility) { [self] in
            let renewed = (try? await obtain(policy, challenge: nil, carrying: nil, wanting: token.levels, needs: token.levels,
                                             client: client, via: transport)) != nil
            state.withLock { state in
                state.renewing = false
                let wait = min(Duration.seconds(30), (ContinuousClock.now.duration(to: token.expires)) / 2)
                state.renewAfter = renewed ? nil : ContinuousClock.now + max(.seconds(1), wait)
            }
        }
    }
}
