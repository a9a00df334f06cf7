/// The one error type of SignCore, shared by client and server (SPEC §7).
///
/// `code` is stable across versions: servers log and return it, clients switch on it.
/// `detail` is a fixed English sentence naming the rule that failed; it never contains a
/// secret, a body, a token or a URL, so it is safe to log and to send back to a client.
public struct SignCoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Code
    public let detail: String
    /// For `unknownKey`: the key id the token named. Key ids are public (1–64 characters of
    /// `A-Z a-z 0-9 - _`, checked before this is set), so it is safe to log and to return.
    public let keyID: String?

    public init(_ code: Code, _ detail: String, keyID: String? = nil) {
        self.code = code
        self.detail = detail
        self.keyID = keyID
    }

    public var description: String { "\(code.name) (\(code.rawValue)): \(detail)" }


    /// Whether sending the request again can succeed, after `advice` is followed.
    public var isRetryable: Bool { code.advice.isRetryable }

    /// A stable numeric code (SPEC §7) with its wire name, the client's next step and the HTTP
    /// status a server refuses with (§7.1). Numbers are never reused; new codes take new
    /// numbers, in the ranges §7 reserves for each flow, and a flow module declares its own
    /// codes as static members of its own (`extension SignCoreError.Code { static let … }`),
    /// so adding one breaks no `switch`: compare with `==`, and handle an unknown code by its
    /// `advice`. Two codes are equal when their numbers are.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        /// The stable wire name (lowerCamelCase ASCII), as used in vectors and logs.
        public var name: String { info.name.description }
        /// What the client should do about it.
        public var advice: Advice { info.advice }
        /// The HTTP status of a refusal with this code (SPEC §7.1).
        public var status: Int { info.status }

        /// A code of a flow outside SignCore's SPEC §7 table: `rawValue` in a range SPEC §7.3
        /// reserves for flows (80-159) or for a deployment (900-999), a lowerCamelCase `name` (ASCII
        /// letters and digits) unique among codes, its advice and a refusal status of 400-599.
        /// Anything else, and a number defined twice with another meaning, is a programming error,
        /// stopped where the code is defined: a refusal with it would not be SPEC §7.1's.
        public init(_ rawValue: Int, _ name: StaticString, advice: Advice, status: Int) {
            precondition(Range.challengesAndAttestation.lowerBound...Range.httpMessageSignatures.upperBound ~= rawValue
                || Range.deployment ~= rawValue, "a flow's code is numbered in a range SPEC §7.3 reserves for flows")
            precondition((400...599).contains(status), "a refusal's status is 400-599")
            precondition(Advice.isToken(name.description), "a code's name is lowerCamelCase ASCII letters and digits")
            let info = Info(name: name, advice: advice, status: status)
            Self.flowCodes.definitions.withLock { definitions in
                if let defined = definitions[rawValue] {
                    precondition(defined == info, "code \(rawValue) is defined twice, with another name, advice or status")
                }
                definitions[rawValue] = info
            }
            self.rawValue = rawValue
        }

        /// SPEC §7's own codes.
        private init(number: Int) { rawValue = number }

        public var description: String { "\(name) (\(rawValue))" }

        /// A code's meaning, held apart from the code (a number, so that an error stays small
        /// on every throwing path): SPEC §7's table in code, flows' codes as they define them.
        struct Info: Equatable {
            let name: StaticString
            let advice: Advice
            let status: Int

            static func == (a: Info, b: Info) -> Bool {
                a.name.description == b.name.description && a.advice == b.advice && a.advice.isRetryable == b.advice.isRetryable
                    && a.status == b.status
            }
        }

        /// The codes flows defined, by number.
        private final class FlowCodes: Sendable {
            let definitions = Locked<[Int: Info]>([:])
        }
        private static let flowCodes = FlowCodes()

        private var info: Info {
            switch rawValue {
            case 1: Info(name: "malformedToken", advice: .reSign, status: 401)
            case 2: Info(name: "unsupportedVersion", advice: .updateClient, status: 401)
            case 3: Info(name: "missingHeader", advice: .reSign, status: 401)
            case 4: Info(name: "headerTooLarge", advice: .reSign, status: 431)
            case 10: Info(name: "unknownKey", advice: .refreshKeys, status: 401)
            case 11: Info(name: "algorithmMismatch", advice: .refreshKeys, status: 401)
            case 12: Info(name: "badSignature", advice: .reSign, status: 401)
            case 13: Info(name: "invalidKey", advice: .fixConfiguration, status: 500)
            case 20: Info(name: "expired", advice: .resyncClock, status: 401)
            case 21: Info(name: "notYetValid", advice: .resyncClock, status: 401)
            case 22: Info(name: "lifetimeTooLong", advice: .fixConfiguration, status: 401)
            case 23: Info(name: "replayed", advice: .reSign, status: 401)
            case 24: Info(name: "overloaded", advice: .retryLater, status: 503)
            case 25: Info(name: "unavailable", advice: .retryLater, status: 503)
            case 30: Info(name: "whashMismatch", advice: .reSign, status: 401)
            case 31: Info(name: "targetMismatch", advice: .reSign, status: 401)
            case 32: Info(name: "headerNotCovered", advice: .reSign, status: 401)
            case 40: Info(name: "unsupportedMethod", advice: .fixRequest, status: 400)
            case 41: Info(name: "invalidURL", advice: .fixRequest, status: 400)
            case 42: Info(name: "invalidInput", advice: .fixRequest, status: 400)
            case 43: Info(name: "bodyTooLarge", advice: .fixRequest, status: 413)
            case 44: Info(name: "unexpectedBody", advice: .fixRequest, status: 400)
            case 45: Info(name: "invalidHeader", advice: .fixRequest, status: 400)
            case 50: Info(name: "cryptoFailure", advice: .retryLater, status: 500)
            case 60: Info(name: "invalidConfiguration", advice: .fixConfiguration, status: 500)
            case 70: Info(name: "upstreamFailed", advice: .retryLater, status: 502)
            case 71: Info(name: "upstreamTimeout", advice: .retryLater, status: 504)
            default:
                // Every Code is made by an initializer that defined it.
                Self.flowCodes.definitions.withLock { $0[rawValue] } ?? Info(name: "undefinedCode", advice: .fixRequest, status: 500)
            }
        }

        // Token and header syntax
        public static let malformedToken = Code(number: 1)
        public static let unsupportedVersion = Code(number: 2)
        public static let missingHeader = Code(number: 3)
        public static let headerTooLarge = Code(number: 4)
        // Keys and signatures
        public static let unknownKey = Code(number: 10)
        public static let algorithmMismatch = Code(number: 11)
        public static let badSignature = Code(number: 12)
        public static let invalidKey = Code(number: 13)
        // Time and freshness
        public static let expired = Code(number: 20)
        public static let notYetValid = Code(number: 21)
        public static let lifetimeTooLong = Code(number: 22)
        public static let replayed = Code(number: 23)
        public static let overloaded = Code(number: 24)
        public static let unavailable = Code(number: 25)
        // Binding to the request
        public static let whashMismatch = Code(number: 30)
        public static let targetMismatch = Code(number: 31)
        public static let headerNotCovered = Code(number: 32)
        // Request input
        public static let unsupportedMethod = Code(number: 40)
        public static let invalidURL = Code(number: 41)
        public static let invalidInput = Code(number: 42)
        public static let bodyTooLarge = Code(number: 43)
        public static let unexpectedBody = Code(number: 44)
        public static let invalidHeader = Code(number: 45)
        // Local failures
        public static let cryptoFailure = Code(number: 50)
        // Configuration
        public static let invalidConfiguration = Code(number: 60)
        // The service behind a gateway (SPEC §7.1: 502 and 504). The request was verified and
        // may have reached it: a client repeats only what is safe to repeat, signed afresh.
        public static let upstreamFailed = Code(number: 70)
        public static let upstreamTimeout = Code(number: 71)

        /// The codes of SPEC §7's table, in number order.
        public static let allCases: [Code] = [
            .malformedToken, .unsupportedVersion, .missingHeader, .headerTooLarge, .unknownKey, .algorithmMismatch, .badSignature,
            .invalidKey, .expired, .notYetValid, .lifetimeTooLong, .replayed, .overloaded, .unavailable, .whashMismatch,
            .targetMismatch, .headerNotCovered, .unsupportedMethod, .invalidURL, .invalidInput, .bodyTooLarge, .unexpectedBody,
            .invalidHeader, .cryptoFailure, .invalidConfiguration, .upstreamFailed, .upstreamTimeout,
        ]

        /// The code of SPEC §7's table with this name; nil for any other (a newer code, or a
        /// name that is not one byte for byte).
        public init?(name: String) {
            // Bytes, not String equality: Unicode equivalence would take "unknown\u{212A}ey" (a Kelvin sign) as unknownKey.
            guard let code = Code.allCases.first(where: { $0.name.utf8.elementsEqual(name.utf8) }) else { return nil }
            self = code
        }

        /// The code of SPEC §7's table with this number; nil for any other.
        public init?(rawValue: Int) {
            guard let code = Code.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = code
        }

        /// The numbers SPEC §7 reserves for the flows to come; a code outside SignCore's table is
        /// numbered in its flow's range, and 900-999 are a deployment's own, never assigned.
        public enum Range {
            public static let challengesAndAttestation = 80...99
            public static let devices = 100...119
            public static let rateLimits = 120...139
            public static let httpMessageSignatures = 140...159
            public static let deployment = 900...999
        }
    }

    /// The client's next step for a failure (SPEC §7): a token, with whether sending the request
    /// again can succeed once it is followed. A flow adds its own as static members; a client
    /// that meets one it does not know does not send the request again by itself (SPEC §7.2).
    public struct Advice: Hashable, Sendable, CustomStringConvertible {
        /// The wire token, as in `signcore-error` and the problem's `advice` member.
        public var rawValue: String { token.description }
        /// False for `fixRequest` and `fixConfiguration`: retrying as-is cannot help.
        public let isRetryable: Bool
        private let token: StaticString

        /// `token`: lowerCamelCase ASCII letters and digits (an RFC 8941 token every client reads).
        public init(_ token: StaticString, isRetryable: Bool) {
            precondition(Self.isToken(token.description), "an advice is lowerCamelCase ASCII letters and digits")
            self.token = token
            self.isRetryable = isRetryable
        }

        /// `[a-z][A-Za-z0-9]*`, at most 64 bytes: the names and advice of SPEC §7.
        static func isToken(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            guard let first = bytes.first, (0x61...0x7A).contains(first), bytes.count <= 64 else { return false }
            return bytes.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        }

        public static func == (lhs: Advice, rhs: Advice) -> Bool { lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8) }
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
        public var description: String { rawValue }

        /// Sign the request again, exactly as it will be sent, with a fresh nonce.
        public static let reSign = Advice("reSign", isRetryable: true)
        /// Fetch the current key set or re-attest, then sign again.
        public static let refreshKeys = Advice("refreshKeys", isRetryable: true)
        /// The client speaks another version of the wire format: update it.
        public static let updateClient = Advice("updateClient", isRetryable: true)
        /// Correct the clock offset (the server's `Date` header is a reference) and sign again.
        public static let resyncClock = Advice("resyncClock", isRetryable: true)
        /// Back off and retry the same request later.
        public static let retryLater = Advice("retryLater", isRetryable: true)
        /// A key or verifier setting is wrong; retrying as-is cannot help.
        public static let fixConfiguration = Advice("fixConfiguration", isRetryable: false)
        /// The request itself is not signable; retrying as-is cannot help.
        public static let fixRequest = Advice("fixRequest", isRetryable: false)

        /// The advice of SPEC §7.1's table.
        public static let allCases: [Advice] = [.reSign, .refreshKeys, .updateClient, .resyncClock, .retryLater, .fixConfiguration,
                                                .fixRequest]
    }
}
