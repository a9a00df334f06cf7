import HTTPTypes
import SignAttest
import SignCore

/// The header fields of an answer to a rate limit's offer (docs/ATTEST.md §10.4), seed 001's
/// `X-Captcha-Type` and `X-Captcha-Response`, with the offer answered and, for App Attest, the
/// key id. A deployment may rename them; then its clients must use the same names.
public struct BypassFieldNames: Sendable, Equatable {
    public var type: HTTPField.Name
    public var response: HTTPField.Name
    public var siteKey: HTTPField.Name
    public var keyID: HTTPField.Name

    public init(type: HTTPField.Name, response: HTTPField.Name, siteKey: HTTPField.Name, keyID: HTTPField.Name) {
        self.type = type
        self.response = response
        self.siteKey = siteKey
        self.keyID = keyID
    }

    public static let standard = BypassFieldNames(type: HTTPField.Name("x-captcha-type")!, response: HTTPField.Name("x-captcha-response")!,
                                                  siteKey: HTTPField.Name("x-captcha-site-key")!, keyID: HTTPField.Name("x-captcha-key-id")!)

    var all: [HTTPField.Name] { [type, response, siteKey, keyID] }
}

/// The server's side of rate limits, transport-neutral (docs/ATTEST.md §10): counts a request
/// against its route's limits, before the signature is checked (by address) and after (by key
/// or account); when one fires, reads the request's answer to an offer or its pass, and
/// otherwise refuses with a 429 that offers ways past the limit. Offers are issued statelessly;
/// only an answer writes (its offer, once).
public struct RateLimitGate: Sendable {
    public let limiter: RateLimiter
    /// Issues offers and passes and redeems answers; nil: limits refuse with `Retry-After` only.
    public let attestor: Attestor?
    public let names: BypassFieldNames
    /// Milliseconds since the epoch.
    public let clock: @Sendable () -> UInt64

    /// The offers of a 429, in one field for clients (§10.3).
    public static let offerField = HTTPField.Name("signcore-bypass")!
    /// A pass, on the response to an answer and on the requests that carry it (§10.6).
    public static let passField = HTTPField.Name("signcore-rate-pass")!
    /// The IETF fields (draft-ietf-httpapi-ratelimit-headers).
    public static let policyField = HTTPField.Name("ratelimit-policy")!
    public static let stateField = HTTPField.Name("ratelimit")!

    /// Refuses (`invalidConfiguration`) an attestor that cannot issue offers and passes, and
    /// field names that are not distinct or are a refusal's or the flow's own.
    public init(limiter: RateLimiter = RateLimiter(), attestor: Attestor? = nil, names: BypassFieldNames = .standard,
                clock: @escaping @Sendable () -> UInt64 = { UInt64(max(0, SystemClock.milliseconds())) }) throws(SignCoreError) {
        if let attestor {
            _ = try attestor.keys.issuingChallengeKey()
            _ = try attestor.keys.issuingTokenKey()
        }
        let taken = Refusal.ownFields.union(Refusal.framingFields).union([Self.offerField, Self.passField, Self.policyField, Self.stateField])
        guard Set(names.all).count == 4, names.all.allSatisfy({ !taken.contains($0) }) else {
            throw SignCoreError(.invalidConfiguration, "the bypass fields take four names of their own")
        }
        self.limiter = limiter
        self.attestor = attestor
        self.names = names
        self.clock = clock
    }

    /// Refuses (`invalidConfiguration`) a limit that offers a bypass this gate cannot give: any,
    /// without an attestor; a device's, without the attestor's devices.
    public func validate(_ limits: [RateLimit]) throws(SignCoreError) {
        for limit in limits {
            guard let bypass = limit.bypass else { continue }
            guard let attestor else { throw SignCoreError(.invalidConfiguration, "a limit offers a bypass, and the gate has no attestor") }
            guard let devices = attestor.devices else {
                guard !bypass.types.contains(where: \.needsDevices) else {
                    throw SignCoreError(.invalidConfiguration, "a limit offers a device's bypass, and the attestor has no devices")
                }
                continue
            }
            for (type, format) in [(BypassType.appleDeviceCheck, DeviceFormat.appleAppAttest), (.androidPlayIntegrity, .androidPlayIntegrity)]
            where bypass.types.contains(type) && (!devices.policy.formats.contains(format) || devices.policy.verifiers[format] == nil) {
                throw SignCoreError(.invalidConfiguration, "a limit offers \(type.rawValue), and the devices do not accept \(format.rawValue)")
            }
        }
    }

