/// An in-process replay guard, bounded in memory by `capacity`.
///
/// - **One table per second of expiry** (`NonceTable`): a record looks only in the tables of
///   its token's expiry second, which hold about a second of nonces whatever the lifetime, so
///   its random slot is far likelier to be in cache than in a table of every live nonce. A
///   second is dropped whole once it has passed and its tables reused for a later second; no
///   table is ever rehashed, and no verify waits on more than dropping the seconds that passed
///   since its shard's last record. Memory follows the live nonces (about 28 bytes each in a
///   steady state: 6 million, 100,000 verifies a second of 60-second tokens, in about 175 MB),
///   plus at least 256 bytes per second of lifetime and shard.
/// - **Sizing**: `capacity` = the peak rate of accepted requests × the longest token lifetime
///   (plus the verifier's skew). The default, 6 million, is 100,000 verifies a second of
///   60-second tokens, or 20,000 a second of 300-second ones.
/// - **Identity**: an entry is 64 bits of a keyed hash of (key, nonce) and 12 check bits of the
///   nonce and key, in the table of its expiry second. Two different pairs in one probe run
///   agree on the hash bits that placed them (at most about 25), so a fresh token is mistaken
///   for a replay with probability about 2⁻⁵⁰ per entry compared, a few per record: at 100,000
///   verifies a second, about once a century. Nobody can aim at it: the hash is SipHash-1-3
///   under a random key of the guard's own.
///
/// - **Capacity**: refuses (`overloaded`) only when the guard as a whole holds `capacity`
///   unexpired nonces. Shards take room from one shared budget in small batches and give it
///   back when their seconds expire; before refusing, every shard drops its expired seconds
///   (at most once per second of `now`, so a flood against a full guard cannot make every
///   verify redo it), and the room that other shards hold unused is gathered: a refusal means
///   the guard holds `capacity` nonces.
/// - **Fairness**: one key id may hold at most `maxShare` of the capacity, so a single key
///   holder cannot lock out every other key. The bound is kept per shard (share × capacity /
///   shards each; nonces spread evenly by a keyed hash), so a key is first refused within a few
///   percent of its share.
/// - **Clock steps**: each shard remembers the latest second it dropped and
///   refuses, as `expired`, any token whose expiry is not after it; a clock moved back can
///   therefore never bring back a token whose nonce was forgotten.
///
/// Sharded by a keyed hash of (key, nonce) so concurrent verifiers rarely wait on the same lock,
/// and so a key holder who picks nonces on purpose cannot pile them into one shard or probe chain.
/// `@unchecked Sendable`: the shard memory is written only in `init` and `deinit`; every table
/// is reached through its shard's lock, the shared budget through an atomic.
public final class InMemoryReplayGuard: ReplayGuard, @unchecked Sendable {
    public let capacity: Int
    /// The largest fraction of `capacity` one key id may hold.
    public let maxShare: Double
    /// The shards, owned by this object and released with it.
    let shards: Shards

    /// - Parameter capacity: most nonces held at once (default 6 million: 100,000 accepted
    ///   verifies a second × 60-second tokens, about 200 MB when full; memory grows with the
    ///   nonces actually held). Size it as peak accepted requests per second × the longest
    ///   lifetime your clients use (at most the verifier's `maxLifetime`) plus its skew.
    /// - Parameter maxShare: the largest fraction of `capacity` one key id may hold, in
    ///   (0, 1]. With one key shared by every client (an HMAC key, say) set it to 1.
    /// - Parameter shardCount: independent locks and tables; by default one per 65,536 nonces
    ///   of capacity, at most 16 (`defaultShardCount`).
    /// Throws `invalidConfiguration` for a capacity below 1, a share outside (0, 1] or a shard
    /// count below 1, and `cryptoFailure` when the operating system gives no random hash key.
    /// (Tables are allocated as seconds need them: a record that cannot have one is `overloaded`.)
    public init(capacity: Int = 6_000_000, maxShare: Double = 0.5, shardCount: Int? = nil) throws(SignCoreError) {
        guard capacity >= 1 else {
            throw SignCoreError(.invalidConfiguration, "the replay guard capacity must be at least 1")
        }
        guard maxShare > 0, maxShare <= 1 else {
            throw SignCoreError(.invalidConfiguration, "the replay guard's share per key must be in (0, 1]")
        }
        let count = min(shardCount ?? Self.defaultShardCount(capacity: capacity), capacity)
        guard count >= 1 else { throw SignCoreError(.invalidConfiguration, "the replay guard needs at least one shard") }
        self.capacity = capacity
        self.maxShare = maxShare
        let perKey = maxShare >= 1 ? Int.max : max(1, Int((maxShare * Double(capacity) / Double(count)).rounded(.up)))
        shards = try Shards(count: count, capacity: capacity, perKeyLimit: perKey)
    }

    deinit { shards.release() }

