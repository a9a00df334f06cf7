import Synchronization

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
public final class InMemoryReplayGuard: ReplayGuard {
    public let capacity: Int
    private let shards: [LockedShard]
    private let shardCapacity: Int

    /// - Parameter capacity: most unexpired nonces held at once (default one million, at most
    ///   about 128 MB); size it as peak accepted requests per second × maximum lifetime.
    public init(capacity: Int = 1_000_000, shardCount: Int = 16) {
        precondition(capacity > 0 && shardCount > 0)
        self.capacity = capacity
        let count = min(shardCount, capacity)
        self.shardCapacity = (capacity + count - 1) / count
        self.shards = (0..<count).map { _ in LockedShard() }
    }

    public func record(nonce: Nonce, expires: Int64, now: Int64) throws(SignCoreError) {
        var hasher = Hasher()  // SipHash with a per-process random seed
        hasher.combine(nonce.words.0)
        hasher.combine(nonce.words.1)
        let hash = UInt64(UInt(bitPattern: hasher.finalize()))
        let shard = shards[Int((hash >> 40) % UInt64(shards.count))]
        let limit = shardCapacity
        try shard.mutex.withLock { (table) throws(SignCoreError) in
            try table.record(NonceTable.Entry(nonce: nonce.words, hash: hash, expires: expires), now: now, limit: limit)
        }
    }

    /// Nonces held: the unexpired ones, plus expired ones not yet dropped (a shard drops them
    /// when it needs room).
    public var count: Int { shards.reduce(0) { $0 + $1.mutex.withLock { $0.used } } }

    final class LockedShard: Sendable {
        let mutex = Mutex(NonceTable())
    }
}

/// One shard's nonces: an open-addressing table with linear probing, at most half full.
/// Expired entries stay until the table needs room; then it is rebuilt with only the
/// unexpired ones, grown or shrunk so the next rebuild is a quarter of a table away
/// (amortised, a few slot reads per insert).
struct NonceTable: ~Copyable {
    struct Entry {
        var nonce: (UInt64, UInt64)
        var hash: UInt64
        var expires: Int64
        static let empty = Entry(nonce: (0, 0), hash: 0, expires: .min)
        var isEmpty: Bool { expires == .min }
    }

    private var slots: UnsafeMutableBufferPointer<Entry>
    /// Occupied slots, expired or not.
    private(set) var used = 0

    init() { slots = Self.allocate(16) }

    deinit { slots.deallocate() }

    mutating func record(_ entry: Entry, now: Int64, limit: Int) throws(SignCoreError) {
        let mask = slots.count - 1
        var index = Int(truncatingIfNeeded: entry.hash) & mask
        while !slots[index].isEmpty {
            if slots[index].hash == entry.hash, slots[index].nonce == entry.nonce {
                guard slots[index].expires <= now else { throw SignCoreError(.replayed, "this token was already used") }
                slots[index].expires = entry.expires  // the earlier token has expired: the nonce may serve again
                return
            }
            index = (index + 1) & mask
        }
        if used >= limit || 2 * (used + 1) > slots.count {
            try rebuild(now: now, limit: limit)
            return try record(entry, now: now, limit: limit)
        }
        slots[index] = entry
        used += 1
    }

    /// Keeps the unexpired entries only, in a table sized for them and the room to come.
    private mutating func rebuild(now: Int64, limit: Int) throws(SignCoreError) {
        var live = 0
        for entry in slots where !entry.isEmpty && entry.expires > now { live += 1 }
        guard live < limit else {
            throw SignCoreError(.overloaded, "the replay guard is full of unexpired nonces; retry later")
        }
        let largest = Self.powerOfTwo(atLeast: 2 * (limit + 1))
        let size = min(Self.powerOfTwo(atLeast: 4 * (live + 1)), largest)
        let old = slots
        slots = Self.allocate(size)
        used = 0
        for entry in old where !entry.isEmpty && entry.expires > now {
            var index = Int(truncatingIfNeeded: entry.hash) & (size - 1)
            while !slots[index].isEmpty { index = (index + 1) & (size - 1) }
            slots[index] = entry
            used += 1
        }
        old.deallocate()
    }

    private static func allocate(_ count: Int) -> UnsafeMutableBufferPointer<Entry> {
        let slots = UnsafeMutableBufferPointer<Entry>.allocate(capacity: count)
        slots.initialize(repeating: .empty)
        return slots
    }

    private static func powerOfTwo(atLeast n: Int) -> Int {
        var size = 16
        while size < n { size *= 2 }
        return size
    }
}