    /// The limits counted for one request so far, with what each found.
    public struct Count: Sendable {
        public internal(set) var results: [(limit: RateLimit, outcome: RateLimiter.Outcome)] = []
        public init() {}
        /// Whether a limit refused the request.
        public var fired: Bool { results.contains { !$0.outcome.allowed } }
    }

    /// Counts the request against the limits of `limits` keyed by address (§10.2): before its
    /// signature is checked, so that requests that fail it count too.
    public func countBeforeVerification(_ limits: [RateLimit], address: String?, into count: inout Count) {
        count.results.reserveCapacity(limits.count)
        for limit in limits where limit.countsBeforeVerification {
            count.results.append((limit, limiter.take(limit, client: Self.client(key: limit.key, identity: nil, address: address))))
        }
    }

    /// Counts the request against the other limits, by the key or account its signature proved
    /// (`identity`; nil: by its address).
    public func countAfterVerification(_ limits: [RateLimit], identity: VerifiedIdentity?, address: String?, into count: inout Count) {
        for limit in limits where !limit.countsBeforeVerification {
            count.results.append((limit, limiter.take(limit, client: Self.client(key: limit.key, identity: identity, address: address))))
        }
    }

    /// A client's bucket under `limit` (§10.2): `a:` an address (IPv6: its /64), `k:` a key id,
    /// `c:` a key id and an account, each in a namespace of its own.
    static func client(key: RateLimit.Key, identity: VerifiedIdentity?, address: String?) -> String {
        if let identity {
            // The account is the signer's word: counted under its key, so no key spends another's account.
            if key == .account, !identity.account.isEmpty { return "c:" + identity.keyID + "\n" + identity.account }
            if key != .address { return "k:" + identity.keyID }
        }
        guard let address else { return "a:-" }
        // An IPv4 address's text (as `IPAddress` writes it) is its key as it is; IPv6 keys by /64.
        if !address.utf8.contains(UInt8(ascii: ":")) { return "a:" + address }
        return "a:" + (IPAddress(address)?.rateLimitKey ?? "-")
    }

    /// Whether `request`, refused by a limit before its signature was checked, carries what may
    /// get it past (§10.2): an answer whose offer is one of this fleet's (its tag verifies),
    /// unexpired, for the bucket of a limit that fired and offers a way past, while the client's
    /// answers under that limit are not spent (§10.5); or a pass of this fleet (its signature
    /// verifies), within its time, for such a bucket. What does not is refused at once.
    public func admitsAttempt(_ request: HTTPRequest, count: Count, address: String?,
                              origin originOfRequest: () throws(SignCoreError) -> String) -> Bool {
        guard let attestor, let origin = try? originOfRequest() else { return false }
        let now = clock()
        let fired = count.results.filter { !$0.outcome.allowed && $0.limit.bypass != nil }
        let buckets = Set(fired.map { RateBucket.digest(origin: origin, bucket: $0.limit.bucket) })
        if let siteKey = request.headerFields[names.siteKey], let offer = try? Challenge(parsing: siteKey), buckets.contains(offer.originDigest),
           attestor.isGenuine(offer: offer, now: now) {
            let attempts = Self.attempts(address: address)
            return fired.contains { RateBucket.digest(origin: origin, bucket: $0.limit.bucket) == offer.originDigest && limiter.peek($0.limit, client: attempts).allowed }
        }
        guard let field = request.headerFields[Self.passField], let members = RatePass.members(of: field) else { return false }
        return members.contains { member in
            guard let pass = try? AttestationToken(parsing: member), buckets.contains(pass.originDigest) else { return false }
            return attestor.isGenuine(pass, now: now)
        }
    }

    /// The bucket a client's answers are counted in under a limit (§10.5): by its address, as
    /// `a:` keys it, in a namespace of its own.
    static func attempts(address: String?) -> String { "b:" + client(key: .address, identity: nil, address: address) }

    /// Whether `request` carries an answer: any of its three fields.
    func carriesAnswer(_ request: HTTPRequest) -> Bool {
        request.headerFields[names.type] != nil || request.headerFields[names.response] != nil || request.headerFields[names.siteKey] != nil
    }

    /// What the gate decided for one request.
    public enum Verdict: Sendable {
        /// Let through, with the fields its response carries (`RateLimit`, a new pass).
        case pass(HTTPFields)
        /// Refused: a 429 with offers, or an answer's refusal.
        case refuse(Refusal, SignCoreError)
    }

