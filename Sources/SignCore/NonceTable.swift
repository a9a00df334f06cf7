import CSignBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One shard of the replay guard: an open-addressing table of (key, nonce) entries with linear
/// probing, with the shard's part of the guard's budget and its count of entries per key.
///
/// Expiry runs continuously and in small steps: every record first looks at the next
/// `sweepPerRecord` slots after a cursor that cycles through the table and deletes the expired
/// entries it finds there (backward-shift deletion: no tombstones, probe chains stay as short
/// as the live entries make them). An expired entry therefore lingers at most one cycle of the
/// cursor, which at any steady rate keeps at most `1/sweepPerRecord` of the table dead. When
/// the shard has no budget left it sweeps the whole table, at most once per second of `now`,
/// so a flood against a full guard cannot make every verify rescan it.
///
/// Resizing is incremental too, so no record waits on a pass over the table: past 70 % full
/// (or, at the end of a sweep cycle, under an eighth full) a new table of twice the entries
/// (when shrinking, at least a quarter of the old table) is allocated and the old one is
/// drained into it, `migratePerRecord` slots per record (times the ratio of the old size to
/// the new, when shrinking), unexpired entries moved and expired ones dropped. Until it is
/// empty, a record looks in both (the shard prefetches the pair's slot in each). Either way
/// the old table is empty long before the new one can fill, and while the table grows, about
/// one record in five finds a table draining.
///
/// Table sizes are not powers of two (a slot is picked by a multiply), so memory follows the
/// live entries closely: 16 bytes a slot, about 32 bytes per live nonce in a steady state.
/// `@unchecked Sendable`: its memory is reached only through its shard's lock.
struct NonceTable: ~Copyable, @unchecked Sendable {
    /// 16 bytes: four to a cache line.
    struct Entry {
        /// The keyed hash of (key, nonce) with its lowest bit set: never zero in an occupied
        /// slot. Its high 32 bits picked the shard, its low 32 the home slot.
        var hash: UInt64
        /// The expiry in seconds (low 32 bits; later ones are kept as 2³² − 1, in 2106), 12
        /// check bits of the nonce and key (`HashedNonce.check`), and the key's slot in
        /// `KeyCounts` (high 20 bits; 0 when the guard keeps no counts).
        var meta: UInt64

        init(hash: UInt64, check: UInt64, expires: Int64, keySlot: Int) {
            self.hash = hash | 1
            meta = Self.clamped(expires) | (check & 0xFFF) << 32 | UInt64(keySlot) << 44
        }

        private init(emptyHash: UInt64, meta: UInt64) {
            hash = emptyHash
            self.meta = meta
        }

        /// An empty slot: all zero bits, as `calloc` and fresh pages give.
        static let empty = Entry(emptyHash: 0, meta: 0)

        static func clamped(_ expires: Int64) -> UInt64 { UInt64(clamping: min(max(expires, 0), 0xFFFF_FFFF)) }

        var expires: Int64 {
            get { Int64(meta & 0xFFFF_FFFF) }
            set { meta = meta & ~0xFFFF_FFFF | Self.clamped(newValue) }
        }
        var keySlot: Int { Int(meta >> 44) }
        var isEmpty: Bool { hash == 0 }

        /// Whether this entry holds the pair: 63 bits of keyed hash and 12 check bits.
        func holds(hash: UInt64, check: UInt64) -> Bool {
            self.hash == hash | 1 && (meta >> 32) & 0xFFF == check & 0xFFF
        }
    }

