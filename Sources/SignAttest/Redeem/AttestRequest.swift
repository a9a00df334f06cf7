import SignCore

/// The body of a request to the attest endpoint (ATTEST.md §4.2): a JSON object with the
/// challenge, as in its header field, and for proof of work the answer, base64url.
public struct AttestRequest: Sendable, Equatable {
    public static let maxBytes = 4096

    public let challenge: Challenge
    public let answer: [UInt8]
    /// A platform assertion answering a device challenge (ATTEST.md §9.6), when the body has one.
    public let assertion: PlatformAssertion?

    /// An assertion by a registered platform key (App Attest): its format, key id and token.
    public struct PlatformAssertion: Sendable, Equatable {
        public let format: DeviceFormat
        public let keyID: String
        public let token: [UInt8]

        public init(format: DeviceFormat, keyID: String, token: [UInt8]) {
            self.format = format
            self.keyID = keyID
            self.token = token
        }
    }

    public init(challenge: Challenge, answer: [UInt8], assertion: PlatformAssertion? = nil) {
        self.challenge = challenge
        self.answer = answer
        self.assertion = assertion
    }

    /// Reads a body (ATTEST.md §4.2, §4.3 step 1): over 4096 bytes is `bodyTooLarge`; anything
    /// else that is not an attest request whose challenge parses and whose answer is 8k bytes is
    /// `attestationMalformed`.
    public init(body: [UInt8]) throws(SignCoreError) {
        guard body.count <= Self.maxBytes else { throw SignCoreError(.bodyTooLarge, "an attest request is at most 4096 bytes") }
        let object: JSONObject
        do { object = try JSONObject(bytes: body, maxBytes: Self.maxBytes) } catch {
            throw SignCoreError(.attestationMalformed, "an attest request is a JSON object")
        }
        // Seed 003's assertion names the challenge `payload`.
        guard case .string(let challengeText)? = object["challenge"] ?? object["payload"] else {
            throw SignCoreError(.attestationMalformed, "an attest request has the string member challenge")
        }
        challenge = try Challenge(parsing: String(decoding: challengeText, as: UTF8.self))
        switch challenge.kind {
        case .proofOfWork:
            guard case .string(let answerText)? = object["answer"], let answer = Base64URL.decode(String(decoding: answerText, as: UTF8.self)),
                  answer.count == 8 * challenge.count
            else { throw SignCoreError(.attestationMalformed, "the answer is base64url of 8 bytes per sub-solution") }
            self.answer = answer
            assertion = nil
        case .device:
            answer = []  // the signed request of a registered key is the answer (ATTEST.md §9.6); `answer` is not read
            assertion = try Self.assertion(in: object)
        case .payload:
            answer = []
            guard let assertion = try Self.assertion(in: object) else {
                throw SignCoreError(.attestationMalformed, "a payload is answered by a platform's assertion")
            }
            self.assertion = assertion
        case .rateBypass:
            throw SignCoreError(.attestationMalformed, "a rate limit's offer is answered on the limited request, not here")
        default:
            throw SignCoreError(.attestationMalformed, "a registration challenge is answered at the device endpoint, not here")
        }
    }

    /// ATTEST.md §9.6: `format` (a string, checked at step 7), `keyId` and `token` (base64);
    /// without `format`, none.
    static func assertion(in object: JSONObject) throws(SignCoreError) -> PlatformAssertion? {
        guard let member = object["format"] else { return nil }
        guard case .string(let name) = member, (1...256).contains(name.count) else {
            throw SignCoreError(.attestationMalformed, "format is a string of 1-256 bytes")
        }
        let format = DeviceFormat(rawValue: String(decoding: name, as: UTF8.self))
        guard case .string(let keyID)? = object["keyId"], (1...256).contains(keyID.count),
              case .string(let text)? = object["token"], let token = DeviceRegistration.decodeBase64(text), !token.isEmpty
        else { throw SignCoreError(.attestationMalformed, "an assertion has a keyId and a base64 token") }
        return PlatformAssertion(format: format, keyID: String(decoding: keyID, as: UTF8.self), token: token)
    }

    /// The body a client sends: `{"challenge":"…","answer":"…"}` (both base64url, no escapes).
    public var body: [UInt8] {
        if let assertion {
            return Array(#"{"challenge":"\#(challenge.text)","format":"\#(assertion.format.rawValue)","keyId":"\#(assertion.keyID)","token":"\#(Base64URL.encode(assertion.token))"}"#.utf8)
        }
        guard challenge.kind == .proofOfWork else { return Array("{\"challenge\":\"\(challenge.text)\"}".utf8) }
        return Array("{\"challenge\":\"\(challenge.text)\",\"answer\":\"\(Base64URL.encode(answer))\"}".utf8)
    }
}
