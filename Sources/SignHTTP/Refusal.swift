import Foundation
import HTTPTypes
import SignCore

/// The HTTP response for a refused request (SPEC §7, RFC 9457): the status, the header fields
/// and an `application/problem+json` body carrying the stable code, its name and the client's
/// next step. Every client and server of SignCore maps errors the same way, so they interoperate.
///
/// Nothing from the request goes into it: no token, no body, no URL, no header value. The
/// `detail` member is SignCore's fixed sentence for the rule that failed; `keyID` appears only
/// for `unknownKey` (key ids are public).
public struct Refusal: Sendable, Equatable {
    public var response: HTTPResponse
    /// The problem document, UTF-8 JSON.
    public var body: [UInt8]

    /// The machine-readable field: `signcore-error: replayed;code=23;advice=reSign` (an RFC 8941
    /// item: the name as a token, code and advice as parameters).
    public static let errorField = HTTPField.Name("signcore-error")!
    /// What the client is asked to do, as edge products mark their answers (`cf-mitigated`,
    /// `x-amzn-waf-action`): on every refusal, and as the problem's `action` member (SPEC §7.1).
    public static let actionField = HTTPField.Name("signcore-action")!

    /// - Parameters:
    ///   - retryAfter: seconds a client should wait before retrying a request refused because
    ///     the verifier could not decide (`overloaded`, `unavailable`), sent as `Retry-After`.
    ///   - serverTime: the server's clock, seconds since the epoch, sent as the `now` parameter
    ///     of `signcore-error` (docs/ATTEST.md §7): on every 428 and 429, and on `expired` and
    ///     `notYetValid`, so a client whose clock is off heals it in one round trip.
    public init(_ error: SignCoreError, retryAfter: Int = 1, serverTime: Int64? = nil) {
        self.init(error, retryAfter: retryAfter, serverTime: serverTime, checkedFields: HTTPFields(), members: [:])
    }

    /// A refusal with the header fields and problem members of the flow that refuses (a
    /// challenge's parameters in a 428, a `Retry-After` on a 429; SPEC §7.1, §7.3). Refuses
    /// (`invalidConfiguration`) a field the refusal sets itself, a field that frames the message,
    /// and a member of SPEC §7.1's, which keep their meaning.
    public init(_ error: SignCoreError, retryAfter: Int = 1, serverTime: Int64? = nil, fields: HTTPFields,
                members: [String: ProblemValue] = [:]) throws(SignCoreError) {
        let own = error.code.status == 503 ? Self.ownFields : Self.ownFields.subtracting([.retryAfter])
        if let taken = fields.first(where: { own.contains($0.name) || Self.framingFields.contains($0.name) }) {
            throw SignCoreError(.invalidConfiguration, "a refusal sets the \(taken.name.canonicalName) field itself")
        }
        if let taken = members.keys.first(where: { Self.ownMembers.contains($0) }) {
            throw SignCoreError(.invalidConfiguration, "a refusal's problem sets the \(taken) member itself")
        }
        self.init(error, retryAfter: retryAfter, serverTime: serverTime, checkedFields: fields, members: members)
    }

    private init(_ error: SignCoreError, retryAfter: Int, serverTime: Int64?, checkedFields: HTTPFields, members: [String: ProblemValue]) {
        let status = Self.status(for: error.code)
        var fields = HTTPFields()
        fields[.contentType] = "application/problem+json"
        fields[.cacheControl] = "no-store"
        fields[Self.errorField] = "\(error.code.name);code=\(error.code.rawValue);advice=\(error.code.advice.rawValue)"
            + (Self.carriesServerTime(status: status, code: error.code) ? serverTime.map { ";now=\(max(0, $0))" } ?? "" : "")
        fields[Self.actionField] = Self.action(for: error.code)
        if status == .unauthorized {
            // RFC 9110 §15.5.2: a 401 names the authentication scheme that would succeed.
            fields[.wwwAuthenticate] = "SignCore error=\"\(error.code.name)\""
        }
        if status == .serviceUnavailable { fields[.retryAfter] = String(max(0, retryAfter)) }
        fields.append(contentsOf: checkedFields)
        response = HTTPResponse(status: status, headerFields: fields)
        body = Self.problem(error, status: status, adding: members)
    }