    /// One shard per 65,536 nonces of capacity, at most 16: enough locks that concurrent
    /// verifiers rarely meet on one, few enough that a shard's table for a second of expiry
    /// holds many entries (at 1.5 million verifies a second, a shard's table for a second is
    /// about 2.4 MB, in huge pages), and that a low rate of long-lived tokens, one small table per second and
    /// shard, costs little memory.
    static func defaultShardCount(capacity: Int) -> Int {
        max(1, min(16, capacity / 65_536))
    }

    public func record(keyID: String, nonce: Nonce, expires: Int64, now: Int64) throws(SignCoreError) {
        try shards.record(shards.hashed(nonce, key: ReplayKey(keyID), expires: expires), expires: expires, now: now)
    }

    /// Nonces held: the unexpired ones, plus those of seconds passed since their shard's last record.
    public var count: Int { shards.count }

    /// Bytes of the shards' tables (what the guard's memory grows with).
    public var tableBytes: Int { shards.tableBytes }

    /// Tables allocated so far. A second of expiry takes its table from those of seconds
    /// already dropped; one is allocated only while the rate (nonces a second) climbs above what
    /// the guard has seen, and none is ever rehashed.
    public var allocations: Int { shards.allocations }

    /// A (key, nonce) pair as the guard stores it, for a verifier that looks the pair up early.
    struct HashedNonce {
        /// The key's tag.
        let key: UInt64
        /// Keyed hash of (key, nonce): the high 32 bits pick the shard, the low
        /// 32 the slot, and all of it is compared.
        let hash: UInt64
        /// 12 more bits compared, from the nonce and key directly (not from `hash`, whose
        /// placement bits two entries in one probe run share).
        let check: UInt64
        let shard: Int
    }

    /// The shards in one raw allocation, reached through this plain value: using it takes no
    /// reference count, which on the guard object would pass one cache line between every
    /// verifying thread. Valid while the guard that made it is alive.
    struct Shards: @unchecked Sendable {
        private let base: UnsafeMutablePointer<Shard>
        private let shardCount: Int
        private let perKeyLimit: Int
        /// The shared budget: slots no shard holds, and when it was last swept.
        private let budget: UnsafeMutablePointer<Budget>
        /// The SipHash key of the nonce hash, from the OS CSPRNG: secret, so nobody can choose
        /// nonces that crowd one probe run.
        private let hashKey: (UInt64, UInt64)

        /// Slots a shard takes from the shared budget at a time.
        static let batch = 64

        init(count: Int, capacity: Int, perKeyLimit: Int) throws(SignCoreError) {
            var key: (UInt64, UInt64) = (0, 0)
            guard withUnsafeMutableBytes(of: &key, { osRandom(into: $0) }) else {
                throw SignCoreError(.cryptoFailure, "the operating system's random generator failed")
            }
            hashKey = key
            shardCount = count
            self.perKeyLimit = perKeyLimit
            budget = .allocate(capacity: 1)
            budget.initialize(to: Budget(capacity))
            base = .allocate(capacity: count)
            for index in 0..<count { (base + index).initialize(to: Shard(table: NonceTable())) }
        }

        func release() {
            base.deinitialize(count: shardCount)
            base.deallocate()
            budget.deinitialize(count: 1)
            budget.deallocate()
        }

        /// Hashes the pair and starts loading its table slots (`Shard.prefetch`), so that the
        /// cache miss of a large table overlaps the signature check that comes before `record`.
        func hashed(_ nonce: Nonce, key: ReplayKey, expires: Int64) -> HashedNonce {
            let hash = sipHash13(key: hashKey.0, hashKey.1, nonce: nonce.words.0, nonce.words.1, tag: key.tag)
            let check = (nonce.words.0 ^ nonce.words.1.byteSwapped ^ key.tag) >> 52
            // The top 32 bits scaled to 0..<shardCount: a multiply, not a 64-bit division.
            let shard = Int(truncatingIfNeeded: ((hash >> 32) &* UInt64(shardCount)) >> 32)
            base[shard].prefetch(hash: hash, expires: expires)
            return HashedNonce(key: key.tag, hash: hash, check: check, shard: shard)
        }

        /// Inlined into the verifier: the usual record is one call into the shard's lock.
        @inline(__always)
        func record(_ pair: HashedNonce, expires: Int64, now: Int64) throws(SignCoreError) {
            if try recordInShard(pair, expires: expires, now: now) { return }
            try recordWithRoomGathered(pair, expires: expires, now: now)
        }

        /// The shared budget is spent: gather the room every shard holds unused, after dropping
        /// their expired seconds (once per second of `now`), and try once more.
        /// Refused only when no shard has room left.
        @inline(never)
        private func recordWithRoomGathered(_ pair: HashedNonce, expires: Int64, now: Int64) throws(SignCoreError) {
            let scan = budget.pointee.claimSweep(at: now)
            for index in 0..<shardCount {
                let returned = base[index].mutex.withLock { table in table.handBack(now: now, scan: scan) }
                budget.pointee.give(returned)
            }
            guard try recordInShard(pair, expires: expires, now: now) else { throw NonceTable.full }
        }

