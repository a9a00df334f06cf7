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
/// entries leave once their token has expired. Sharded by nonce so concurrent verifiers
/// rarely wait on the same lock.
public final class InMemoryReplayGuard: ReplayGuard {
    public let capacity: Int
    private let shards: [LockedShard]
    private let shardCapacity: Int

    /// - Parameter capacity: most unexpired nonces held at once (default one million, about
    ///   100 MB at worst); size it as peak accepted requests per second × maximum lifetime.
    public init(capacity: Int = 1_000_000, shardCount: Int = 16) {
        precondition(capacity > 0 && shardCount > 0)
        self.capacity = capacity
        let count = min(shardCount, capacity)
        self.shardCapacity = (capacity + count - 1) / count
        self.shards = (0..<count).map { _ in LockedShard() }
    }

    public func record(nonce: Nonce, expires: Int64, now: Int64) throws(SignCoreError) {
        let shard = shards[Int(nonce.words.0 % UInt64(shards.count))]
        let limit = shardCapacity
        try shard.mutex.withLock { (state) throws(SignCoreError) in try state.record(nonce, expires: expires, now: now, limit: limit) }
    }

    /// Unexpired nonces currently held (expired ones may still be counted until the next call
    /// that touches their shard).
    public var count: Int { shards.reduce(0) { $0 + $1.mutex.withLock { $0.expiry.count } } }

    final class LockedShard: Sendable {
        let mutex = Mutex(Shard())
    }

    struct Shard {
        var expiry: [Nonce: Int64] = [:]
        /// Min-heap on expiry time, to drop expired nonces in order.
        var heap: [(expires: Int64, nonce: Nonce)] = []

        mutating func record(_ nonce: Nonce, expires: Int64, now: Int64, limit: Int) throws(SignCoreError) {
            purge(now: now)
            if let known = expiry[nonce], known > now {
                throw SignCoreError(.replayed, "this token was already used")
            }
            guard expiry.count < limit else {
                throw SignCoreError(.overloaded, "the replay guard is full of unexpired nonces; retry later")
            }
            expiry[nonce] = expires
            push((expires, nonce))
        }

        mutating func purge(now: Int64) {
            while let top = heap.first, top.expires <= now {
                popMin()
                if expiry[top.nonce] == top.expires { expiry[top.nonce] = nil }
            }
        }

        mutating func push(_ entry: (expires: Int64, nonce: Nonce)) {
            heap.append(entry)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].expires < heap[parent].expires else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popMin() {
            heap.swapAt(0, heap.count - 1)
            heap.removeLast()
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].expires < heap[smallest].expires { smallest = left }
                if right < heap.count, heap[right].expires < heap[smallest].expires { smallest = right }
                if smallest == parent { return }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}
