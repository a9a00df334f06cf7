import CSignShim
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One shard of the replay guard: an open-addressing table of (key, nonce) entries with linear
/// probing, at most half full, with the shard's part of the guard's budget and its count of
/// entries per key.
///
/// Expired entries stay until the table needs room; then it is rebuilt with only the unexpired
/// ones, grown or shrunk so the next rebuild is a quarter of a table away (amortised, a few
/// slot reads per insert). A table without room is scanned at most once per second of `now`:
/// nothing can expire between two calls with the same `now`, so a flood of tokens against a
/// full shard is refused without rescanning. Tables come zeroed from `calloc` (fresh pages for
/// large ones) and a zero slot is empty, so a rebuild touches only the live entries.
/// `@unchecked Sendable`: its memory is reached only through its shard's Mutex.
struct NonceTable: ~Copyable, @unchecked Sendable {
    struct Entry {
        var nonce: (UInt64, UInt64)
        /// The key's replay tag with its lowest bit set: never zero in an occupied slot.
        var key: UInt64
        /// The keyed hash of (key, nonce).
        var hash: UInt64
        var expires: Int64
        var isEmpty: Bool { key == 0 }
        /// The first slot to probe.
        func home(_ mask: Int) -> Int { Self.home(hash: hash, mask: mask) }
        static func home(hash: UInt64, mask: Int) -> Int { Int(truncatingIfNeeded: hash) & mask }
    }

    private var slots: UnsafeMutableBufferPointer<Entry>
    /// Occupied slots, expired or not.
    private(set) var used = 0
    /// Slots of the guard's budget this shard holds and has not used yet.
    private(set) var credits = 0
    /// Entries per key (expired or not).
    private var perKey = KeyCounts()
    /// The latest `now` at which expired entries were dropped: a nonce whose token expired at
    /// or before it may have been forgotten.
    private(set) var droppedThrough = Int64.min
    /// Full scans so far, and the `now` of the last one.
    private(set) var scans = 0
    private var scannedAt = Int64.min
    /// The table size a rebuild does not grow past while the entries fit: twice the shard's
    /// even part of the capacity. A shard that holds more (keyed hashing makes it rare) doubles.
    private let sizeBound: Int

    /// - Parameter evenShare: the shard's part of the guard's capacity, spread evenly.
    init(evenShare: Int) throws(SignCoreError) {
        sizeBound = Self.powerOfTwo(atLeast: 2 * (evenShare + 1))
        slots = try Self.allocate(16)
    }

    deinit { Self.release(slots) }

    var address: UInt { UInt(bitPattern: slots.baseAddress) }
    var mask: Int { slots.count - 1 }

    /// Records the pair; false when there is no room and `borrow` (slots from the guard's
    /// budget) lends none.
    mutating func record(_ pair: InMemoryReplayGuard.HashedNonce, expires: Int64, now: Int64, perKeyLimit: Int,
                         borrow: () -> Int) throws(SignCoreError) -> Bool {
        guard expires > droppedThrough else {
            throw SignCoreError(.expired, "the token expired before a time whose nonces the replay guard has already dropped")
        }
        let entry = Entry(nonce: pair.nonce.words, key: pair.key | 1, hash: pair.hash, expires: expires)
        var index = entry.home(slots.count - 1)
        while !slots[index].isEmpty {
            if slots[index].hash == entry.hash, slots[index].key == entry.key, slots[index].nonce == entry.nonce {
                guard slots[index].expires <= now else { throw SignCoreError(.replayed, "this token was already used") }
                slots[index].expires = entry.expires  // the earlier token has expired: the nonce may serve again
                return true
            }
            index = (index + 1) & (slots.count - 1)
        }
        let countsKeys = perKeyLimit != .max  // a guard without a share per key keeps no counts
        if countsKeys, perKey.count(of: entry.key) >= perKeyLimit {
            if now != scannedAt { try rebuild(now: now) }
            guard perKey.count(of: entry.key) < perKeyLimit else {
                throw SignCoreError(.overloaded, "this key holds its share of the replay guard; retry later")
            }
        }
        if credits == 0 { credits = borrow() }
        if credits == 0, now != scannedAt { try rebuild(now: now) }
        guard credits > 0 else { return false }
        if 2 * (used + 1) > slots.count {
            if now != scannedAt { try rebuild(now: now) }
            if 2 * (used + 1) > slots.count { try rebuild(now: now, size: 2 * slots.count) }  // no room even so
        }
        insert(entry)
        credits -= 1
        if countsKeys { perKey.add(entry.key, 1) }
        return true
    }

