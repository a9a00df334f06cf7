/// A bounded cache in front of a `KeySource`, with a bounded rate of misses: a flood of unknown
/// key ids is answered from the cache (`unknownKey`, remembered for `negativeLifetime`) or,
/// once the miss budget of the current second is spent, refused with `unavailable` without
/// asking the source. Thread-safe.
public final class KeyCache: Sendable {
    public let source: any KeySource
    /// Keys held at most (found and not found together); the oldest entry leaves first.
    public let capacity: Int
    /// Seconds a found key is used before it is looked up again.
    public let positiveLifetime: Int64
    /// Seconds an unknown id is answered from the cache.
    public let negativeLifetime: Int64
    /// Lookups sent to the source per second at most.
    public let missesPerSecond: Int

    private struct Entry {
        let record: KeyRecord?
        let until: Int64
        let order: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var insertions: UInt64 = 0
        var second: Int64 = .min
        var missesThisSecond = 0
        /// Counts `invalidate` calls: a lookup that began before one does not store its answer.
        var invalidations: UInt64 = 0
    }

    private let state = Locked(State())
    private let clock: @Sendable () -> Int64

    /// Throws `invalidConfiguration` for a capacity, lifetime or miss rate below 1.
    public init(source: any KeySource, capacity: Int = 10_000, positiveLifetime: Int64 = 300, negativeLifetime: Int64 = 60,
                missesPerSecond: Int = 100, clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) throws(SignCoreError) {
        guard capacity >= 1, positiveLifetime >= 1, negativeLifetime >= 1, missesPerSecond >= 1 else {
            throw SignCoreError(.invalidConfiguration, "a key cache needs a capacity, lifetimes and a miss rate of at least 1")
        }
        self.source = source
        self.capacity = capacity
        self.positiveLifetime = positiveLifetime
        self.negativeLifetime = negativeLifetime
        self.missesPerSecond = missesPerSecond
        self.clock = clock
    }

    /// The cached answer for `id`: `.some(record)` or `.some(nil)` (known unknown), or nil when
    /// the source must be asked.
    func cached(id: String) -> KeyRecord?? {
        let now = clock()
        return state.withLock { state in
            guard let entry = state.entries[id], entry.until > now else { return nil }
            return .some(entry.record)
        }
    }

    /// The key that verifies under `id`: the record's key when its status lets it verify, nil
    /// for an unknown id and for a key that may not verify (revoked).
    public func key(id: String) async throws(SignCoreError) -> SigningKey? {
        guard let record = try await record(id: id), record.status.verifies else { return nil }
        return record.key
    }

    /// Looks `id` up: from the cache, else from the source within the miss budget.
    public func record(id: String) async throws(SignCoreError) -> KeyRecord? {
        // An id outside SPEC §6.2 names no key: answered without a lookup (the cache's dictionary
        // compares Strings by Unicode equivalence, so a Kelvin sign would otherwise reach "Key").
        guard SigningKey.isValidKeyID(id) else { return nil }
        if let answer = cached(id: id) { return answer }
        let now = clock()
        let allowed: UInt64? = state.withLock { state in
            if state.second != now {
                state.second = now
                state.missesThisSecond = 0
            }
            guard state.missesThisSecond < missesPerSecond else { return nil }
            state.missesThisSecond += 1
            return state.invalidations
        }
        guard let invalidations = allowed else {
            throw SignCoreError(.unavailable, "too many lookups of unknown key ids; retry later")
        }
        let record = try await source.record(id: id)
        if let record, !record.key.id.utf8.elementsEqual(id.utf8) {
            throw SignCoreError(.invalidKey, "the key source answered with a key of another id")
        }
        let until = now + (record == nil ? negativeLifetime : positiveLifetime)
        state.withLock { state in
            // Revoked or registered while the source was asked: the answer may predate it.
            guard state.invalidations == invalidations else { return }
            if state.entries[id] == nil, state.entries.count >= capacity { Self.evictOldest(&state, now: now) }
            state.insertions += 1
            state.entries[id] = Entry(record: record, until: until, order: state.insertions)
        }
        return record
    }

    /// Drops the expired entries, or else the oldest one.
    private static func evictOldest(_ state: inout State, now: Int64) {
        let before = state.entries.count
        state.entries = state.entries.filter { $0.value.until > now }
        guard state.entries.count == before, let oldest = state.entries.min(by: { $0.value.order < $1.value.order }) else { return }
        state.entries[oldest.key] = nil
    }

    /// Forgets what is held for `id`, found or not found: a key just revoked stops verifying and
    /// one just registered is found, at once rather than after their lifetimes. A lookup already
    /// in flight does not store its answer (it may predate the change).
    public func invalidate(id: String) {
        state.withLock { state in
            state.entries[id] = nil
            state.invalidations &+= 1
        }
    }

    /// Forgets every id (a key store restored or rotated as a whole).
    public func invalidateAll() {
        state.withLock { state in
            state.entries.removeAll()
            state.invalidations &+= 1
        }
    }

    /// Ids held (for tests and metrics).
    public var count: Int { state.withLock { $0.entries.count } }
}