    /// Decides a request whose limits were counted (`count`), whose signature verified as
    /// `identity` (nil: not verified), from `address`, received at `origin` (§10.5, §10.6; read
    /// only when a limit fired): through when no limit fired; else passes first (each fired limit
    /// whose bucket a valid pass is for counts the request in its key's own bucket), then an
    /// answer to the limit of its offer's bucket (counted among the client's answers); else a 429
    /// for the first limit still refusing.
    /// With `reading` false (a request refused before its signature was checked, with nothing
    /// plausible to get past), neither answer nor pass is read: the 429 at once.
    public func decide(_ request: HTTPRequest, count: Count, identity: VerifiedIdentity?, address: String?, reading: Bool = true,
                       origin originOfRequest: () throws(SignCoreError) -> String) async -> Verdict {
        guard count.fired else { return .pass(Self.state(of: count.results.min { $0.outcome.remaining < $1.outcome.remaining })) }
        let now = clock()
        let origin: String
        do { origin = try originOfRequest() } catch { return .refuse(Refusal(error, serverTime: Int64(now / 1000)), error) }
        let thumbprint = identity?.keyThumbprint?.bytes
        var refusing = count.results.filter { !$0.outcome.allowed }
        var fields = HTTPFields()
        // Passes first: a limit whose bucket a valid pass is for counts the request in the key's pass bucket.
        let passes = reading ? request.headerFields[values: Self.passField] : []
        if let thumbprint, let attestor, passes.count == 1 {
            refusing.removeAll { result in
                // The key's own bucket first (no signature is checked for a bucket that is spent).
                guard let policy = result.limit.bypass, limiter.passAllows(result.limit, thumbprint: thumbprint).allowed,
                      attestor.ratePass(in: passes[0], policy: policy, bucket: result.limit.bucket, origin: origin, keyThumbprint: thumbprint, now: now) != nil
                else { return false }
                return limiter.takePass(result.limit, thumbprint: thumbprint).allowed
            }
        }
        // An answer, to the limit still refusing whose bucket its offer is for.
        if !refusing.isEmpty, reading, carriesAnswer(request) {
            do throws(SignCoreError) {
                let answer = try self.answer(in: request, identity: identity)
                let offered = refusing.filter { $0.limit.bypass != nil }
                guard let attestor, let first = offered.first else {
                    throw SignCoreError(.bypassNotOffered, "the limit that refused the request offers no bypass")
                }
                // The target: the limit of the offer's bucket that offers the answer's type, else the
                // first of that bucket, else the first that offers anything (whose checks refuse it).
                let offer = try? Challenge(parsing: answer.siteKey)
                let type = BypassType(rawValue: answer.type)
                let ofBucket = offered.filter { RateBucket.digest(origin: origin, bucket: $0.limit.bucket) == offer?.originDigest }
                let target = ofBucket.first { $0.limit.bypass?.types.contains(type) == true } ?? ofBucket.first ?? first
                guard let policy = target.limit.bypass else { throw SignCoreError(.bypassNotOffered, "the limit offers no bypass") }
                // Answers are counted per client under the target: a failed one is not free.
                let attempts = limiter.take(target.limit, client: Self.attempts(address: address))
                guard attempts.allowed else {
                    let error = SignCoreError(.rateLimited, "the client's answers under the \(target.limit.bucket) limit are spent")
                    return .refuse(limited(error, (target.limit, attempts), thumbprint: thumbprint, origin: origin, now: now), error)
                }
                // Every limit of that bucket that offers this type, and whose work the offer meets, is
                // answered. A signed request counts in its key's own bucket: an answer never gets a key
                // past a bucket it has spent.
                let answered = refusing.filter { result in
                    guard result.limit.bucket == target.limit.bucket, let other = result.limit.bypass, other.types.contains(type) else { return false }
                    return type != .signcorePoW || (offer.map { $0.difficulty >= other.difficulty && $0.count >= other.count } ?? false)
                }
                if let thumbprint, let spent = answered.lazy.map({ ($0.limit, self.limiter.passAllows($0.limit, thumbprint: thumbprint)) })
                    .first(where: { !$0.1.allowed }) {
                    let error = SignCoreError(.rateLimited, "the key has spent its own \(spent.0.bucket) bucket")
                    return .refuse(limited(error, spent, thumbprint: thumbprint, origin: origin, now: now), error)
                }
                let pass = try await attestor.redeemBypass(answer, policy: policy, bucket: target.limit.bucket, origin: origin,
                                                           keyThumbprint: thumbprint, now: now)
                refusing.removeAll { result in answered.contains { $0.limit == result.limit } }
                if let pass, let thumbprint {
                    fields[Self.passField] = pass.text
                    for result in answered {
                        let outcome = limiter.takePass(result.limit, thumbprint: thumbprint)
                        if !outcome.allowed { refusing.append((result.limit, outcome)) }
                    }
                }
            } catch {
                let (refused, reason, cause) = BypassRejection.refusal(for: error)
                if refused.code == .bypassExpired, let first = refusing.first(where: { $0.limit.bypass != nil }) ?? refusing.first {
                    return .refuse(limited(refused, first, thumbprint: thumbprint, origin: origin, now: now), refused)
                }
                var members: [String: ProblemValue] = [:]
                if let reason { members["reason"] = .string(reason.rawValue) }
                if let cause { members["cause"] = .string(cause.name) }
                let refusal = (try? Refusal(refused, serverTime: Int64(now / 1000), fields: HTTPFields(), members: members))
                    ?? Refusal(refused, serverTime: Int64(now / 1000))
                return .refuse(refusal, refused)
            }
        }
        if let first = refusing.first {
            let error = SignCoreError(.rateLimited, "the \(first.limit.bucket) limit is exhausted")
            return .refuse(limited(error, first, thumbprint: thumbprint, origin: origin, now: now, adding: fields), error)
        }
        return .pass(fields)
    }