    /// Hands back every credit, after dropping expired entries when `scan` (a full scan, at most
    /// once per `now`); returns the credits handed back.
    mutating func sweep(now: Int64, scan: Bool) -> Int {
        if scan, now != scannedAt { try? rebuild(now: now) }  // on a failed allocation the table stays as it was
        defer { credits = 0 }
        return credits
    }

    /// Credits above `keeping` twice over, handed back to the guard's budget.
    mutating func surplus(keeping: Int) -> Int {
        guard credits > 2 * keeping else { return 0 }
        let extra = credits - keeping
        credits = keeping
        return extra
    }

    static var full: SignCoreError {
        SignCoreError(.overloaded, "the replay guard is full of unexpired nonces; retry later")
    }

    /// Keeps the unexpired entries only, in a table sized for them and the room to come; the
    /// dropped entries' slots become credits again.
    /// `size`, when given, is the new table's size; by default room for four times the live
    /// entries, within `sizeBound` as long as they fit.
    private mutating func rebuild(now: Int64, size: Int? = nil) throws(SignCoreError) {
        scans += 1
        scannedAt = now
        var live = 0
        for entry in slots where !entry.isEmpty && entry.expires > now { live += 1 }
        let size = size ?? max(Self.powerOfTwo(atLeast: 2 * (live + 1)),
                               min(Self.powerOfTwo(atLeast: 4 * (live + 1)), sizeBound))
        let fresh = try Self.allocate(size)
        let old = slots
        slots = fresh
        credits += used - live
        used = 0
        droppedThrough = max(droppedThrough, now)
        for entry in old where !entry.isEmpty {
            if entry.expires > now { insert(entry) } else if !perKey.isEmpty { perKey.add(entry.key, -1) }
        }
        perKey.compact()
        Self.release(old)
    }

    private mutating func insert(_ entry: Entry) {
        let mask = slots.count - 1
        var index = entry.home(mask)
        while !slots[index].isEmpty { index = (index + 1) & mask }
        slots[index] = entry
        used += 1
    }

    /// Tables from this size on come from the kernel in huge pages (`sc_pages_zeroed`).
    private static let pageTableBytes = 2 << 20

    /// A zeroed table: every slot empty. A failed allocation is `overloaded`, never a crash.
    static func allocate(_ count: Int) throws(SignCoreError) -> UnsafeMutableBufferPointer<Entry> {
        let bytes = count * MemoryLayout<Entry>.stride
        guard let memory = bytes >= pageTableBytes ? sc_pages_zeroed(bytes) : calloc(count, MemoryLayout<Entry>.stride) else {
            throw SignCoreError(.overloaded, "the replay guard could not allocate memory; retry later")
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

/// Entries per key in one shard: a small open-addressing map from a key's tag (already a keyed
/// hash, so its bits pick the slot) to a count. Keys whose count falls to zero leave when the
/// shard rebuilds.
struct KeyCounts {
    private var tags: [UInt64] = Array(repeating: 0, count: 8)
    private var counts: [Int] = Array(repeating: 0, count: 8)
    private var occupied = 0

    /// Whether no key was ever counted (a guard without a share per key).
    var isEmpty: Bool { occupied == 0 }

    func count(of tag: UInt64) -> Int {
        let mask = tags.count - 1
        var index = Int(truncatingIfNeeded: tag >> 7) & mask
        while tags[index] != 0 {
            if tags[index] == tag { return counts[index] }
            index = (index + 1) & mask
        }
        return 0
    }

    /// Adds `delta` to the count of `tag` (a non-zero tag).
    mutating func add(_ tag: UInt64, _ delta: Int) {
        let mask = tags.count - 1
        var index = Int(truncatingIfNeeded: tag >> 7) & mask
        while tags[index] != 0 {
            if tags[index] == tag {
                counts[index] += delta
                return
            }
            index = (index + 1) & mask
        }
        tags[index] = tag
        counts[index] = delta
        occupied += 1
        if 2 * occupied > tags.count { resize(to: tags.count * 2) }
    }

    /// Forgets keys with no entries left, and shrinks to fit the rest.
    mutating func compact() {
        guard occupied > 0 else { return }
        var size = 8
        var live = 0
        for count in counts where count != 0 { live += 1 }
        while size < 4 * live { size *= 2 }
        resize(to: size)
    }

    private mutating func resize(to size: Int) {
        let oldTags = tags, oldCounts = counts
        tags = Array(repeating: 0, count: size)
        counts = Array(repeating: 0, count: size)
        occupied = 0
        for (tag, count) in zip(oldTags, oldCounts) where tag != 0 && count != 0 {
            let mask = size - 1
            var index = Int(truncatingIfNeeded: tag >> 7) & mask
            while tags[index] != 0 { index = (index + 1) & mask }
            tags[index] = tag
            counts[index] = count
            occupied += 1
        }
    }
}
