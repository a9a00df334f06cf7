import CSignShim
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Remembers the nonces of accepted tokens until they expire, so each token is accepted once
/// (SPEC §5, step 9). Implementations shared by a fleet of verifiers (a database) come later
/// behind this same protocol.
public protocol ReplayGuard: Sendable {
    /// Records `nonce` as used until `expires` (seconds). Throws `replayed` when the nonce is
    /// already recorded and not yet expired, `overloaded` when it cannot record it: a guard
    /// must never forget an unexpired nonce to make room.
    func record(nonce: Nonce, expires: Int64, now: Int64) async throws(SignCoreError)
}

/// An in-process replay guard. Memory is bounded by `capacity` and by the token lifetime:
/// expired entries are dropped whenever a shard needs room. Sharded by a keyed hash of the
/// nonce so concurrent verifiers rarely wait on the same lock, and so a key holder who picks
/// nonces on purpose cannot pile them into one shard or one probe chain.
/// `@unchecked Sendable`: the shard memory is written only in `init` and `deinit`; every table
/// is reached through its shard's Mutex.
public final class InMemoryReplayGuard: ReplayGuard, @unchecked Sendable {
    public let capacity: Int
    /// The shards, owned by this object and released with it.
    let shards: Shards

    /// - Parameter capacity: most unexpired nonces held at once (default one million, at most
    ///   about 128 MB); size it as peak accepted requests per second × maximum lifetime.
    /// - Parameter shardCount: independent locks and tables. A shard is locked while it rebuilds
    ///   (time in proportion to its size), so more, smaller shards mean shorter pauses and fewer
    ///   threads waiting on one (in the bench's 2-thread verify row alone, 64 shards scaled
    ///   1.85× and 16 shards 1.71×).
    public init(capacity: Int = 1_000_000, shardCount: Int = 64) {
        precondition(capacity > 0 && shardCount > 0)
        self.capacity = capacity
        shards = Shards(count: min(shardCount, capacity), capacity: capacity)
    }

    deinit { shards.release() }

    public func record(nonce: Nonce, expires: Int64, now: Int64) throws(SignCoreError) {
        try shards.record(shards.hashed(nonce), expires: expires, now: now)
    }

    /// Nonces held: the unexpired ones, plus expired ones not yet dropped (a shard drops them
    /// when it needs room).
    public var count: Int { shards.count }

    /// A nonce with its keyed hash, for a verifier that looks the nonce up early.
    struct HashedNonce {
        let nonce: Nonce
        let hash: UInt64
        let shard: Int
    }

    /// The shards in one raw allocation, reached through this plain value: using it takes no
    /// reference count, which on the guard object would pass one cache line between every
    /// verifying thread. Valid while the guard that made it is alive.
    struct Shards: @unchecked Sendable {
        private let base: UnsafeMutablePointer<Shard>
        private let shardCount: Int
        private let shardCapacity: Int

        init(count: Int, capacity: Int) {
            shardCount = count
            shardCapacity = (capacity + count - 1) / count
            base = .allocate(capacity: count)
            for index in 0..<count { (base + index).initialize(to: Shard()) }
        }

        func release() {
            base.deinitialize(count: shardCount)
            base.deallocate()
        }

        /// Hashes `nonce` and starts loading its table slot, so that the cache miss of a large
        /// table overlaps the signature check that comes before `record`. The slot address is
        /// read without the lock: it may be stale after a rebuild, which costs a wasted
        /// prefetch, never a wrong answer (prefetching never faults and `record` probes under
        /// the lock).
        func hashed(_ nonce: Nonce) -> HashedNonce {
            var hasher = Hasher()  // SipHash with a per-process random seed
            hasher.combine(nonce.words.0)
            hasher.combine(nonce.words.1)
            let hash = UInt64(UInt(bitPattern: hasher.finalize()))
            // The top 32 bits scaled to 0..<shardCount: a multiply, not a 64-bit division.
            let shard = Int(truncatingIfNeeded: ((hash >> 32) &* UInt64(shardCount)) >> 32)
            let slots = base[shard].slots.load(ordering: .relaxed), mask = base[shard].mask.load(ordering: .relaxed)
            if slots != 0 {
                let slot = NonceTable.Entry.home(hash: hash, mask: mask)
                sc_prefetch_for_write(UnsafeRawPointer(bitPattern: slots &+ UInt(slot &* MemoryLayout<NonceTable.Entry>.stride)))
            }
            return HashedNonce(nonce: nonce, hash: hash, shard: shard)
        }

        func record(_ nonce: HashedNonce, expires: Int64, now: Int64) throws(SignCoreError) {
            let limit = shardCapacity
            let shard = base + nonce.shard
            let result = shard.pointee.mutex.withLock { table -> Result<(UInt, Int), SignCoreError> in
                do throws(SignCoreError) {
                    try table.record(nonce: nonce.nonce, hash: nonce.hash, expires: expires, now: now, limit: limit)
                } catch {
                    return .failure(error)
                }
                return .success((table.address, table.mask))
            }
            let (slots, mask) = try result.get()
            shard.pointee.publish(slots: slots, mask: mask)
        }

        var count: Int {
            (0..<shardCount).reduce(0) { total, index in total + base[index].mutex.withLock { $0.used } }
        }
    }

