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
    /// 32 bytes, so an entry never straddles two cache lines.
    struct Entry {
        var nonce: (UInt64, UInt64)
        /// The keyed hash of (key, nonce) with its lowest bit set: never zero in an occupied
        /// slot. Two pairs are the same when their nonces and hashes are: a different key with
        /// the same nonce shares the 64-bit hash with probability 2⁻⁶⁴, and the hash's seed is
        /// secret, so no one can search for such a key.
        var hash: UInt64
        /// The expiry (low 40 bits) and the key's slot in `KeyCounts` (high 24 bits; 0 when
        /// the guard keeps no counts).
        var meta: UInt64

        init(nonce: (UInt64, UInt64), hash: UInt64, expires: Int64, keySlot: Int) {
            self.nonce = nonce
            self.hash = hash | 1
            meta = UInt64(clamping: min(max(expires, 0), Self.maxExpires)) | UInt64(keySlot) << 40
        }

        /// Expiries are held in 40 bits (a token's is below 2³⁷); a later one is kept as this.
        static let maxExpires: Int64 = (1 << 40) - 1

        var expires: Int64 {
            get { Int64(meta & UInt64(Self.maxExpires)) }
            set { meta = meta & ~UInt64(Self.maxExpires) | UInt64(clamping: min(max(newValue, 0), Self.maxExpires)) }
        }
        var keySlot: Int {
            get { Int(meta >> 40) }
            set { meta = meta & UInt64(Self.maxExpires) | UInt64(newValue) << 40 }
        }
        var isEmpty: Bool { hash == 0 }
        /// The first slot to probe (the hash bits above the one that is always set).
        func home(_ mask: Int) -> Int { Self.home(hash: hash, mask: mask) }
        static func home(hash: UInt64, mask: Int) -> Int { Int(truncatingIfNeeded: hash >> 1) & mask }
    }

    private var slots: UnsafeMutableBufferPointer<Entry>
    /// Occupied slots, expired or not.
    private(set) var used = 0
    /// Slots of the guard's budget this shard holds and has not used yet.
    private(set) var credits = 0
    /// Entries per key (expired or not), when the guard bounds each key's share.
    private var perKey = KeyCounts()
    /// The latest expiry of an entry dropped so far: a nonce whose token expired at or before
    /// it may have been forgotten, so such a token is refused (the clock may have stepped back).
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
        let hash = pair.hash | 1
        var index = Entry.home(hash: hash, mask: slots.count - 1)
        while !slots[index].isEmpty {
            if slots[index].hash == hash, slots[index].nonce == pair.nonce.words {
                guard slots[index].expires <= now else { throw SignCoreError(.replayed, "this token was already used") }
                slots[index].expires = expires  // the earlier token has expired: the nonce may serve again
                return true
            }
            index = (index + 1) & (slots.count - 1)
        }
        let countsKeys = perKeyLimit != .max  // a guard without a share per key keeps no counts
        if countsKeys, perKey.count(of: pair.key) >= perKeyLimit {
            if now != scannedAt { try rebuild(now: now) }
            guard perKey.count(of: pair.key) < perKeyLimit else {
                throw SignCoreError(.overloaded, "this key holds its share of the replay guard; retry later")
            }
        }
        if credits == 0 { credits = borrow() }
        if credits == 0, now != scannedAt { try rebuild(now: now) }
        guard credits > 0 else { return false }
        if 2 * (used + 1) > slots.count {
            // Grow (room for four times the live entries); at the size bound, rescan at most
            // once per second of `now`, and double when even that leaves no room.
            if slots.count < sizeBound || now != scannedAt { try rebuild(now: now) }
            if 2 * (used + 1) > slots.count { try rebuild(now: now, size: 2 * slots.count) }
        }
        let keySlot = countsKeys ? try perKey.add(pair.key) : 0
        insert(Entry(nonce: pair.nonce.words, hash: hash, expires: expires, keySlot: keySlot))
        credits -= 1
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
        var live = 0, latestDropped = droppedThrough
        for entry in slots where !entry.isEmpty {
            if entry.expires > now { live += 1 } else { latestDropped = max(latestDropped, entry.expires) }
        }
        let size = size ?? max(Self.powerOfTwo(atLeast: 2 * (live + 1)),
                               min(Self.powerOfTwo(atLeast: 4 * (live + 1)), sizeBound))
        let fresh = try Self.allocate(size)
        let old = slots
        slots = fresh
        credits += used - live
        used = 0
        droppedThrough = latestDropped
        if perKey.isEmpty {
            for entry in old where !entry.isEmpty && entry.expires > now { insert(entry) }
        } else {
            for entry in old where !entry.isEmpty && entry.expires <= now { perKey.remove(slot: entry.keySlot) }
            let renumbered = perKey.compacted()
            for var entry in old where !entry.isEmpty && entry.expires > now {
                entry.keySlot = renumbered[entry.keySlot]
                insert(entry)
            }
        }
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