    private var slots: UnsafeMutableBufferPointer<Entry>
    /// The previous table while it is drained into `slots`: its slots below `migrated` have
    /// been moved (their copies there are ignored), the rest not yet. Never written but to mark
    /// an entry dead, so its probe runs stay intact.
    private var draining: UnsafeMutableBufferPointer<Entry>?
    private var migrated = 0
    /// Entries held, expired or not, in both tables.
    private(set) var used = 0
    /// Slots of the guard's budget this shard holds and has not used yet.
    private(set) var credits = 0
    /// Entries per key, when the guard bounds each key's share.
    private var perKey = KeyCounts()
    /// The latest expiry of an entry dropped so far: a nonce whose token expired at or before
    /// it may have been forgotten, so such a token is refused (the clock may have stepped back).
    private(set) var droppedThrough = Int64.min
    /// Full sweeps, resizes and drains a record had to finish at once, so far (for tests), and
    /// the `now` of the last full sweep.
    private(set) var scans = 0
    private(set) var resizes = 0
    private(set) var forcedDrains = 0
    private var scannedAt = Int64.min
    /// Where the incremental sweep looks next.
    private var cursor = 0

    /// Slots the incremental sweep examines per record.
    static let sweepPerRecord = 8
    /// Slots of a draining table moved per record. A table of S slots starts draining at 0.7 S
    /// entries into one of 1.4 S, which is 70 % full 0.28 S records later: at least 3.6 are needed.
    /// A shrink from S slots under S/8 entries makes a table of N ≥ S/4 slots, at most half full,
    /// which takes 0.2 N records to reach 70 %; moving 16 × ⌊S/N⌋ slots a record drains it in
    /// under 0.1 N (a smaller table would need a pass over much of the old one).
    static let migratePerRecord = 16

    init() throws(SignCoreError) {
        slots = try Self.allocate(Self.minimumSize)
    }

    deinit {
        Self.release(slots)
        if let draining { Self.release(draining) }
    }

    /// Where the tables lie, for the shard's prefetch hint.
    struct Layout {
        var address: UInt, size: Int
        /// The draining table's; 0 and 0 for none.
        var drainingAddress: UInt, drainingSize: Int
    }

    var layout: Layout {
        Layout(address: UInt(bitPattern: slots.baseAddress), size: slots.count,
               drainingAddress: UInt(bitPattern: draining?.baseAddress), drainingSize: draining?.count ?? 0)
    }

    /// Whether the layout changed (a table allocated or released) since `takeLayoutChange`
    /// last returned it; true at first, so that the first table is published.
    private var layoutChanged = true

    /// The layout when it has changed since the last call, else nil: the shard publishes its
    /// hint only then, under its lock.
    @inline(__always)
    mutating func takeLayoutChange() -> Layout? {
        guard layoutChanged else { return nil }
        layoutChanged = false
        return layout
    }
    var bytes: Int { (slots.count + (draining?.count ?? 0)) * MemoryLayout<Entry>.stride }

    /// The first slot to probe for a pair's hash in a table of `size` slots: the low 32 bits
    /// scaled by a multiply (the shard was picked from the high 32).
    static func home(hash: UInt64, size: Int) -> Int {
        Int(truncatingIfNeeded: ((hash & 0xFFFF_FFFF) &* UInt64(size)) >> 32)
    }

