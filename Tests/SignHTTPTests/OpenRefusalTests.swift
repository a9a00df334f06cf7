import Foundation
import HTTPTypes
import SignCore
import SignHTTP
import Testing

/// A flow outside SignCore defines its own code, advice and refusal (SPEC §7.1-7.3), and a client
/// reads refusals with codes and advice it does not know (§7.2). Nothing here touches SignCore.
@Suite struct OpenRefusalTests {
    static let solveChallenge = SignCoreError.Advice("solveChallenge", isRetryable: true)
    static let challengeRequired = SignCoreError.Code(980, "challengeRequired", advice: solveChallenge, status: 428)
    static let challengeField = HTTPField.Name("signcore-challenge")!

    @Test func aFlowAddsACodeAFieldAndProblemMembers() throws {
        #expect(SignCoreError.Code.Range.deployment.contains(Self.challengeRequired.rawValue))
        let error = SignCoreError(Self.challengeRequired, "the route requires a solved challenge")
        var fields = HTTPFields()
        fields[Self.challengeField] = "v1;difficulty=18"
        let refusal = try Refusal(error, fields: fields,
                                  members: ["challenge": .object(["difficulty": .integer(18), "algorithms": .array([.string("sha256")])])])
        #expect(refusal.response.status == .preconditionRequired && refusal.response.status.reasonPhrase == "Precondition Required")
        #expect(refusal.response.headerFields[Self.challengeField] == "v1;difficulty=18")
        #expect(refusal.response.headerFields[Refusal.errorField] == "challengeRequired;code=980;advice=solveChallenge")
        #expect(refusal.response.headerFields[.wwwAuthenticate] == nil && refusal.response.headerFields[.retryAfter] == nil)
        let text = String(decoding: refusal.body, as: UTF8.self)
        // An advice no flow of SignCore defines asks for nothing a client knows: `block`.
        #expect(refusal.response.headerFields[Refusal.actionField] == "block")
        #expect(text == #"{"action":"block","advice":"solveChallenge","challenge":{"algorithms":["sha256"],"difficulty":18},"code":980,"#
            + #""detail":"the route requires a solved challenge","name":"challengeRequired","retryable":true,"status":428,"#
            + #""title":"Precondition Required","type":"about:blank"}"#)

        // What every refusal sets keeps its meaning: a flow cannot set it.
        for own in [HTTPField.Name.contentType, .cacheControl, Refusal.errorField, .wwwAuthenticate] {
            var taken = HTTPFields()
            taken[own] = "x"
            #expect(throws: SignCoreError.self) { try Refusal(error, fields: taken) }
        }
        for member in Refusal.ownMembers {
            #expect(throws: SignCoreError.self) { try Refusal(error, fields: HTTPFields(), members: [member: .boolean(true)]) }
        }
        for framing in [HTTPField.Name.contentLength, .transferEncoding, .connection] {
            var fields = HTTPFields()
            fields[framing] = "0"
            #expect(throws: SignCoreError.self) { try Refusal(error, fields: fields) }
        }
        // A flow's 429 may ask the client to wait; a 503's Retry-After is the refusal's own.
        let slowDown = SignCoreError.Code(920, "rateLimited", advice: .retryLater, status: 429)
        var wait = HTTPFields()
        wait[.retryAfter] = "30"
        #expect(try Refusal(SignCoreError(slowDown, "too many requests"), fields: wait).response.headerFields[.retryAfter] == "30")
        #expect(throws: SignCoreError.self) { try Refusal(SignCoreError(.overloaded, "full"), fields: wait) }
        // SignCore's own refusals are unchanged by the open form (refusal.json pins them).
        let replayed = SignCoreError(.replayed, "the nonce was already used")
        #expect(try Refusal(replayed, fields: HTTPFields()) == Refusal(replayed))
    }

    @Test func aClientReadsCodesAndAdviceItDoesNotKnow() throws {
        let refusal = try Refusal(SignCoreError(Self.challengeRequired, "solve it"), fields: HTTPFields())
        let unknown = try #require(ReceivedRefusal(refusal.response))
        #expect(unknown.codeNumber == 980 && unknown.name == "challengeRequired" && unknown.adviceToken == "solveChallenge")
        #expect(unknown.code == nil && unknown.advice == nil, "neither known: the request is not sent again by itself")
        #expect(unknown.status == 428)
        let adviceOnly = try #require(ReceivedRefusal(refusal.response, knownAdvice: [Self.solveChallenge]))
        #expect(adviceOnly.code == nil && adviceOnly.advice == Self.solveChallenge)
        let known = try #require(ReceivedRefusal(refusal.response, knownCodes: [Self.challengeRequired]))
        #expect(known.code == Self.challengeRequired && known.advice == Self.solveChallenge)

        // A newer code with an advice this client knows: act on the advice.
        var fields = HTTPFields()
        fields[Refusal.errorField] = "deviceRevoked;code=101;advice=refreshKeys;since=2026"
        let newer = try #require(ReceivedRefusal(HTTPResponse(status: .unauthorized, headerFields: fields)))
        #expect(newer.code == nil && newer.advice == .refreshKeys && newer.codeNumber == 101)
        // Every SPEC code, as SignHTTP's refusals send it, is read back as itself.
        for code in SignCoreError.Code.allCases {
            let read = try #require(ReceivedRefusal(Refusal(SignCoreError(code, "x")).response))
            #expect(read.code == code && read.advice == code.advice && read.name == code.name && read.status == code.status)
        }
    }

    @Test(arguments: ["", "replayed", "replayed;code=23", "replayed;advice=reSign", "replayed;code=0;advice=reSign",
                      "replayed;code=-23;advice=reSign", #"replayed;code="23";advice=reSign"#, "replayed;code=23;advice=\"reSign\"",
                      #""replayed";code=23;advice=reSign"#, "(replayed);code=23;advice=reSign", "replayed;code=2.3;advice=reSign",
                      "replayed;code=23;advice=reSign,", "replayed;code=1000000000000000;advice=reSign",
                      "replayed;code=23;advice=reSign;" + String(repeating: "x", count: 512)])
    func aFieldThatIsNotARefusalIsNone(_ value: String) {
        var fields = HTTPFields()
        fields[Refusal.errorField] = value
        #expect(ReceivedRefusal(HTTPResponse(status: .unauthorized, headerFields: fields)) == nil, "\(value)")
    }
}
