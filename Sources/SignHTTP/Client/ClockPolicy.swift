import HTTPTypes
import SignCore

/// Heals the client's clock from the server's (docs/ATTEST.md §7): a SignCore refusal that
/// carries the server's time (a 428, a 429, `expired`, `notYetValid`) sets the client's clock
/// offset when the two differ by more than a second and less than a day; an `expired` or
/// `notYetValid` refusal is then answered once by signing the request again with the healed
/// clock. A client whose clock is minutes off gets through after one round trip, its tokens
/// then within about a second (and a network delay) of the server's clock.
public struct ClockPolicy: ExchangePolicy {
    public init() {}

    /// Notes the offset this attempt is signed with, to tell after the refusal whether the clock
    /// has been healed since (by this response, or by another request's).
    public func prepare(_ request: inout HTTPRequest, _ context: ExchangeContext) async throws(SignCoreError) {
        context.values[SignedWith.self] = context.client.clockOffset(for: context.origin)
    }

    public func decide(_ exchange: Exchange) async -> ExchangeDecision {
        guard let refusal = ReceivedRefusal(exchange.response), let serverTime = refusal.serverTime else { return .deliver }
        exchange.client.heal(serverTime: serverTime, origin: exchange.origin)
        // The signature was refused before anything was acted on: signing it again is safe, once,
        // when the clock it will be signed with differs from the one that was refused.
        guard refusal.code == .expired || refusal.code == .notYetValid,
              exchange.client.clockOffset(for: exchange.origin) != exchange.context.values[SignedWith.self],
              exchange.context.values.update(Healed.self, { healed in defer { healed = true }; return healed != true })
        else { return .deliver }
        return .retry(after: .zero)
    }

    private enum SignedWith: OriginStateKey { typealias Value = Int64 }
    private enum Healed: OriginStateKey { typealias Value = Bool }
}