    /// The answer's fields (§10.5 step 1): each sent at most once and the first three present
    /// (`bypassMalformed`), then each covered by the signature of a verified request
    /// (`headerNotCovered`).
    public func answer(in request: HTTPRequest, identity: VerifiedIdentity?) throws(SignCoreError) -> BypassAnswer {
        let values = names.all.map { request.headerFields[values: $0] }
        guard values.allSatisfy({ $0.count <= 1 }) else { throw SignCoreError(.bypassMalformed, "a bypass field is sent more than once") }
        guard let type = values[0].first, let response = values[1].first, let siteKey = values[2].first else {
            throw SignCoreError(.bypassMalformed, "an answer has X-Captcha-Type, X-Captcha-Response and X-Captcha-Site-Key")
        }
        if let identity {
            for (name, sent) in zip(names.all, values) where !sent.isEmpty
            && !identity.coveredHeaders.contains(where: { $0.utf8.elementsEqual(name.canonicalName.utf8) }) {
                throw SignCoreError(.headerNotCovered, "the signature does not cover the bypass answer's fields")
            }
        }
        return BypassAnswer(type: type, response: response, siteKey: siteKey, keyID: values[3].first)
    }

    /// The 429 of `error` (`rateLimited`, `bypassExpired`) for `result`'s limit (§10.3): its
    /// fields, fresh offers bound to the bucket and the key (when verified), and seed 001's members.
    func limited(_ error: SignCoreError, _ result: (limit: RateLimit, outcome: RateLimiter.Outcome), thumbprint: [UInt8]?, origin: String,
                 now: UInt64, adding extra: HTTPFields = HTTPFields()) -> Refusal {
        let limit = result.limit
        let offers = limit.bypass.flatMap { try? attestor?.bypassOffers($0, bucket: limit.bucket, origin: origin, keyThumbprint: thumbprint, now: now) } ?? []
        var fields = Self.state(of: (limit, result.outcome))
        fields[.retryAfter] = String(max(1, result.outcome.retryAfter))
        fields.append(contentsOf: extra)
        if !offers.isEmpty {
            fields[Self.offerField] = offers.map { "\($0.type.rawValue);bucket=\"\(limit.bucket)\";site-key=\"\($0.offer.text)\"" }
                .joined(separator: ", ")
        }
        let available: [ProblemValue] = offers.map { .object(["type": .string($0.type.rawValue), "siteKey": .string($0.offer.text)]) }
        let members: [String: ProblemValue] = [
            "errors": .array([.object(["message": .string("Rate limit exceeded"), "extensions": .object(["code": .string("RATE_LIMITED")])])]),
            "extensions": .object(["rateLimitersFiring": .array([.object([
                "rateLimitingBucket": .string(limit.bucket), "captchaBypassAvailable": .array(available),
            ])])]),
        ]
        // The fields and members are the flow's own, never a refusal's (checked when configured).
        return (try? Refusal(error, serverTime: Int64(now / 1000), fields: fields, members: members)) ?? Refusal(error, serverTime: Int64(now / 1000))
    }

    /// `RateLimit-Policy` and `RateLimit` for a limit and what its bucket holds.
    static func state(of result: (limit: RateLimit, outcome: RateLimiter.Outcome)?) -> HTTPFields {
        var fields = HTTPFields()
        guard let (limit, outcome) = result else { return fields }
        fields[policyField] = limit.policyText
        fields[stateField] = "\"\(limit.bucket)\";r=\(outcome.remaining);t=\(outcome.reset)"
        return fields
    }
}