    /// Records the pair; false when there is no room and `borrow` (slots from the guard's
    /// budget) lends none. (Inlined into the shard's locked closure: a call here would add
    /// its register saves to every verify.)
    @inline(__always)
    mutating func record(_ pair: InMemoryReplayGuard.HashedNonce, expires: Int64, now: Int64, perKeyLimit: Int,
                         borrow: () -> Int) throws(SignCoreError) -> Bool {
        guard expires > droppedThrough else {
            throw SignCoreError(.expired, "the token expired before a time whose nonces the replay guard has already dropped")
        }
        sweepSome(now: now)
        if draining != nil { migrateSome(now: now) }
        var index = Self.home(hash: pair.hash, size: slots.count)
        while !slots[index].isEmpty {
            if slots[index].holds(hash: pair.hash, check: pair.check) {
                guard slots[index].expires <= now else { throw SignCoreError(.replayed, "this token was already used") }
                slots[index].expires = expires  // the earlier token has expired: the nonce may serve again
                return true
            }
            index = index + 1 == slots.count ? 0 : index + 1
        }
        if let draining { try checkDraining(draining, pair, now: now) }
        // The empty slot the probe stopped at takes the entry, unless the table changes first
        // (a full sweep moves entries, a resize or a finished drain replaces or fills the table).
        var place: Int? = index
        let countsKeys = perKeyLimit != .max  // a guard without a share per key keeps no counts
        if countsKeys, perKey.count(of: pair.key) >= perKeyLimit {
            if now != scannedAt {
                sweepAll(now: now)
                place = nil
            }
            guard perKey.count(of: pair.key) < perKeyLimit else {
                throw SignCoreError(.overloaded, "this key holds its share of the replay guard; retry later")
            }
        }
        if credits == 0 { credits = borrow() }
        if credits == 0, now != scannedAt {
            sweepAll(now: now)
            place = nil
        }
        guard credits > 0 else { return false }
        if 10 * (used + 1) > 7 * slots.count {
            if draining != nil {  // (only after a burst the drain could not keep up with)
                forcedDrains += 1
                finishDraining(now: now)
            }
            if 10 * (used + 1) > 7 * slots.count { try resize(now: now) }
            place = nil
        }
        let keySlot = countsKeys ? try perKey.add(pair.key) : 0
        let entry = Entry(hash: pair.hash, check: pair.check, expires: expires, keySlot: keySlot)
        if let place { slots[place] = entry } else { insert(entry) }
        used += 1
        credits -= 1
        return true
    }

    /// The pair in the part of the draining table not moved yet: a replay when unexpired; an
    /// expired entry is marked dead there (expiry 0), so that the drain drops it rather than
    /// move it beside the new one if the clock should step back, and counts as dropped now
    /// (`droppedThrough`), as a deletion would.
    private mutating func checkDraining(_ old: UnsafeMutableBufferPointer<Entry>, _ pair: InMemoryReplayGuard.HashedNonce,
                                        now: Int64) throws(SignCoreError) {
        var index = Self.home(hash: pair.hash, size: old.count)
        while !old[index].isEmpty {
            if index >= migrated, old[index].holds(hash: pair.hash, check: pair.check) {
                guard old[index].expires <= now else { throw SignCoreError(.replayed, "this token was already used") }
                droppedThrough = max(droppedThrough, old[index].expires)
                old[index].expires = 0
                return
            }
            index = index + 1 == old.count ? 0 : index + 1
        }
    }

