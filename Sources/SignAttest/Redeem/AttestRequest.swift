import SignCore

/// The body of a request to the attest endpoint (ATTEST.md §4.2): a JSON object with the
/// challenge, as in its header field, and for proof of work the answer, base64url.
public struct AttestRequest: Sendable, Equatable {
    public static let maxBytes = 4096

    public let challenge: Challenge
    public let answer: [UInt8]

    public init(challenge: Challenge, answer: [UInt8]) {
        self.challenge = challenge
        self.answer = answer
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
        guard case .string(let challengeText)? = object["challenge"] else {
            throw SignCoreError(.attestationMalformed, "an attest request has the string member challenge")
        }
        challenge = try Challenge(parsing: String(decoding: challengeText, as: UTF8.self))
        switch challenge.kind {
        case .proofOfWork:
            guard case .string(let answerText)? = object["answer"], let answer = Base64URL.decode(String(decoding: answerText, as: UTF8.self)),
                  answer.count == 8 * challenge.count
            else { throw SignCoreError(.attestationMalformed, "the answer is base64url of 8 bytes per sub-solution") }
            self.answer = answer
        case .device:
            answer = []  // the signed request of a registered key is the answer (ATTEST.md §9.6); `answer` is not read
        default:
            throw SignCoreError(.attestationMalformed, "a registration challenge is answered at the device endpoint, not here")
        }
    }

    /// The body a client sends: `{"challenge":"…","answer":"…"}` (both base64url, no escapes).
    public var body: [UInt8] {
        guard challenge.kind == .proofOfWork else { return Array("{\"challenge\":\"\(challenge.text)\"}".utf8) }
        return Array("{\"challenge\":\"\(challenge.text)\",\"answer\":\"\(Base64URL.encode(answer))\"}".utf8)
    }
}
