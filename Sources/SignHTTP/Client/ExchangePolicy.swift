import HTTPTypes
import SignCore

/// One step of a signed exchange, decided after each response: hand it over, send the request
/// again (signed afresh) with fields added, or fail. The client asks its policies in order; the
/// first that does not answer `deliver` decides. `RetryPolicy` (a 503 after a short
/// `Retry-After`, SPEC §7.1) is the first; the challenge, device and rate-limit flows add theirs.
public protocol ExchangePolicy: Sendable {
    /// How many bytes of this response's body the policy reads before it decides (a challenge
    /// in a 428's body, say); 0, the default, for none. The client reads the largest asked for
    /// and still delivers the whole body.
    func bodyLimit(for response: HTTPResponse) -> Int

    /// What to do after `exchange`'s response.
    func decide(_ exchange: Exchange) async -> ExchangeDecision

    /// Before each attempt is signed: sets what the policy keeps for every request of the origin
    /// (a token), or does first what would otherwise refuse the request (attest before a large
    /// upload). The default does nothing. A thrown error ends the exchange.
    func prepare(_ request: inout HTTPRequest, _ context: ExchangeContext) async throws(SignCoreError)
}

extension ExchangePolicy {
    public func bodyLimit(for response: HTTPResponse) -> Int { 0 }
    public func prepare(_ request: inout HTTPRequest, _ context: ExchangeContext) async throws(SignCoreError) {}
}

/// What the policies share about one call of `SigningClient.send`, from its first attempt to
/// its last.
public struct ExchangeContext: Sendable {
    /// What the client keeps for the request's origin.
    public let origin: OriginState
    /// The client, for its signer and clock.
    public let client: SigningClient
    /// The body's length, when the caller knows it.
    public let bodyLength: Int64?
    /// The policies' own requests during this call, and after it when the library allows.
    public let direct: any DirectTransport
    public let detached: (any DirectTransport)?
    /// Values a policy keeps for this call only (how many challenges it has answered, say).
    public let values: StateValues
}

/// What a policy decides after a response.
public enum ExchangeDecision: Sendable {
    /// Not this policy's business: the next one decides, and after the last the response is
    /// the caller's.
    case deliver
    /// Drop the response and send the request again after `delay`, signed afresh, with each
    /// field of `setting` set on that attempt only (replacing the request's fields of its name):
    /// a single-use answer is never sent twice, and a policy that keeps a value for every
    /// request of an origin sets it again from `OriginState`. The client's `maxAttempts` bounds
    /// the attempts whatever the policies say.
    case retry(after: Duration, setting: HTTPFields = HTTPFields())
    /// Drop the response and throw this error.
    case fail(SignCoreError)
}

/// A response as the policies see it, with the request that was sent and the client's state.
public struct Exchange: Sendable {
    /// The request as it was signed and sent (whash and wtoken included).
    public let request: HTTPRequest
    public let response: HTTPResponse
    /// The start of the response body, as many bytes as the policies asked for; empty when
    /// none asked.
    public let body: [UInt8]
    /// Whether `body` is the whole body (false when it was cut at the limit, or not read).
    public let bodyIsComplete: Bool
    /// 1 for the first attempt.
    public let attempt: Int
    /// What the client keeps for the request's origin (a token, a challenge's state).
    public var origin: OriginState { context.origin }
    /// The client, for its clock offset.
    public var client: SigningClient { context.client }
    /// The call this attempt belongs to.
    public let context: ExchangeContext
}
