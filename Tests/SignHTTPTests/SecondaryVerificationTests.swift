import HTTPTypes
import SignAttest
@_spi(SignCoreTools) import SignCore
import SignHTTP
import Testing

/// Seed 004's secondary verification (docs/ATTEST.md §10.9): what every kind of response asks of
/// the client, from its fields or from its body alone, and `cptCheck`'s 0 or 1.
@Suite struct SecondaryVerificationTests {
    static let keys = try! AttestationKeys([SigningKey.hmac(secret: Array(repeating: 7, count: 32), id: "challenge-1"),
                                            SigningKey.generate(.ed25519, id: "token-1")])

    static func response(_ refusal: Refusal) -> HTTPResponse { refusal.response }

    @Test(arguments: [
        (SignCoreError.Code.attestationRequired, "challenge", Int32(1)), (.challengeExpired, "challenge", 1), (.rateLimited, "rate-limited", 1),
        (.bypassExpired, "rate-limited", 1), (.deviceUnknown, "register", 1), (.registrationExpired, "register", 1),
        (.replayed, "resign", 0), (.unknownKey, "resign", 0), (.badSignature, "resign", 0), (.expired, "resync-clock", 0),
        (.notYetValid, "resync-clock", 0), (.overloaded, "retry-later", 0), (.upstreamTimeout, "retry-later", 0),
        (.bypassReplayed, "block", 0), (.bypassDeviceRejected, "block", 0), (.deviceRevoked, "block", 0), (.wrongAnswer, "block", 0),
        (.invalidURL, "block", 0), (.unsupportedVersion, "block", 0), (.invalidConfiguration, "block", 0),
    ])
    func everyKindOfRefusal(code: SignCoreError.Code, action: String, check: Int32) throws {
        let refusal = Refusal(SignCoreError(code, "a fixed sentence"), serverTime: 1_767_225_600)
        #expect(refusal.response.headerFields[Refusal.actionField] == action)
        let read = SecondaryVerification(refusal.response, body: refusal.body)
        let fromBody = SecondaryVerification(problem: refusal.body)
        switch action {
        case "challenge": #expect(read == .challenge(nil) && fromBody == .challenge(nil))
        case "rate-limited": #expect(read == .rateLimited(offers: [], retryAfter: nil) && fromBody == .rateLimited(offers: [], retryAfter: nil))
        case "register": #expect(read == .register && fromBody == .register)
        case "resign": #expect(read == .resign && fromBody == .resign)
        case "resync-clock":
            #expect(read == .resyncClock(serverTime: 1_767_225_600) && fromBody == .resyncClock(serverTime: nil))
        case "retry-later": #expect(read == .retryLater(after: refusal.response.headerFields[.retryAfter].flatMap { Int($0) }) && fromBody == .retryLater(after: nil))
        default:
            #expect(read == .block(code: code.rawValue, name: code.name) && fromBody == .block(code: code.rawValue, name: code.name))
        }
        #expect(read.requiresVerification == (check == 1))
        #expect(SecondaryVerification.cptCheck(cookie: "key1=value1;key2=value2;", body: refusal.body) == check)
    }

    @Test func aChallengeAndOffersAreRead() throws {
        let attestor = try Attestor(keys: Self.keys, redemptions: InMemoryRedemptionStore())
        let key = try SigningKey.generate(.ed25519)
        let challenge = try attestor.challenge(ChallengePolicy(levels: .level(0)), keyThumbprint: key.thumbprint.bytes, origin: "https://a.example", now: 1000)
        let refusal = try Refusal(SignCoreError(.attestationRequired, "a challenge"), serverTime: 1, fields: [HTTPField.Name("attest-challenge")!: challenge.text])
        #expect(SecondaryVerification(refusal.response, body: refusal.body) == .challenge(challenge))
        // A 429 of the gate itself: its offers and Retry-After.
        let offers = try attestor.bypassOffers(BypassPolicy(types: [.signcorePoW, .appleDeviceCheck]), bucket: "LOGIN", origin: "https://a.example",
                                               keyThumbprint: nil, now: 1000)
        let field = offers.map { "\($0.type.rawValue);bucket=\"LOGIN\";site-key=\"\($0.offer.text)\"" }.joined(separator: ", ")
        let limited = try Refusal(SignCoreError(.rateLimited, "limited"), serverTime: 1,
                                  fields: [RateLimitGate.offerField: field, .retryAfter: "7"])
        guard case .rateLimited(let read, let retryAfter) = SecondaryVerification(limited.response, body: limited.body) else {
            Issue.record("not read as a rate limit")
            return
        }
        #expect(read.map(\.type) == [.signcorePoW, .appleDeviceCheck] && read.map(\.siteKey) == offers.map(\.offer.text) && retryAfter == 7)
    }

