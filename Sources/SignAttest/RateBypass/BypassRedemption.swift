import SignCore

/// The fields of a request sent again with an answer to a rate limit's offer (ATTEST.md §10.4),
/// as received: `X-Captcha-Type`, `X-Captcha-Response`, `X-Captcha-Site-Key` and, for
/// `APPLE_DEVICE_CHECK`, `X-Captcha-Key-Id`. Read by `Attestor.redeemBypass` in §10.5's order.
public struct BypassAnswer: Sendable, Equatable {
    public static let maxResponseBytes = 16384

    public var type: String
    public var response: String
    public var siteKey: String
    public var keyID: String?

    public init(type: String, response: String, siteKey: String, keyID: String? = nil) {
        self.type = type
        self.response = response
        self.siteKey = siteKey
        self.keyID = keyID
    }
}

extension Attestor {
    /// Redeems `answer` for the limit with `policy` and `bucket` at `origin` (ATTEST.md §10.5),
    /// on a request whose signature verified under the key with `keyThumbprint` (nil: a request
    /// that was not verified). In the specification's order; nothing is written before the offer
    /// is recorded. Returns the pass (§10.6) for a verified key, nil for an unsigned request.
    /// Step 6 throws the device flow's own codes; `BypassRejection.refusal(for:)` gives the
    /// refusal a server sends.
    public func redeemBypass(_ answer: BypassAnswer, policy: BypassPolicy, bucket: String, origin: String, keyThumbprint: [UInt8]?,
                             now: UInt64) async throws(SignCoreError) -> AttestationToken? {
        // 1. The type, offered here; the offer, of type 5; the response, as the type writes it.
        let type = BypassType(rawValue: answer.type)
        guard BypassType.all.contains(type) else { throw SignCoreError(.bypassMalformed, "X-Captcha-Type is not a bypass type") }
        guard policy.types.contains(type) else { throw SignCoreError(.bypassNotOffered, "this limit does not offer this bypass type") }
        let offer: Challenge
        do { offer = try Challenge(parsing: answer.siteKey) } catch { throw SignCoreError(.bypassMalformed, "the site key is not an offer") }
        guard offer.kind == .rateBypass else { throw SignCoreError(.bypassMalformed, "the site key is not an offer") }
        let response = Array(answer.response.utf8)
        guard (1...BypassAnswer.maxResponseBytes).contains(response.count) else {
            throw SignCoreError(.bypassMalformed, "X-Captcha-Response is 1-16384 bytes")
        }
        // An offer with work is answered with work only, and one without by a device only.
        guard (offer.difficulty > 0) == (type == .signcorePoW) else {
            throw SignCoreError(.bypassMalformed, "the offer was made for another bypass type")
        }
        var work: [UInt8] = [], assertion: AttestRequest.PlatformAssertion?
        switch type {
        case .signcoreDeviceKey:
            guard let keyThumbprint, answer.response == Base64URL.encode(keyThumbprint) else {
                throw SignCoreError(.bypassMalformed, "a SIGNCORE_DEVICE_KEY answer is a request signed by the key its response names")
            }
        case .appleDeviceCheck:
            guard let token = DeviceRegistration.decodeBase64(response), !token.isEmpty,
                  let keyID = answer.keyID, let id = DeviceRegistration.decodeBase64(Array(keyID.utf8)), id.count == 32
            else { throw SignCoreError(.bypassMalformed, "an APPLE_DEVICE_CHECK answer is a base64 assertion and its key id") }
            assertion = .init(format: .appleAppAttest, keyID: keyID, token: token)
        case .signcorePoW:
            guard let answer = Base64URL.decode(answer.response), answer.count == 8 * offer.count else {
                throw SignCoreError(.bypassMalformed, "a SIGNCORE_POW answer is base64url of 8 bytes per sub-solution")
            }
            work = answer
        default:
            break  // ANDROID_PLAY_INTEGRITY: the token as the platform wrote it, read at step 6
        }
        // 2. This fleet's offer.
        guard let key = keys.challengeKey(id: offer.serverKeyID),
              (try? key.verifyMessage(Array(offer.body), signature: Array(offer.tag), context: Challenge.tagContext)) != nil
        else { throw SignCoreError(.bypassNonceMismatch, "the site key is not an offer of this server") }
        // 3. Not expired, with the fleet's skew.
        guard now < offer.expiresAt.addingSaturated(skew) else { throw SignCoreError(.bypassExpired, "the offer has expired") }
        // 4. This bucket at this origin.
        let digest = RateBucket.digest(origin: origin, bucket: bucket)
        guard offer.originDigest == digest else { throw SignCoreError(.bypassNonceMismatch, "the offer is for another bucket or origin") }
        // 5. This key, or none.
        guard offer.keyThumbprint == Self.unbound || offer.keyThumbprint == keyThumbprint else {
            throw SignCoreError(.bypassNonceMismatch, "the offer was made to another key")
        }
        // 6. The answer.
        var counter: (keyID: String, value: UInt64)?
        switch type {
        case .signcoreDeviceKey:
            try await checkDevice(keyThumbprint: keyThumbprint ?? Self.unbound, levels: [])
        case .appleDeviceCheck:
            if let assertion { counter = try await checkAssertion(assertion, challenge: offer) }
        case .androidPlayIntegrity:
            let devices = try configuredDevices()
            guard devices.policy.formats.contains(.androidPlayIntegrity), let verifier = devices.policy.verifiers[.androidPlayIntegrity] else {
                throw SignCoreError(.formatNotAccepted, "this server does not accept Play Integrity verdicts")
            }
            _ = try verifier.verifyVerdict(response, nonce: offer.bytes, appIDs: devices.policy.appIDs)
        default:
            guard ProofOfWork.isValid(work, for: offer) else { throw SignCoreError(.bypassWrongAnswer, "the answer does not solve the offer") }
        }
        // 7. Answered once, fleet-wide.
        guard try await redemptions.redeem(offer.id, expiresAt: offer.expiresAt.addingSaturated(skew), now: now) else {
            throw SignCoreError(.bypassReplayed, "the offer has been answered already")
        }
        // 8. An App Attest key: bound to the key that signs (on its first use), its counter recorded.
        if let counter, let devices {
            if let keyThumbprint {
                guard try await devices.registry.bind(keyID: counter.keyID, to: keyThumbprint) else {
                    throw SignCoreError(.deviceKeyMismatch, "the platform key answers for another signing key")
                }
            }
            try await devices.registry.observe(keyID: counter.keyID, counter: counter.value, now: now)
        }
        // The pass, for a verified key.
        guard let keyThumbprint else { return nil }
        return try AttestationToken(levels: policy.passLevels, issuedAt: now, ttl: policy.passTTL, keyThumbprint: keyThumbprint,
                                    originDigest: digest, key: keys.issuingTokenKey())
    }

