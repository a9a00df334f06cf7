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
    public var isRetryable: Bool { code.advice != .fixRequest && code.advice != .fixConfiguration }

    /// Stable numeric codes. Numbers are never reused; new codes take new numbers.
    public enum Code: Int, Sendable, CaseIterable {
        // Token and header syntax
        case malformedToken = 1
        case unsupportedVersion = 2
        case missingHeader = 3
        case headerTooLarge = 4
        // Keys and signatures
        case unknownKey = 10
        case algorithmMismatch = 11
        case badSignature = 12
        case invalidKey = 13
        // Time and freshness
        case expired = 20
        case notYetValid = 21
        case lifetimeTooLong = 22
        case replayed = 23
        case overloaded = 24
        case unavailable = 25
        // Binding to the request
        case whashMismatch = 30
        case targetMismatch = 31
        case headerNotCovered = 32
        // Request input
        case unsupportedMethod = 40
        case invalidURL = 41
        case invalidInput = 42
        case bodyTooLarge = 43
        case unexpectedBody = 44
        case invalidHeader = 45
        // Local failures
        case cryptoFailure = 50
        // Configuration
        case invalidConfiguration = 60
        // The service behind a gateway (SPEC §7.1: 502 and 504). The request was verified and
        // may have reached it: a client repeats only what is safe to repeat, signed afresh.
        case upstreamFailed = 70
        case upstreamTimeout = 71

        /// The stable wire name (lowerCamelCase), as used in vectors and logs.
        public var name: String {
            switch self {
            case .malformedToken: "malformedToken"
            case .unsupportedVersion: "unsupportedVersion"
            case .missingHeader: "missingHeader"
            case .headerTooLarge: "headerTooLarge"
            case .unknownKey: "unknownKey"
            case .algorithmMismatch: "algorithmMismatch"
            case .badSignature: "badSignature"
            case .invalidKey: "invalidKey"
            case .expired: "expired"
            case .notYetValid: "notYetValid"
            case .lifetimeTooLong: "lifetimeTooLong"
            case .replayed: "replayed"
            case .overloaded: "overloaded"
            case .unavailable: "unavailable"
            case .whashMismatch: "whashMismatch"
            case .targetMismatch: "targetMismatch"
            case .headerNotCovered: "headerNotCovered"
            case .unsupportedMethod: "unsupportedMethod"
            case .invalidURL: "invalidURL"
            case .invalidInput: "invalidInput"
            case .bodyTooLarge: "bodyTooLarge"
            case .unexpectedBody: "unexpectedBody"
            case .invalidHeader: "invalidHeader"
            case .cryptoFailure: "cryptoFailure"
            case .invalidConfiguration: "invalidConfiguration"
            case .upstreamFailed: "upstreamFailed"
            case .upstreamTimeout: "upstreamTimeout"
            }
        }

        public init?(name: String) {
            // Bytes, not String equality: Unicode equivalence would take "unknown\u{212A}ey" (a Kelvin sign) as unknownKey.
            guard let code = Code.allCases.first(where: { $0.name.utf8.elementsEqual(name.utf8) }) else { return nil }
            self = code
        }

        /// What the client should do about it.
        public var advice: Advice {
            switch self {
            case .malformedToken, .missingHeader, .headerTooLarge, .badSignature, .whashMismatch,
                 .targetMismatch, .headerNotCovered, .replayed:
                .reSign
            case .unsupportedVersion:
                .updateClient
            case .algorithmMismatch, .unknownKey:
                .refreshKeys
            case .expired, .notYetValid:
                .resyncClock
            case .overloaded, .unavailable, .cryptoFailure, .upstreamFailed, .upstreamTimeout:
                .retryLater
            case .lifetimeTooLong, .invalidKey, .invalidConfiguration:
                .fixConfiguration
            case .unsupportedMethod, .invalidURL, .invalidInput, .bodyTooLarge, .unexpectedBody, .invalidHeader:
                .fixRequest
            }
        }
    }

    /// The client's next step for a failure.
    public enum Advice: String, Sendable {
        /// Sign the request again, exactly as it will be sent, with a fresh nonce.
        case reSign
        /// Fetch the current key set or re-attest, then sign again.
        case refreshKeys
        /// The client speaks another version of the wire format: update it.
        case updateClient
        /// Correct the clock offset (the server's `Date` header is a reference) and sign again.
        case resyncClock
        /// Back off and retry the same request later.
        case retryLater
        /// A key or verifier setting is wrong; retrying as-is cannot help.
        case fixConfiguration
        /// The request itself is not signable; retrying as-is cannot help.
        case fixRequest
    }
}
