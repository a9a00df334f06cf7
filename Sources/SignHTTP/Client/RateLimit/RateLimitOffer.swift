import Foundation
import HTTPTypes
import RawStructuredFieldValues
import SignAttest
import SignCore

/// One way past a rate limit, as a 429 offers it (docs/ATTEST.md §10.3): the type, the bucket
/// and the site key (the offer, to be answered once).
public struct RateLimitOffer: Sendable, Equatable {
    public let type: BypassType
    public let bucket: String
    /// The offer's text, as the `X-Captcha-Site-Key` of an answer carries it back.
    public let siteKey: String
    public let offer: Challenge

    /// An offer of `type` for `bucket` whose site key is `siteKey`; nil when it is not an offer
    /// (a challenge of type 5).
    public init?(type: BypassType, bucket: String, siteKey: String) {
        guard RateBucket.isName(bucket), let offer = try? Challenge(parsing: siteKey), offer.kind == .rateBypass else { return nil }
        self.type = type
        self.bucket = bucket
        self.siteKey = siteKey
        self.offer = offer
    }

    /// The longest `signcore-bypass` field read.
    public static let maxFieldBytes = 8192

    /// The offers of a 429's `signcore-bypass` field (an RFC 8941 list of tokens with the string
    /// parameters `bucket` and `site-key`): those whose site key parses as an offer; a member
    /// that does not is skipped, a field that is no list gives none.
    public static func offers(in response: HTTPResponse) -> [RateLimitOffer] {
        guard let value = response.headerFields[RateLimitGate.offerField], value.utf8.count <= maxFieldBytes else { return [] }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let list = try? parser.parseListFieldValue() else { return [] }
        return list.compactMap { member in
            guard case .item(let item) = member, case .token(let type) = item.rfc9651BareItem,
                  case .string(let bucket)? = item.rfc9651Parameters["bucket"], RateBucket.isName(bucket),
                  case .string(let siteKey)? = item.rfc9651Parameters["site-key"] else { return nil }
            return RateLimitOffer(type: BypassType(rawValue: type), bucket: bucket, siteKey: siteKey)
        }
    }

    /// The offers of a 429's problem document, seed 001's members
    /// (`extensions.rateLimitersFiring[0]`'s bucket and `captchaBypassAvailable`), for a client
    /// that has the body alone (an intermediary that dropped the field, seed 004's `cptCheck`):
    /// those whose site key parses as an offer; none from a body over 16 KiB or not JSON.
    public static func offers(inProblem body: [UInt8]) -> [RateLimitOffer] {
        guard body.count <= 16 * 1024, let problem = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let firing = ((problem["extensions"] as? [String: Any])?["rateLimitersFiring"] as? [Any])?.first as? [String: Any],
              let bucket = firing["rateLimitingBucket"] as? String, let available = firing["captchaBypassAvailable"] as? [Any]
        else { return [] }
        return available.prefix(8).compactMap { entry in
            guard let entry = entry as? [String: Any], let type = entry["type"] as? String, let siteKey = entry["siteKey"] as? String else { return nil }
            return RateLimitOffer(type: BypassType(rawValue: type), bucket: bucket, siteKey: siteKey)
        }
    }

    /// Whether the offer was made at `origin` for its bucket, to the key with `thumbprint` or to
    /// none: a client answers no other (a server relaying another's offer gets no answer).
    public func isMade(to thumbprint: [UInt8], at origin: OriginState) -> Bool {
        guard let canonical = try? CanonicalURL.canonicalize(origin.origin + "/"), let name = AttestationScope.origin(ofCanonicalURL: canonical) else {
            return false
        }
        return (offer.keyThumbprint == thumbprint || offer.keyThumbprint.allSatisfy { $0 == 0 })
            && offer.originDigest == RateBucket.digest(origin: name, bucket: bucket)
    }
}
