@_spi(SignCoreTools) import SignCore

/// Where redeemed challenges are recorded (ATTEST.md §4.3 step 8), shared by every node that
/// redeems: one atomic insert-if-absent keyed by the challenge id, kept until the challenge could
/// no longer be redeemed anyway. Never read-then-write: two concurrent redemptions of one
/// challenge must not both pass.
public protocol RedemptionStore: Sendable {
    /// Records `id` until `expiresAt` (milliseconds) if the store does not hold it yet: true when
    /// it was recorded now, false when it was already held. Throws `unavailable` when the store
    /// cannot be reached and `overloaded` when it is full: then nothing is issued.
    func redeem(_ id: SHA256Digest, expiresAt: UInt64, now: UInt64) async throws(SignCoreError) -> Bool
}

/// The redemption store of one process: enough for a single node, and the reference the
/// PostgreSQL store is tested against. Bounded: expired ids are swept as the table grows (never
/// more often than the earliest expiry it holds allows), and a table full of live ids refuses
/// (`overloaded`) rather than grow without limit.
public final class InMemoryRedemptionStore: RedemptionStore {
    public let capacity: Int
    private let table: Locked<Table>

    struct Table {
        var expiries: [SHA256Digest: UInt64] = [:]
        /// The size at which expired ids are next swept.
        var sweepAt = 1024
        /// No id expires before this (as of the last sweep): sweeping earlier finds nothing.
        var earliestExpiry: UInt64 = 0
    }

    public init(capacity: Int = 1_000_000) {
        self.capacity = max(1, capacity)
        table = Locked(Table())
    }

    public func redeem(_ id: SHA256Digest, expiresAt: UInt64, now: UInt64) async throws(SignCoreError) -> Bool {
        try table.withLock { (table) throws(SignCoreError) -> Bool in
            // Insert if absent: an id held stays held until it is swept, expired or not.
            if table.expiries[id] != nil { return false }
            if table.expiries.count >= min(table.sweepAt, capacity), now >= table.earliestExpiry {
                table.expiries = table.expiries.filter { $0.value > now }
                table.earliestExpiry = table.expiries.values.min() ?? 0
                table.sweepAt = max(1024, 2 * table.expiries.count)
            }
            guard table.expiries.count < capacity else {
                throw SignCoreError(.overloaded, "the redemption store is full of unexpired challenges")
            }
            table.expiries[id] = expiresAt
            table.earliestExpiry = min(table.earliestExpiry == 0 ? expiresAt : table.earliestExpiry, expiresAt)
            return true
        }
    }

    /// Ids held, expired or not yet swept included.
    public var count: Int { table.withLock { $0.expiries.count } }
}
