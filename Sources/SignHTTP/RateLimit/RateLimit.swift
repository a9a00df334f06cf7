import SignAttest
import SignCore

/// A rate limit on a route (docs/ATTEST.md §10.1): a token bucket of `burst` requests refilled
/// at `quota` per `window` seconds, one per client, named `bucket` (seed 001's
/// `rateLimitingBucket`). Clients are told apart by `key`: their address, counted before the
/// signature is checked (so failed signatures count too), or the key or account that a verified
/// signature proves, counted after (so nobody spends another client's bucket by naming its key).
/// With `bypass`, a limit that fires offers ways past it (§10.3).
///
/// A limit counts in a table of its own, created with it and shared by every copy of the value:
/// two routes given the same limit count against one bucket per client.
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    public enum Key: String, Sendable, CaseIterable {
        /// The client's address (an IPv6 address's /64), from trusted proxies only.
        case address
        /// The verified key's id; a request that did not verify counts against its address.
        case key
        /// The verified signature's account, else its key id, else the address.
        case account
    }

    public var bucket: String
    public var quota: Int
    public var window: Int
    public var burst: Int
    public var key: Key
    public var bypass: BypassPolicy?
    /// Each client's GCRA state under this limit, and each key's with a pass (§10.6).
    let table = RateLimiter.Table(), passTable = RateLimiter.Table()
    /// `RateLimit-Policy`'s value, made once.
    let policyText: String

    public static let quotas = 1...1_000_000
    public static let windows = 1...86_400

    /// Refuses (`invalidConfiguration`) a bucket name that is not 1-64 bytes of `A-Z a-z 0-9 - _`,
    /// a quota outside 1-1000000, a window outside 1-86400 s, and a burst outside 1-quota.
    public init(bucket: String, quota: Int, window: Int, burst: Int? = nil, key: Key = .address,
                bypass: BypassPolicy? = nil) throws(SignCoreError) {
        let burst = burst ?? quota
        guard RateBucket.isName(bucket), Self.quotas ~= quota, Self.windows ~= window, (1...quota) ~= burst else {
            throw SignCoreError(.invalidConfiguration, "a rate limit has a bucket name, a quota of 1-1000000, a window of 1-86400 s and a burst of 1-quota")
        }
        self.bucket = bucket
        self.quota = quota
        self.window = window
        self.burst = burst
        self.key = key
        self.bypass = bypass
        policyText = "\"\(bucket)\";q=\(quota);w=\(window)"
    }

    /// Limits are equal when they count alike (their tables aside).
    public static func == (a: RateLimit, b: RateLimit) -> Bool {
        a.bucket == b.bucket && a.quota == b.quota && a.window == b.window && a.burst == b.burst && a.key == b.key && a.bypass == b.bypass
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bucket)
        hasher.combine(quota)
        hasher.combine(window)
        hasher.combine(burst)
        hasher.combine(key)
        hasher.combine(bypass)
    }

    /// Whether the limit is counted before the signature is checked.
    public var countsBeforeVerification: Bool { key == .address }

    /// Nanoseconds between two requests at the sustained rate (GCRA's emission interval T).
    var interval: UInt64 { UInt64(window) * 1_000_000_000 / UInt64(quota) }
    /// Nanoseconds a client may run ahead of the sustained rate (GCRA's τ = T × (burst − 1)).
    var tolerance: UInt64 { interval * UInt64(burst - 1) }

    public var description: String { "\(bucket) \(quota)/\(window)s burst \(burst) by \(key)" }
}

/// The rate-limit dimension of a route's requirements (`RouteRequirements[RouteRateLimits.self]`):
/// none by default; a path read under several rules gets every limit of each.
public enum RouteRateLimits: RouteRequirement {
    public static let defaultValue: [RateLimit] = []

    public static func strictest(_ a: [RateLimit], _ b: [RateLimit]) -> [RateLimit] { a + b.filter { !a.contains($0) } }
}
