import HTTPTypes
import SignAttest
import SignCore

/// One attestation at the attest endpoint (docs/ATTEST.md §4): ask for a challenge when none
/// was given (§4.6), solve it, redeem it (§4.3), and go on while the token lacks a level wanted;
/// a challenge redeemed too early is redeemed again after its `Retry-After`, an expired one is
/// replaced by the fresh one its refusal carries. Every request is signed by the client.
struct AttestExchange {
    let policy: AttestationPolicy
    let client: SigningClient
    let origin: OriginState
    let transport: any DirectTransport

    func obtain(challenge first: Challenge?, carrying: String?, wanting: AttestationLevels) async throws(SignCoreError) -> OriginAttestation.Token {
        var carried = carrying
        var challenge = first
        var token: OriginAttestation.Token?
        for _ in 0..<policy.maxChallenges {
            let next: Challenge
            if let challenge { next = challenge } else { next = try await ask(for: wanting, carrying: carried) }
            let redeemed = try await redeem(next, carrying: carried)
            token = redeemed
            if redeemed.levels.meets(wanting) { break }
            carried = redeemed.text
            challenge = nil
        }
        guard let token, token.levels.meets(wanting) else {
            throw SignCoreError(.challengeAbandoned, "the levels wanted were not reached within the challenges a request may answer")
        }
        return token
    }

    /// A challenge from a signed GET of the endpoint (its 428).
    private func ask(for levels: AttestationLevels, carrying token: String?) async throws(SignCoreError) -> Challenge {
        let query = levels.isEmpty ? "" : "?levels=\(levels.rawValue)"
        let (response, _) = try await send(.get, path: policy.endpoint + query, body: [], token: token)
        guard let challenge = challenge(in: response) else { throw refused(response, "asked for a challenge") }
        return challenge
    }

    private func redeem(_ first: Challenge, carrying token: String?) async throws(SignCoreError) -> OriginAttestation.Token {
        var challenge = first
        var answer = try await solve(challenge)
        var registered = false
        for _ in 0..<3 {
            let (response, body) = try await send(.post, path: policy.endpoint, body: try await request(challenge, answer: answer).body,
                                                  token: token)
            if response.status == .ok {
                let answered = try AttestResponse(body: body)
                client.heal(serverTime: answered.now, origin: origin)
                let ttl = Duration.seconds(answered.ttl)
                let now = ContinuousClock.now
                return .init(text: answered.token, levels: answered.levels, expires: now + ttl, renewAt: now + ttl * policy.renewal)
            }
            let refusal = ReceivedRefusal(response, knownCodes: AttestationPolicy.knownCodes, knownAdvice: [.attest, .register])
            switch refusal?.code {
            case .challengeTooEarly?:
                let wait = Duration.seconds(Int64(response.headerFields[.retryAfter].flatMap { Int64($0) } ?? 1))
                guard wait <= policy.maxWait else { throw refused(response, "redeemed a challenge") }
                do { try await Task.sleep(for: wait) } catch { throw SignCoreError(.challengeAbandoned, "the attestation was cancelled") }
            case .challengeExpired?:
                guard let fresh = self.challenge(in: response) else { throw refused(response, "redeemed a challenge") }
                challenge = fresh
                answer = try await solve(challenge)
            case .deviceUnknown?:
                // A device challenge, and this key (or the platform's) is not registered at the origin: register it, once.
                guard !registered, let device = client.devicePolicy else { throw refused(response, "redeemed a challenge") }
                let done = if let asserter = device.asserter {
                    try await device.register(asserter, origin: origin, via: transport)
                } else {
                    try await device.register(client: client, origin: origin, via: transport)
                }
                guard done else { throw refused(response, "redeemed a challenge") }
                registered = true
            default:
                throw refused(response, "redeemed a challenge")
            }
        }
        throw SignCoreError(.challengeAbandoned, "the attest endpoint kept refusing the answer")
    }