    /// Hands back every credit, after a full sweep when `scan` (at most once per `now`);
    /// returns the credits handed back.
    mutating func handBack(now: Int64, scan: Bool) -> Int {
        if scan, now != scannedAt { sweepAll(now: now) }
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

    // MARK: Expiry

    /// The incremental sweep: `sweepPerRecord` steps of the cursor, each deleting an expired
    /// entry (whose place the next entry of its run may take, so the cursor stays) or moving
    /// on. A completed cycle over a table less than an eighth full starts shrinking it (when the
    /// smaller table cannot be allocated, the table stays as it is: shrinking never fails a record).
    private mutating func sweepSome(now: Int64) {
        guard used > 0 else { return }
        // The cursor and the table in locals (a deletion moves entries, never the table), the
        // cursor stored back once: the steps read only the slots.
        let table = slots
        var index = cursor
        for _ in 0..<Self.sweepPerRecord {
            let entry = table[index]
            if !entry.isEmpty, entry.expires <= now {
                delete(at: index)
            } else {
                index &+= 1
                if index == table.count {
                    cursor = 0
                    if 8 * used < slots.count, slots.count > Self.minimumSize, draining == nil { try? resize(now: now) }
                    return
                }
            }
        }
        cursor = index
        Self.prefetch(table, from: index, slots: Self.sweepPerRecord)
    }

    /// Starts loading the `count` slots from `index` on (reading past the table's end is
    /// harmless: a prefetch never faults). The sweep and the drain read the slots after where
    /// they stopped at this shard's next record, which comes after records of the other
    /// shards: without this, each begins with cold cache lines of a table far larger than
    /// the caches.
    @inline(__always)
    private static func prefetch(_ table: UnsafeMutableBufferPointer<Entry>, from index: Int, slots count: Int) {
        guard let base = table.baseAddress else { return }
        let start = UnsafeRawPointer(base + index), bytes = count * MemoryLayout<Entry>.stride
        for offset in stride(from: 0, to: bytes, by: 64) { sc_prefetch_for_write(start + offset) }
        sc_prefetch_for_write(start + (bytes - 1))  // the last line, when `start` is not line-aligned
    }

    /// Deletes every expired entry (a full pass, a draining table emptied first; at most once per `now`).
    private mutating func sweepAll(now: Int64) {
        finishDraining(now: now)
        scans += 1
        scannedAt = now
        var index = 0
        while index < slots.count {
            if !slots[index].isEmpty, slots[index].expires <= now { delete(at: index) } else { index += 1 }
        }
    }

    /// Removes the entry at `index` and closes the gap: each later entry of the same run moves
    /// back into the hole unless that would put it before its home slot (Knuth's algorithm R).
    private mutating func delete(at index: Int) {
        drop(slots[index])
        let table = slots, count = table.count
        var hole = index, next = index
        while true {  // indices below count: wrapping arithmetic cannot overflow
            next = next &+ 1 == count ? 0 : next &+ 1
            let entry = table[next]
            if entry.isEmpty { break }
            let home = Self.home(hash: entry.hash, size: count)
            // Movable when its home is not cyclically within (hole, next].
            let homeToNext = next >= home ? next &- home : next &+ count &- home
            let holeToNext = next >= hole ? next &- hole : next &+ count &- hole
            if homeToNext >= holeToNext {
                table[hole] = entry
                hole = next
            }
        }
        table[hole] = .empty
    }

    /// Forgets an expired entry: its key's count, its slot back to the budget.
    private mutating func drop(_ entry: Entry) {
        droppedThrough = max(droppedThrough, entry.expires)
        if entry.keySlot != 0 { perKey.remove(slot: entry.keySlot) }
        used -= 1
        credits += 1
    }

    /// Starts draining the table into a new one of twice its entries (at least the minimum, and
    /// a quarter of this one: see `migratePerRecord`).
    private mutating func resize(now: Int64) throws(SignCoreError) {
        let fresh = try Self.allocate(max(Self.minimumSize, 2 * (used + 1), slots.count / 4))
        resizes += 1
        layoutChanged = true
        draining = slots
        migrated = 0
        slots = fresh
        cursor = 0
        migrateSome(now: now)
    }

    /// Moves the next slots of the draining table (`slotCount`, by default `migratePerRecord`
    /// times the ratio of its size to the table's): unexpired entries into the table, expired
    /// ones dropped; releases it once it is empty.
    private mutating func migrateSome(now: Int64, slotCount: Int? = nil) {
        guard let old = draining else { return }
        let step = Self.migratePerRecord * max(1, old.count / slots.count)
        let end = min(old.count, migrated + (slotCount ?? step))
        while migrated < end {
            let entry = old[migrated]
            if !entry.isEmpty {
                if entry.expires > now { insert(entry) } else { drop(entry) }
            }
            migrated += 1
        }
        if migrated == old.count {
            Self.release(old)
            draining = nil
            layoutChanged = true
        } else {
            Self.prefetch(old, from: migrated, slots: step)
        }
    }

    private mutating func finishDraining(now: Int64) {
        if let old = draining { migrateSome(now: now, slotCount: old.count) }
    }

    /// Puts an entry at the first empty slot of its run (the caller counts it in `used`).
    private mutating func insert(_ entry: Entry) {
        var index = Self.home(hash: entry.hash, size: slots.count)
        while !slots[index].isEmpty { index = index + 1 == slots.count ? 0 : index + 1 }
        slots[index] = entry
    }

    // MARK: Memory

    static let minimumSize = 16

    /// Tables from this size on come straight from the kernel (`sc_pages_zeroed`: in huge pages
    /// from 2 MiB) and go straight back to it. From malloc, the tables of 256 shards growing
    /// while old ones drain left the heap fragmented: the process held 334 MB for 174 MB of
    /// tables, against 239 MB when each old table was freed at once.
    private static let pageTableBytes = 128 << 10

    /// A zeroed table: every slot empty. A failed allocation is `overloaded`, never a crash.
    static func allocate(_ count: Int) throws(SignCoreError) -> UnsafeMutableBufferPointer<Entry> {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: MemoryLayout<Entry>.stride)
        guard !overflow, let memory = bytes >= pageTableBytes ? sc_pages_zeroed(bytes) : calloc(count, MemoryLayout<Entry>.stride) else {
            throw SignCoreError(.overloaded, "the replay guard could not allocate memory; retry later")
        }
        return UnsafeMutableBufferPointer(start: memory.bindMemory(to: Entry.self, capacity: count), count: count)
    }

