import HTTPTypes
@_spi(SignCoreTools) import SignCore

/// The one place where a request is signed, sent and answered (SPEC §4, §7.1), whatever library
/// sends it: the signing key and settings, a clock offset, per-origin state, and the policies
/// that decide after each response. Every attempt is signed afresh (a resent token would be a
/// replay). Make one per key and keep it: the state it learns serves every later request.
///
/// The transports are thin adapters over it: `URLSession.signedData(for:body:client:)`,
/// `HTTPClient.execute(_:body:client:timeout:)` and the OpenAPI `SigningMiddleware`.
public final class SigningClient: Sendable {
    /// The signer every attempt is signed with, reading the client's clock (`clockOffset`).
    public let signer: Signer
    public let names: SignHeaderNames
    /// Asked in order after each response (`ExchangePolicy`).
    public let policies: [any ExchangePolicy]
    /// Attempts in all for one request, whatever the policies decide.
    public let maxAttempts: Int
    /// The most bytes of a response body read for the policies.
    public static let maxBodyLimit = 64 * 1024
    /// The most origins whose state is kept; past it, the state of one of them is dropped.
    public static let maxOrigins = 256

    private let offset: ClockOffset
    /// The signer's own clock, before any offset.
    private let localClock: @Sendable () -> Int64
    /// The signer as given, reading its own clock: each request signs with its origin's offset.
    private let baseSigner: Signer
    private let origins = Locked<[String: OriginState]>([:])

    /// `signer` signs every attempt, reading its own clock plus `clockOffset`; `policies`
    /// decide after each response (by default: retry a 503 as `RetryPolicy()` says, and heal
    /// the clock from a refusal's server time as `ClockPolicy()` does).
    public init(signer: Signer, names: SignHeaderNames = .standard, policies: [any ExchangePolicy] = [RetryPolicy(), ClockPolicy()],
                maxAttempts: Int = 8) {
        let offset = ClockOffset()
        let clock = signer.clock
        self.signer = signer.withClock { clock() &+ offset.seconds }
        self.offset = offset
        localClock = clock
        baseSigner = signer
        self.names = names
        self.policies = policies
        self.maxAttempts = max(1, maxAttempts)
    }

    /// Seconds added to the signer's clock for every token to an origin that has not told the
    /// client its own time (`heal`); set by hand when the client's clock is known to be off.
    public var clockOffset: Int64 {
        get { offset.seconds }
        set { offset.seconds = newValue }
    }

    /// The most a server's time may differ from this client's clock to be taken (docs/ATTEST.md §7).
    public static let maxClockCorrection: Int64 = 86_400

    /// The seconds added to the signer's clock for `origin`'s requests: what the origin's time
    /// taught (`heal`), else `clockOffset`. Kept per origin, so that no server moves the clock
    /// of requests to another.
    public func clockOffset(for origin: OriginState) -> Int64 { origin[LearnedOffset.self] ?? clockOffset }

    /// Takes `serverTime` (seconds, from a SignCore refusal or an attest response of `origin`)
    /// as that origin's clock, when it is within a day of the client's own: returns whether the
    /// offset changed. A difference of a second or less is left alone (the server's time is
    /// whole seconds, and a round trip late).
    @discardableResult
    public func heal(serverTime: Int64, origin: OriginState) -> Bool {
        let (difference, overflow) = serverTime.subtractingReportingOverflow(localClock())
        guard !overflow, difference.magnitude <= UInt64(Self.maxClockCorrection) else { return false }
        let fallback = clockOffset
        return origin.update(LearnedOffset.self) { learned in
            let (change, overflow) = difference.subtractingReportingOverflow(learned ?? fallback)
            guard overflow || change.magnitude > 1 else { return false }
            learned = difference
            return true
        }
    }

    /// The signer of `origin`'s requests: the signer's own clock plus the origin's offset.
    public func signer(for origin: OriginState) -> Signer {
        let clock = localClock
        return baseSigner.withClock { [self] in clock() &+ clockOffset(for: origin) }
    }

    private enum LearnedOffset: OriginStateKey { typealias Value = Int64 }

    /// The state kept for the origin of `request` (its scheme and authority).
    public func originState(for request: HTTPRequest) throws(SignCoreError) -> OriginState {
        guard let scheme = request.scheme, let authority = request.authority else {
            throw SignCoreError(.invalidURL, "the request needs a scheme and an authority to be signed")
        }
        let origin = (scheme + "://" + authority).lowercased()
        return origins.withLock { origins in
            if let state = origins[origin] { return state }
            if origins.count >= Self.maxOrigins, let any = origins.keys.first { origins[any] = nil }
            let state = OriginState(origin: origin)
            origins[origin] = state
            return state
        }
    }

    /// Signs `request` with the body whose whash is `bodyWHash`, sends it through `transport`,
    /// and asks the policies after each response; returns the response the policies deliver
    /// (the last one when `maxAttempts` are spent). `request` needs its scheme, authority and
    /// path. A transport error ends the exchange: a POST that may have arrived is not resent.
    public func send<Transport: SignedTransport>(_ request: HTTPRequest, bodyWHash: SHA256Digest, bodyLength: Int64? = nil,
                                                 through transport: Transport) async throws -> (HTTPResponse, Transport.ResponseBody) {
        let context = ExchangeContext(origin: try originState(for: request), client: self, bodyLength: bodyLength,
                                      direct: transport.direct, detached: transport.detached, values: StateValues())
        var fields = HTTPFields()  // what the last decision set, for this attempt only
        var attempt = 1
        while true {
            var signed = request
            for policy in policies { try await policy.prepare(&signed, context) }
            Self.set(fields, on: &signed)
            try await signer(for: context.origin).signAsync(&signed, bodyWHash: bodyWHash, names: names)
            var (response, body) = try await transport.send(signed)
            let limit = min(Self.maxBodyLimit, policies.map { $0.bodyLimit(for: response) }.max() ?? 0)
            var peeked: [UInt8] = []
            var isComplete = false
            if limit > 0 { (peeked, isComplete, body) = try await transport.peek(body, upTo: limit) }
            let exchange = Exchange(request: signed, response: response, body: peeked, bodyIsComplete: isComplete,
                                    attempt: attempt, context: context)
            var decision = ExchangeDecision.deliver
            for policy in policies {
                decision = await policy.decide(exchange)
                if case .deliver = decision { continue }
                break
            }
            switch decision {
            case .deliver:
                return (response, body)
            case .retry(let delay, let setting):
                guard attempt < maxAttempts else { return (response, body) }
                await transport.discard(body)
                try await Task.sleep(for: delay)
                fields = setting
                attempt += 1
            case .fail(let error):
                await transport.discard(body)
                throw error
            }
        }
    }

    /// Each field of `fields` replaces the request's fields of its name (several of one name
    /// are all kept).
    static func set(_ fields: HTTPFields, on request: inout HTTPRequest) {
        for name in Set(fields.map(\.name)) { request.headerFields[name] = nil }
        request.headerFields.append(contentsOf: fields)
    }
}

/// The clock offset, shared by the client and its signer's clock.
private final class ClockOffset: Sendable {
    private let value = Locked<Int64>(0)
    var seconds: Int64 {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }

    func update<Result>(_ body: (inout Int64) -> Result) -> Result { value.withLock(body) }
}