    /// The attest request: the challenge with its answer, or for a device challenge the
    /// platform's assertion over its text when the client's device has a platform key
    /// (docs/ATTEST.md §9.6).
    private func request(_ challenge: Challenge, answer: [UInt8]) async throws(SignCoreError) -> AttestRequest {
        guard challenge.kind == .device, let asserter = client.devicePolicy?.asserter else { return AttestRequest(challenge: challenge, answer: answer) }
        let token = try await asserter.assertion(clientData: Array(challenge.text.utf8))
        return AttestRequest(challenge: challenge, answer: [], assertion: .init(format: asserter.format, keyID: asserter.keyID, token: token))
    }

    /// The answer: a proof of work, or none for a device challenge (the signed request of the
    /// registered key is the answer, docs/ATTEST.md §9.6).
    private func solve(_ challenge: Challenge) async throws(SignCoreError) -> [UInt8] {
        challenge.kind == .proofOfWork ? try await policy.solver.solve(challenge) : []
    }

    private func challenge(in response: HTTPResponse) -> Challenge? {
        guard response.status == .preconditionRequired, let field = response.headerFields[policy.names.challenge] else { return nil }
        if let now = ReceivedRefusal(response)?.serverTime { client.heal(serverTime: now, origin: origin) }
        guard let challenge = try? Challenge(parsing: field), challenge.isIssued(to: client.signer.key, at: origin) else { return nil }
        return challenge
    }

    /// The endpoint's refusal as this client's error: its code when known, else `attestationMalformed`
    /// naming the status (an endpoint that is missing, say).
    private func refused(_ response: HTTPResponse, _ what: String) -> SignCoreError {
        let refusal = ReceivedRefusal(response, knownCodes: AttestationPolicy.knownCodes, knownAdvice: [.attest])
        if let code = refusal?.code { return SignCoreError(code, "the attest endpoint refused when the client \(what)") }
        return SignCoreError(.attestationMalformed, "the attest endpoint answered \(response.status.code) when the client \(what)")
    }

    /// Signs and sends one request to the endpoint; one refused for a clock that is off
    /// (`expired`, `notYetValid` with the server's time) is signed again once with the clock
    /// healed, as `ClockPolicy` does for the client's own requests (attesting at start-up is
    /// where nothing has healed the clock yet).
    private func send(_ method: HTTPRequest.Method, path: String, body: [UInt8], token: String?) async throws(SignCoreError) -> (HTTPResponse, [UInt8]) {
        var unsigned = try HTTPRequest(method: method, urlString: origin.origin + path)
        if method == .post { unsigned.headerFields[.contentType] = "application/json" }
        if let token { unsigned.headerFields[policy.names.token] = token }
        for attempt in 0..<2 {
            var request = unsigned
            // A registered key's counter, as every request of it carries (docs/ATTEST.md §9.5).
            if let device = client.devicePolicy { request.headerFields[device.counterField] = String(try device.counter.next()) }
            try await client.signer(for: origin).signAsync(&request, body: body, names: client.names)
            let (response, bytes): (HTTPResponse, [UInt8])
            do { (response, bytes) = try await transport.send(request, body: body) } catch let error as SignCoreError { throw error } catch {
                throw SignCoreError(.upstreamFailed, "the attest endpoint could not be reached (\(type(of: error)))")
            }
            guard attempt == 0, let refusal = ReceivedRefusal(response), refusal.code == .expired || refusal.code == .notYetValid,
                  let now = refusal.serverTime, client.heal(serverTime: now, origin: origin) else { return (response, bytes) }
        }
        throw SignCoreError(.expired, "the attest endpoint refused the client's clock twice")
    }
}

extension Challenge {
    /// Whether this challenge was issued to `key` at `origin` (its key and origin fields): a
    /// client answers no other, so a server cannot relay another server's challenge (bound to the
    /// relaying server's key) for the client's work or its platform key's assertion.
    func isIssued(to key: SigningKey, at origin: OriginState) -> Bool {
        guard let canonical = try? CanonicalURL.canonicalize(origin.origin + "/"), let name = AttestationScope.origin(ofCanonicalURL: canonical) else {
            return false
        }
        return keyThumbprint == key.thumbprint.bytes && originDigest == AttestationScope.originDigest(name)
    }
}
