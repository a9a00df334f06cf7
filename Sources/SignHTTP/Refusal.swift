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

    /// - Parameter retryAfter: seconds a client should wait before retrying a request refused
    ///   because the verifier could not decide (`overloaded`, `unavailable`), sent as `Retry-After`.
    public init(_ error: SignCoreError, retryAfter: Int = 1) {
        let status = Self.status(for: error.code)
        var fields = HTTPFields()
        fields[.contentType] = "application/problem+json"
        fields[.cacheControl] = "no-store"
        fields[Self.errorField] = "\(error.code.name);code=\(error.code.rawValue);advice=\(error.code.advice.rawValue)"
        if status == .unauthorized {
            // RFC 9110 §15.5.2: a 401 names the authentication scheme that would succeed.
            fields[.wwwAuthenticate] = "SignCore error=\"\(error.code.name)\""
        }
        if status == .serviceUnavailable { fields[.retryAfter] = String(max(0, retryAfter)) }
        response = HTTPResponse(status: status, headerFields: fields)
        body = Self.problem(error, status: status)
    }

    /// The status of a refusal with `code` (SPEC §7.1; the code carries it): 401 when the
    /// signature does not prove this request (or cannot be checked against a known key), 400 for
    /// a request no signature could make acceptable, 413 and 431 for sizes, 503 when the
    /// verifier could not decide (retry later), 500 for the server's own faults, 502 and 504
    /// when a gateway's upstream failed or did not answer in time.
    public static func status(for code: SignCoreError.Code) -> HTTPResponse.Status {
        let standard: [HTTPResponse.Status] = [.badRequest, .unauthorized, .forbidden, .contentTooLarge, .preconditionRequired,
                                               .tooManyRequests, .requestHeaderFieldsTooLarge, .internalServerError, .badGateway,
                                               .serviceUnavailable, .gatewayTimeout]
        // With its RFC 9110 reason phrase, the problem's `title`.
        return standard.first { $0.code == code.status } ?? HTTPResponse.Status(code: code.status)
    }

    /// RFC 9457 with `about:blank` (the status says what kind of problem it is) and extension
    /// members `code`, `name`, `advice`, `retryable` and, for `unknownKey`, `keyID`.
    struct Problem: Encodable {
        var type = "about:blank"
        var title: String
        var status: Int
        var detail: String
        var code: Int
        var name: String
        var advice: String
        var retryable: Bool
        var keyID: String?
    }

    static func problem(_ error: SignCoreError, status: HTTPResponse.Status) -> [UInt8] {
        let problem = Problem(title: status.reasonPhrase, status: status.code, detail: error.detail, code: error.code.rawValue,
                              name: error.code.name, advice: error.code.advice.rawValue, retryable: error.isRetryable,
                              keyID: error.code == .unknownKey ? error.keyID : nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, numbers and a Bool: encoding cannot fail.
        return (try? encoder.encode(problem)).map(Array.init) ?? Array(#"{"type":"about:blank"}"#.utf8)
    }
}