    /// The first pass of a `signcore-rate-pass` field (ATTEST.md §10.6: at most 4 passes, by
    /// `,`) that is valid for the limit's bucket at `origin` and for the key with
    /// `keyThumbprint`; nil when none is. A pass that is not valid is ignored, never refused:
    /// the request is then counted as one without.
    public func ratePass(in field: String, policy: BypassPolicy, bucket: String, origin: String, keyThumbprint: [UInt8],
                         now: UInt64) -> AttestationToken? {
        guard let members = RatePass.members(of: field) else { return nil }
        let digest = RateBucket.digest(origin: origin, bucket: bucket)
        return members.lazy.compactMap { try? AttestationToken(parsing: $0) }.first { pass in
            pass.originDigest == digest && pass.keyThumbprint == keyThumbprint && pass.levels.meets(policy.passLevels) && isGenuine(pass, now: now)
        }
    }

    /// Whether `offer` is this fleet's and unexpired (§10.5 steps 2-3, for §10.2's pre-check):
    /// its tag verifies under the `oct` key it names, and `now` < its expiry + skew.
    public func isGenuine(offer: Challenge, now: UInt64) -> Bool {
        guard offer.kind == .rateBypass, now < offer.expiresAt.addingSaturated(skew), let key = keys.challengeKey(id: offer.serverKeyID) else {
            return false
        }
        return (try? key.verifyMessage(Array(offer.body), signature: Array(offer.tag), context: Challenge.tagContext)) != nil
    }

    /// Whether `pass` is this fleet's and within its time (ATTEST.md §10.6): its `kid` names an
    /// `OKP` or `EC` key of the server keys, its signature verifies, and issuedAt − skew ≤ `now` <
    /// expiry + skew. Its scope, key and levels are the caller's to compare.
    public func isGenuine(_ pass: AttestationToken, now: UInt64) -> Bool {
        guard now.addingSaturated(skew) >= pass.issuedAt, now < pass.expiresAt.addingSaturated(skew),
              let key = keys.tokenKey(id: pass.serverKeyID) else { return false }
        return (try? key.verifyMessage(Array(pass.body), signature: Array(pass.signature), context: AttestationToken.signatureContext)) != nil
    }
}

/// The `signcore-rate-pass` field's limits (ATTEST.md §10.6).
public enum RatePass {
    public static let maxPasses = 4
    public static let maxFieldBytes = 4 * 1024 + 16

    /// The members of a `signcore-rate-pass` field, spaces and tabs around each trimmed; nil for
    /// a field over 4112 bytes or of more than 4 members, which is read as no pass at all.
    public static func members(of field: String) -> [String]? {
        guard field.utf8.count <= maxFieldBytes else { return nil }
        let members = field.split(separator: ",", omittingEmptySubsequences: false)
        guard members.count <= maxPasses else { return nil }
        return members.map(\.trimmingSpaces)
    }
}

extension BypassRejection {
    /// The refusal a server sends for an error met redeeming an answer (ATTEST.md §10.5 step 6):
    /// a platform token that does not parse is `bypassMalformed`, a verdict or assertion made for
    /// another nonce `bypassNonceMismatch`, the device flow's other refusals
    /// `bypassDeviceRejected` with their reason and cause; any other error is itself.
    public static func refusal(for error: SignCoreError) -> (error: SignCoreError, reason: BypassRejection?, cause: SignCoreError.Code?) {
        switch error.code {
        case .platformTokenMalformed: return (SignCoreError(.bypassMalformed, "the platform's token is not one"), nil, nil)
        case .nonceMismatch: return (SignCoreError(.bypassNonceMismatch, "the platform's token was made for another nonce"), nil, nil)
        default:
            guard let reason = reason(for: error.code) else { return (error, nil, nil) }
            return (SignCoreError(.bypassDeviceRejected, "the device's answer was rejected: \(reason.rawValue)"), reason, error.code)
        }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (RFC 9110 §5.6.1 list members).
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
