import HTTPTypes
import SignAttest
import SignCore

/// What a response asks of the client (docs/ATTEST.md §10.9, seed 004's secondary verification):
/// read from a SignCore refusal's `signcore-action` and `signcore-error` fields, or, when only
/// the body is at hand (seed 004's `cptCheck`), from its problem document. A response without a
/// `signcore-error` field (a success, an application's own 404 or 429) is `pass`: only
/// SignCore's own refusals ask anything of the client.
public enum SecondaryVerification: Sendable, Equatable {
    /// Nothing to do.
    case pass
    /// A 428: solve the challenge (carried in the `attest-challenge` field; nil when only the
    /// body was read) and send the request again with the token.
    case challenge(Challenge?)
    /// A 429: answer one of the offers (none when the limit offers no bypass) or wait.
    case rateLimited(offers: [RateLimitOffer], retryAfter: Int?)
    /// Register the key at the device endpoint, then send the request again.
    case register
    /// Sign the request again (a fresh nonce, the content as sent, the fields required).
    case resign
    /// Heal the clock from the server's time, then sign again.
    case resyncClock(serverTime: Int64?)
    /// Try again later.
    case retryLater(after: Int?)
    /// Refused for good: nothing the client can do changes it.
    case block(code: Int, name: String)

    /// The most bytes of a body read for a problem document.
    public static let maxBodyBytes = 16 * 1024

    /// Whether the user or app must take a verification step (seed 004's 1): a challenge, a rate
    /// limit, a registration. The others are `pass` or what a signing client does by itself.
    public var requiresVerification: Bool {
        switch self {
        case .challenge, .rateLimited, .register: true
        default: false
        }
    }

    /// Reads a response's status, fields and the start of its body (at most `maxBodyBytes`): a
    /// rate limit's offers come from its problem document when its field is missing.
    public init(_ response: HTTPResponse, body: [UInt8] = [], challengeField: HTTPField.Name = AttestationFieldNames.standard.challenge) {
        guard let refusal = ReceivedRefusal(response, knownCodes: Self.knownCodes, knownAdvice: Self.knownAdvice) else {
            self = .pass
            return
        }
        let retryAfter = response.headerFields[.retryAfter].flatMap { Int($0) }
        // An action this client does not know: the advice's (SPEC §7.1).
        let action = response.headerFields[Refusal.actionField].flatMap { Self.actions.contains($0) ? $0 : nil }
            ?? refusal.advice.map { Refusal.action(for: $0) }
        switch action {
        case "challenge": self = .challenge(response.headerFields[challengeField].flatMap { try? Challenge(parsing: $0) })
        case "rate-limited":
            // The offers of the field, else (an intermediary dropped it) of the problem document.
            let offers = RateLimitOffer.offers(in: response)
            self = .rateLimited(offers: offers.isEmpty ? RateLimitOffer.offers(inProblem: body) : offers, retryAfter: retryAfter)
        case "register": self = .register
        case "resign": self = .resign
        case "resync-clock": self = .resyncClock(serverTime: refusal.serverTime)
        case "retry-later": self = .retryLater(after: retryAfter)
        default: self = .block(code: refusal.codeNumber, name: refusal.name)
        }
    }

    /// Reads a body alone: a SignCore problem document (`application/problem+json` with `code`,
    /// `name` and `advice`, SPEC §7.1) gives its `action` member (or its advice's); anything
    /// else is `pass`.
    public init(problem body: [UInt8]) {
        guard !body.isEmpty, body.count <= Self.maxBodyBytes, let object = try? JSONObject(bytes: body, maxBytes: Self.maxBodyBytes),
              case .integer(let code)? = object["code"], code >= 1, case .string(let name)? = object["name"],
              case .string(let adviceBytes)? = object["advice"] else {
            self = .pass
            return
        }
        let advice = String(decoding: adviceBytes, as: UTF8.self)
        let given: String? = if case .string(let text)? = object["action"] { String(decoding: text, as: UTF8.self) } else { nil }
        let action = given.flatMap { Self.actions.contains($0) ? $0 : nil }
            ?? Self.knownAdvice.first { $0.rawValue == advice }.map { Refusal.action(for: $0) } ?? "block"
        switch action {
        case "challenge": self = .challenge(nil)
        case "rate-limited": self = .rateLimited(offers: RateLimitOffer.offers(inProblem: body), retryAfter: nil)
        case "register": self = .register
        case "resign": self = .resign
        case "resync-clock": self = .resyncClock(serverTime: nil)
        case "retry-later": self = .retryLater(after: nil)
        default: self = .block(code: Int(clamping: code), name: String(decoding: name, as: UTF8.self))
        }
    }

    /// Seed 004's `cptCheck(cookie, body)`: 0 pass, 1 secondary verification required, from the
    /// response's body (its cookies merged into `cookie`, as the seed asks; SignCore sets none,
    /// so they decide nothing).
    public static func cptCheck(cookie: String, body: [UInt8]) -> Int32 {
        SecondaryVerification(problem: body).requiresVerification ? 1 : 0
    }

    /// The actions of SPEC §7.1 and docs/ATTEST.md §10.9.
    static let actions: Set<String> = ["challenge", "rate-limited", "register", "resign", "resync-clock", "retry-later", "block"]

    static let knownCodes = SignCoreError.Code.attestationCodes + SignCoreError.Code.deviceCodes + SignCoreError.Code.rateLimitCodes
    static let knownAdvice: [SignCoreError.Advice] = SignCoreError.Advice.allCases + [.attest, .register, .bypass]
}