    struct Shard: ~Copyable {
        let mutex = Mutex(NonceTable())
        /// The table's address and slot mask as of the last record, for `hashed` to prefetch
        /// from without taking the lock.
        let slots = Atomic<UInt>(0)
        let mask = Atomic<Int>(0)

        /// Refreshes the hint after a record (outside the lock: two threads may race here, and
        /// the loser's stale value lasts until the next record; it is only a hint).
        func publish(slots address: UInt, mask slotMask: Int) {
            if slots.load(ordering: .relaxed) != address {
                slots.store(address, ordering: .relaxed)
                mask.store(slotMask, ordering: .relaxed)
            }
        }
    }
}

/// One shard's nonces: an open-addressing table with linear probing, at most half full.
/// Expired entries stay until the table needs room; then it is rebuilt with only the
/// unexpired ones, grown or shrunk so the next rebuild is a quarter of a table away
/// (amortised, a few slot reads per insert). A full table is scanned at most once per second
/// of `now`: nothing can expire between two calls with the same `now`, so a flood of tokens
/// against a full guard is refused without rescanning. Tables come zeroed from `calloc`
/// (fresh pages for large ones) and a zero slot is empty, so a rebuild touches only the live
/// entries.
struct NonceTable: ~Copyable {
    struct Entry {
        var nonce: (UInt64, UInt64)
        /// The keyed hash with its lowest bit set: never zero in an occupied slot.
        var hash: UInt64
        var expires: Int64
        var isEmpty: Bool { hash == 0 }
        /// The first slot to probe (the hash bits above the one that is always set).
        func home(_ mask: Int) -> Int { Self.home(hash: hash, mask: mask) }
        static func home(hash: UInt64, mask: Int) -> Int { Int(truncatingIfNeeded: hash >> 1) & mask }
    }

    private var slots: UnsafeMutableBufferPointer<Entry>
    /// Occupied slots, expired or not.
    private(set) var used = 0
    /// Full scans so far, and the `now` of the last one.
    private(set) var scans = 0
    private var scannedAt = Int64.min

    init() { slots = Self.allocate(16) }

    deinit { Self.release(slots) }

    var address: UInt { UInt(bitPattern: slots.baseAddress) }
    var mask: Int { slots.count - 1 }

    mutating func record(nonce: Nonce, hash: UInt64, expires: Int64, now: Int64, limit: Int) throws(SignCoreError) {
        let entry = Entry(nonce: nonce.words, hash: hash | 1, expires: expires)
        let mask = slots.count - 1
        var index = entry.home(mask)
        while !slots[index].isEmpty {
            if slots[index].hash == entry.hash, slots[index].nonce == entry.nonce {
                guard slots[index].expires <= now else { throw SignCoreError(.replayed, "this token was already used") }
                slots[index].expires = entry.expires  // the earlier token has expired: the nonce may serve again
                return
            }
            index = (index + 1) & mask
        }
        if used >= limit || 2 * (used + 1) > slots.count {
            // Every entry was unexpired at the last scan; with time not moved on, none has expired since.
            guard used < limit || now > scannedAt else { throw Self.full }
            try rebuild(now: now, limit: limit)
            return try record(nonce: nonce, hash: hash, expires: expires, now: now, limit: limit)
        }
        slots[index] = entry
        used += 1
    }

    private static var full: SignCoreError {
        SignCoreError(.overloaded, "the replay guard is full of unexpired nonces; retry later")
    }

    /// Keeps the unexpired entries only, in a table sized for them and the room to come.
    private mutating func rebuild(now: Int64, limit: Int) throws(SignCoreError) {
        scans += 1
        scannedAt = now
        var live = 0
        for entry in slots where !entry.isEmpty && entry.expires > now { live += 1 }
        guard live < limit else { throw Self.full }
        let largest = Self.powerOfTwo(atLeast: 2 * (limit + 1))
        let size = min(Self.powerOfTwo(atLeast: 4 * (live + 1)), largest)
        let old = slots
        slots = Self.allocate(size)
        used = 0
        for entry in old where !entry.isEmpty && entry.expires > now {
            var index = entry.home(size - 1)
            while !slots[index].isEmpty { index = (index + 1) & (size - 1) }
            slots[index] = entry
            used += 1
        }
        Self.release(old)
    }

    /// Tables from this size on come from the kernel in huge pages (`sc_pages_zeroed`).
    private static let pageTableBytes = 2 << 20

    /// A zeroed table: every slot empty.
    private static func allocate(_ count: Int) -> UnsafeMutableBufferPointer<Entry> {
        let bytes = count * MemoryLayout<Entry>.stride
        guard let memory = bytes >= pageTableBytes ? sc_pages_zeroed(bytes) : calloc(count, MemoryLayout<Entry>.stride) else {
            fatalError("the replay guard could not allocate \(count) slots")
        }
        return UnsafeMutableBufferPointer(start: memory.bindMemory(to: Entry.self, capacity: count), count: count)
    }

    private static func release(_ table: UnsafeMutableBufferPointer<Entry>) {
        let bytes = table.count * MemoryLayout<Entry>.stride
        if bytes >= pageTableBytes { sc_pages_free(table.baseAddress, bytes) } else { free(table.baseAddress) }
    }

    private static func powerOfTwo(atLeast n: Int) -> Int {
        var size = 16
        while size < n { size *= 2 }
        return size
    }
}