    @Test func whatIsNotSignCoresIsAPass() {
        // A success, an application's own 404 and 429 (no signcore-error), an edge's action field alone.
        #expect(SecondaryVerification(HTTPResponse(status: .ok), body: Array("{}".utf8)) == .pass)
        #expect(SecondaryVerification(HTTPResponse(status: .notFound), body: Array(#"{"error":"no such user"}"#.utf8)) == .pass)
        #expect(SecondaryVerification(HTTPResponse(status: .tooManyRequests, headerFields: [.retryAfter: "3"]), body: []) == .pass)
        #expect(SecondaryVerification(HTTPResponse(status: .forbidden, headerFields: [Refusal.actionField: "block"]), body: []) == .pass)
        // A body that is not a problem document, or one too large to read.
        for body in ["", "not json", #"{"code":"80","name":"x","advice":"attest"}"#, #"{"code":0,"name":"x","advice":"attest"}"#, "[1]"] {
            #expect(SecondaryVerification.cptCheck(cookie: "", body: Array(body.utf8)) == 0, "\(body)")
        }
        let refusal = Refusal(SignCoreError(.attestationRequired, "x"))
        #expect(SecondaryVerification.cptCheck(cookie: "", body: refusal.body + Array(repeating: 0x20, count: SecondaryVerification.maxBodyBytes)) == 0)
    }

    @Test func anOlderOrNewerServer() throws {
        // No signcore-action (an older server): the advice decides.
        var older = Refusal(SignCoreError(.deviceUnknown, "x")).response
        older.headerFields[Refusal.actionField] = nil
        #expect(SecondaryVerification(older, body: []) == .register)
        // A code this client does not know, with a known action or advice: acted on; with neither: block.
        var newer = HTTPResponse(status: .tooManyRequests)
        newer.headerFields[Refusal.errorField] = "floodLimited;code=139;advice=waitABit"
        newer.headerFields[Refusal.actionField] = "rate-limited"
        #expect(SecondaryVerification(newer, body: []) == .rateLimited(offers: [], retryAfter: nil))
        newer.headerFields[Refusal.actionField] = nil
        #expect(SecondaryVerification(newer, body: []) == .block(code: 139, name: "floodLimited"))
        newer.headerFields[Refusal.errorField] = "floodLimited;code=139;advice=bypass"
        #expect(SecondaryVerification(newer, body: []) == .rateLimited(offers: [], retryAfter: nil))
        let body = Array(#"{"type":"about:blank","code":139,"name":"floodLimited","advice":"waitABit","action":"register"}"#.utf8)
        #expect(SecondaryVerification(problem: body) == .register && SecondaryVerification.cptCheck(cookie: "", body: body) == 1)
    }

    @Test func anUnknownActionFallsBackToTheAdviceAndOffersComeFromTheBody() throws {
        // An action this client does not know: the advice's.
        var response = Refusal(SignCoreError(.deviceUnknown, "x")).response
        response.headerFields[Refusal.actionField] = "solve-a-puzzle"
        #expect(SecondaryVerification(response, body: []) == .register)
        // An application's own JSON that looks like a problem document, with headers at hand: not SignCore's.
        let lookalike = Array(#"{"code":80,"name":"attestationRequired","advice":"attest"}"#.utf8)
        #expect(SecondaryVerification(HTTPResponse(status: .forbidden), body: lookalike) == .pass)
        // A 429 whose signcore-bypass field an intermediary dropped: the offers of its problem document.
        let attestor = try Attestor(keys: Self.keys, redemptions: InMemoryRedemptionStore())
        let offers = try attestor.bypassOffers(BypassPolicy(types: [.signcorePoW]), bucket: "LOGIN", origin: "https://a.example", keyThumbprint: nil, now: 1)
        let members: [String: ProblemValue] = ["extensions": .object(["rateLimitersFiring": .array([.object([
            "rateLimitingBucket": .string("LOGIN"),
            "captchaBypassAvailable": .array([.object(["type": .string("SIGNCORE_POW"), "siteKey": .string(offers[0].offer.text)])]),
        ])])])]
        let limited = try Refusal(SignCoreError(.rateLimited, "limited"), serverTime: 1, fields: [:], members: members)
        guard case .rateLimited(let read, _) = SecondaryVerification(limited.response, body: limited.body),
              case .rateLimited(let fromBody, _) = SecondaryVerification(problem: limited.body) else {
            Issue.record("not read as a rate limit")
            return
        }
        #expect(read.map(\.siteKey) == [offers[0].offer.text] && fromBody == read && read.first?.bucket == "LOGIN")
    }
}
