import HTTPTypes
import RawStructuredFieldValues
import SignCore

/// A refusal as a client receives it (SPEC §7.1): the `signcore-error` field read, whatever the
/// code and advice, as SPEC §7.2 asks of a client that meets codes newer than itself. A policy
/// acts on `code` when it knows it, else on `advice`, else reports the refusal.
public struct ReceivedRefusal: Sendable, Equatable {
    /// The response's status.
    public let status: Int
    /// The code's number, known to this client or not.
    public let codeNumber: Int
    /// The code's wire name, as the server sent it (an RFC 8941 token).
    public let name: String
    /// The advice's token, as the server sent it.
    public let adviceToken: String
    /// The code when this client knows it: SPEC §7's table, or one of the `knownCodes` given.
    public let code: SignCoreError.Code?
    /// What to do (SPEC §7.2): the known code's advice; else the advice when this client knows
    /// the token (SPEC §7.1's, or one of the `knownAdvice` given); nil when it knows neither:
    /// the request is not sent again by itself.
    public let advice: SignCoreError.Advice?
    /// The server's clock, seconds since the epoch, when the refusal carries it (the `now`
    /// parameter, docs/ATTEST.md §7).
    public let serverTime: Int64?

    /// The longest `signcore-error` value read; a longer one is not a refusal this client reads.
    public static let maxFieldBytes = 512

    /// The refusal `response` carries, or nil when it has no `signcore-error` field that is an
    /// RFC 8941 item: a token with an integer `code` (1 or more) and a token `advice` among its
    /// parameters. Other parameters are ignored, as RFC 8941 asks.
    public init?(_ response: HTTPResponse, knownCodes: [SignCoreError.Code] = [], knownAdvice: [SignCoreError.Advice] = []) {
        guard let value = response.headerFields[Refusal.errorField], value.utf8.count <= Self.maxFieldBytes else { return nil }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let item = try? parser.parseItemFieldValue(), case .token(let name) = item.rfc9651BareItem,
              case .integer(let number)? = item.rfc9651Parameters["code"], number >= 1, let codeNumber = Int(exactly: number),
              case .token(let adviceToken)? = item.rfc9651Parameters["advice"] else { return nil }
        status = response.status.code
        self.codeNumber = codeNumber
        self.name = name
        self.adviceToken = adviceToken
        if case .integer(let now)? = item.rfc9651Parameters["now"], now >= 0 { serverTime = Int64(exactly: now) } else { serverTime = nil }
        let code = (SignCoreError.Code.allCases + knownCodes).first { $0.rawValue == codeNumber }
        self.code = code
        advice = code?.advice ?? (SignCoreError.Advice.allCases + knownAdvice).first { $0.rawValue.utf8.elementsEqual(adviceToken.utf8) }
    }
}