/// Entries per key in one shard. Each key seen gets a slot (1, 2, ...; entries hold it in
/// 24 bits); an index from the key's tag (already a keyed hash, so its bits pick the place)
/// finds the slot. Keys whose count falls to zero leave when the shard rebuilds.
struct KeyCounts {
    /// By slot (slot 0 unused: "no key").
    private var tags: [UInt64] = [0]
    private var counts: [Int] = [0]
    /// Open addressing: the slot of a tag, 0 for an empty place.
    private var index: [Int32] = Array(repeating: 0, count: 8)

    static let maxSlots = 1 << 24

    /// Whether no key is counted (a guard without a share per key).
    var isEmpty: Bool { tags.count == 1 }

    private func place(of tag: UInt64) -> (Int, found: Bool) {
        let mask = index.count - 1
        var place = Int(truncatingIfNeeded: tag >> 7) & mask
        while index[place] != 0 {
            if tags[Int(index[place])] == tag { return (place, true) }
            place = (place + 1) & mask
        }
        return (place, false)
    }

    func count(of tag: UInt64) -> Int {
        let (place, found) = place(of: tag)
        return found ? counts[Int(index[place])] : 0
    }

    /// Counts one more entry of `tag`; its slot. `overloaded` past 2²⁴ − 1 keys in one shard.
    mutating func add(_ tag: UInt64) throws(SignCoreError) -> Int {
        let (place, found) = place(of: tag)
        if found {
            let slot = Int(index[place])
            counts[slot] += 1
            return slot
        }
        guard tags.count < Self.maxSlots else {
            throw SignCoreError(.overloaded, "the replay guard holds too many keys; retry later")
        }
        tags.append(tag)
        counts.append(1)
        index[place] = Int32(tags.count - 1)
        if 2 * tags.count > index.count { reindex(size: index.count * 2) }
        return tags.count - 1
    }

    mutating func remove(slot: Int) {
        counts[slot] -= 1
    }

    /// Drops the keys without entries and renumbers the rest; the new slot of each old one.
    mutating func compacted() -> [Int] {
        var renumbered = Array(repeating: 0, count: tags.count)
        var keptTags: [UInt64] = [0], keptCounts = [0]
        for slot in 1..<tags.count where counts[slot] > 0 {
            renumbered[slot] = keptTags.count
            keptTags.append(tags[slot])
            keptCounts.append(counts[slot])
        }
        tags = keptTags
        counts = keptCounts
        var size = 8
        while size < 2 * tags.count { size *= 2 }
        reindex(size: size)
        return renumbered
    }

    private mutating func reindex(size: Int) {
        index = Array(repeating: 0, count: size)
        for slot in 1..<tags.count {
            let (place, _) = place(of: tags[slot])
            index[place] = Int32(slot)
        }
    }
}