    private static func release(_ table: UnsafeMutableBufferPointer<Entry>) {
        let bytes = table.count * MemoryLayout<Entry>.stride
        if bytes >= pageTableBytes { sc_pages_free(table.baseAddress, bytes) } else { free(table.baseAddress) }
    }
}

/// Entries per key in one shard. Each key with entries has a slot (1, 2, ...; entries hold it
/// in 20 bits); an index from the key's tag (already a keyed hash, so its bits pick the place)
/// finds the slot. A key whose count falls to zero leaves the index and its slot is reused, so
/// the counts follow the keys that hold entries, however many keys come and go.
struct KeyCounts {
    /// By slot (slot 0 unused: "no key").
    private var tags: [UInt64] = [0]
    private var counts: [Int] = [0]
    private var freeSlots: [Int] = []
    /// Open addressing: the slot of a tag, 0 for an empty place.
    private var index: [Int32] = Array(repeating: 0, count: 8)
    private var keys = 0

    static let maxSlots = 1 << 20

    private func home(of tag: UInt64) -> Int { Int(truncatingIfNeeded: tag >> 7) & (index.count - 1) }

    private func place(of tag: UInt64) -> (Int, found: Bool) {
        let mask = index.count - 1
        var place = home(of: tag)
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

    /// Counts one more entry of `tag`; its slot. `overloaded` past 2²⁰ − 1 keys with entries in one shard.
    mutating func add(_ tag: UInt64) throws(SignCoreError) -> Int {
        let (place, found) = place(of: tag)
        if found {
            let slot = Int(index[place])
            counts[slot] += 1
            return slot
        }
        let slot: Int
        if let reused = freeSlots.popLast() {
            slot = reused
            tags[slot] = tag
            counts[slot] = 1
        } else {
            guard tags.count < Self.maxSlots else {
                throw SignCoreError(.overloaded, "the replay guard holds too many keys; retry later")
            }
            slot = tags.count
            tags.append(tag)
            counts.append(1)
        }
        index[place] = Int32(slot)
        keys += 1
        if 2 * keys > index.count { reindex(size: index.count * 2) }
        return slot
    }

    /// One entry of the key in `slot` is gone; at zero the key leaves.
    mutating func remove(slot: Int) {
        counts[slot] -= 1
        guard counts[slot] == 0 else { return }
        let (place, _) = place(of: tags[slot])
        // Backward-shift deletion, as in NonceTable.delete.
        let mask = index.count - 1
        var hole = place, next = place
        while true {
            next = (next + 1) & mask
            if index[next] == 0 { break }
            let home = home(of: tags[Int(index[next])])
            if (next - home) & mask >= (next - hole) & mask {
                index[hole] = index[next]
                hole = next
            }
        }
        index[hole] = 0
        freeSlots.append(slot)
        keys -= 1
    }

    private mutating func reindex(size: Int) {
        index = Array(repeating: 0, count: size)
        for slot in 1..<tags.count where counts[slot] > 0 {
            let (place, _) = place(of: tags[slot])
            index[place] = Int32(slot)
        }
    }
}