        /// Records in the pair's shard; false when the shard has no room and the shared budget
        /// none to lend.
        private func recordInShard(_ pair: HashedNonce, expires: Int64, now: Int64) throws(SignCoreError) -> Bool {
            let shard = base + pair.shard
            let budget = self.budget, perKeyLimit = self.perKeyLimit
            let (recorded, surplus) = try shard.pointee.mutex.withLock { (table) throws(SignCoreError) in
                let recorded = try table.record(pair, expires: expires, now: now, perKeyLimit: perKeyLimit) {
                    budget.pointee.take(Shards.batch)
                }
                if let layout = table.takeLayoutChange() { shard.pointee.publish(layout) }
                return (recorded, table.surplus(keeping: Shards.batch))
            }
            budget.pointee.give(surplus)
            return recorded
        }

        var count: Int {
            (0..<shardCount).reduce(0) { total, index in total + base[index].mutex.withLock { $0.used } }
        }

        var tableBytes: Int {
            (0..<shardCount).reduce(0) { total, index in total + base[index].mutex.withLock { $0.bytes } }
        }

        /// Full sweeps and tables allocated, of every shard so far (for tests).
        var scans: Int {
            (0..<shardCount).reduce(0) { total, index in total + base[index].mutex.withLock { $0.scans } }
        }
        var allocations: Int {
            (0..<shardCount).reduce(0) { total, index in total + base[index].mutex.withLock { $0.allocations } }
        }
    }

    /// The slots of `capacity` that no shard holds, shared by all shards.
    struct Budget: ~Copyable {
        let available: AtomicWord
        /// The `now` of the last sweep of every shard.
        let sweptAt = AtomicWord(.min)

        init(_ capacity: Int) { available = AtomicWord(Int64(capacity)) }

        /// Up to `count` slots, fewer when fewer are left.
        func take(_ count: Int) -> Int {
            var current = available.load()
            while current > 0 {
                let taken = min(Int64(count), current)
                let (exchanged, now) = available.compareExchange(expected: current, desired: current - taken)
                if exchanged { return Int(taken) }
                current = now
            }
            return 0
        }

        func give(_ count: Int) {
            if count > 0 { available.add(Int64(count)) }
        }

        /// Whether this caller may sweep at `now`: once per distinct `now`.
        func claimSweep(at now: Int64) -> Bool {
            let last = sweptAt.exchange(now)
            return last != now
        }
    }

    struct Shard: ~Copyable {
        let mutex: Locked<NonceTable>
        /// For the seconds of expiry the shard's records use (by their lowest two bits), three
        /// words: the second, and the address and size of the table taking its entries,
        /// published by the record that changed them, for `prefetch` to read without the lock.
        private let hints: UnsafeMutablePointer<Int64>

        init(table: consuming NonceTable) {
            mutex = Locked(table)
            hints = .allocate(capacity: 3 * NonceTable.recentCount)
            for index in 0..<NonceTable.recentCount {  // no second yet: .min, then address and size 0
                (hints + 3 * index).initialize(to: .min)
                (hints + 3 * index + 1).initialize(repeating: 0, count: 2)
            }
        }

        deinit { hints.deallocate() }

        /// Starts loading the pair's home slot when its second's table is known. The hint may be
        /// stale or half-written, which costs a wasted prefetch, never a wrong answer
        /// (prefetching never faults and `record` probes under the lock).
        func prefetch(hash: UInt64, expires: Int64) {
            let hint = hints + 3 * (Int(truncatingIfNeeded: expires) & (NonceTable.recentCount - 1))
            guard atomicLoadRelaxed(hint) == expires else { return }
            let address = atomicLoadRelaxed(hint + 1), count = atomicLoadRelaxed(hint + 2)
            let slot = NonceTable.home(hash: hash, size: Int(count))
            prefetchForWrite(UnsafeRawPointer(bitPattern: UInt(truncatingIfNeeded: address) &+ UInt(slot &* MemoryLayout<NonceTable.Entry>.stride)))
        }

        /// Refreshes a hint, under the shard's lock (so two changes are published in their order).
        func publish(_ layout: NonceTable.Layout) {
            let hint = hints + 3 * (Int(truncatingIfNeeded: layout.expires) & (NonceTable.recentCount - 1))
            atomicStoreRelaxed(hint, .min)  // a reader between these stores skips its prefetch
            atomicStoreRelaxed(hint + 1, Int64(truncatingIfNeeded: layout.address))
            atomicStoreRelaxed(hint + 2, Int64(layout.size))
            atomicStoreRelaxed(hint, layout.expires)
        }
    }
}