    /// Whether a refusal carries the server's time (docs/ATTEST.md §7): a 428, a 429, and the
    /// codes of a clock that is off.
    static func carriesServerTime(status: HTTPResponse.Status, code: SignCoreError.Code) -> Bool {
        status == .preconditionRequired || status == .tooManyRequests || code == .expired || code == .notYetValid
    }

    /// The `signcore-action` of a refusal with `code` (SPEC §7.1), from its advice: `challenge`
    /// (attest), `rate-limited` (bypass), `register`, `resign` (reSign, refreshKeys),
    /// `resync-clock`, `retry-later`, and `block` for the advice no retry can follow
    /// (fixRequest, fixConfiguration, updateClient, and any other).
    public static func action(for code: SignCoreError.Code) -> String { action(for: code.advice) }

    public static func action(for advice: SignCoreError.Advice) -> String {
        switch advice.rawValue {
        case "attest": "challenge"
        case "bypass": "rate-limited"
        case "register": "register"
        case "reSign", "refreshKeys": "resign"
        case "resyncClock": "resync-clock"
        case "retryLater": "retry-later"
        default: "block"
        }
    }

    /// The fields every refusal may set (SPEC §7.1).
    static let ownFields: Set<HTTPField.Name> = [.contentType, .cacheControl, errorField, actionField, .wwwAuthenticate, .retryAfter]
    /// The fields that frame a message, the server's alone.
    static let framingFields: Set<HTTPField.Name> = [.contentLength, .transferEncoding, .connection]
    /// The members of every refusal's problem (SPEC §7.1).
    public static let ownMembers: Set<String> = ["type", "title", "status", "detail", "code", "name", "advice", "action", "retryable", "keyID"]

    /// The status of a refusal with `code` (SPEC §7.1; the code carries it): 401 when the
    /// signature does not prove this request (or cannot be checked against a known key), 400 for
    /// a request no signature could make acceptable, 413 and 431 for sizes, 503 when the
    /// verifier could not decide (retry later), 500 for the server's own faults, 502 and 504
    /// when a gateway's upstream failed or did not answer in time.
    public static func status(for code: SignCoreError.Code) -> HTTPResponse.Status {
        // With its RFC 9110 reason phrase, the problem's `title`.
        standardStatuses.first { $0.code == code.status } ?? HTTPResponse.Status(code: code.status)
    }

    /// The statuses refusals take, each with its reason phrase (made once, not per refusal).
    private static let standardStatuses: [HTTPResponse.Status] = [
        .badRequest, .unauthorized, .forbidden, .conflict, .contentTooLarge, .preconditionRequired, .tooManyRequests,
        .requestHeaderFieldsTooLarge, .internalServerError, .badGateway, .serviceUnavailable, .gatewayTimeout,
    ]

    /// RFC 9457 with `about:blank` (the status says what kind of problem it is) and extension
    /// members `code`, `name`, `advice`, `retryable`, for `unknownKey` `keyID`, and the flow's own.
    static func problem(_ error: SignCoreError, status: HTTPResponse.Status, adding members: [String: ProblemValue] = [:]) -> [UInt8] {
        var problem = members
        problem["type"] = .string("about:blank")
        problem["title"] = .string(status.reasonPhrase)
        problem["status"] = .integer(status.code)
        problem["detail"] = .string(error.detail)
        problem["code"] = .integer(error.code.rawValue)
        problem["name"] = .string(error.code.name)
        problem["advice"] = .string(error.code.advice.rawValue)
        problem["action"] = .string(action(for: error.code))
        problem["retryable"] = .boolean(error.isRetryable)
        if error.code == .unknownKey, let keyID = error.keyID { problem["keyID"] = .string(keyID) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, numbers, Booleans, arrays and objects of them: encoding cannot fail.
        return (try? encoder.encode(problem)).map(Array.init) ?? Array(#"{"type":"about:blank"}"#.utf8)
    }
}

/// A member of a refusal's problem document that a flow adds: JSON without numbers that are not
/// integers (none is needed, and each side reads integers alike).
public enum ProblemValue: Sendable, Equatable, Encodable {
    case string(String)
    case integer(Int)
    case boolean(Bool)
    case array([ProblemValue])
    case object([String: ProblemValue])

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .boolean(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
