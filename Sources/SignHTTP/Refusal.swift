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
        body = Array(Self.problem(error, status: status).utf8)
    }

    /// 401 when the signature does not prove this request (or cannot be checked against a
    /// known key), 400 for a request no signature could make acceptable, 413 and 431 for sizes,
    /// 503 when the verifier could not decide (retry later), 500 for the server's own faults.
    public static func status(for code: SignCoreError.Code) -> HTTPResponse.Status {
        switch code {
        case .malformedToken, .unsupportedVersion, .missingHeader, .unknownKey, .algorithmMismatch, .badSignature,
             .expired, .notYetValid, .lifetimeTooLong, .replayed, .whashMismatch, .targetMismatch, .headerNotCovered:
            .unauthorized
        case .unsupportedMethod, .invalidURL, .invalidInput, .unexpectedBody, .invalidHeader:
            .badRequest
        case .headerTooLarge:
            .requestHeaderFieldsTooLarge
        case .bodyTooLarge:
            .contentTooLarge
        case .overloaded, .unavailable:
            .serviceUnavailable
        case .cryptoFailure, .invalidKey, .invalidConfiguration:
            .internalServerError
        }
    }

    /// RFC 9457 with `about:blank` (the status says what kind of problem it is) and extension
    /// members `code`, `name`, `advice`, `retryable` and, for `unknownKey`, `keyID`.
    static func problem(_ error: SignCoreError, status: HTTPResponse.Status) -> String {
        var members = [
            "\"type\":\"about:blank\"",
            "\"title\":\(json(status.reasonPhrase))",
            "\"status\":\(status.code)",
            "\"detail\":\(json(error.detail))",
            "\"code\":\(error.code.rawValue)",
            "\"name\":\(json(error.code.name))",
            "\"advice\":\(json(error.code.advice.rawValue))",
            "\"retryable\":\(error.isRetryable)",
        ]
        if error.code == .unknownKey, let keyID = error.keyID { members.append("\"keyID\":\(json(keyID))") }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// A JSON string: quotes, backslashes and control characters escaped (RFC 8259 §7).
    static func json(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
