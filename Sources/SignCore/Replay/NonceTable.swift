#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One shard of the replay guard: its part of the (key, nonce, expiry) entries, in one table per
/// second of expiry (SPEC §5 step 10: a replay repeats its token, expiry and all, so an entry is
/// looked for only among those that expire in the same second).
///
/// Why by second: a fresh nonce's slot is random, and a table holding every live nonce (rate ×
/// lifetime of them, far beyond the caches) costs each record a cache miss and a page walk
/// however early its slot is prefetched (README, Performance). The tables that take new
/// entries hold about one second of them, whatever the tokens' lifetime.
///
/// Expiry drops a whole second at once, when `now` reaches it: its tables go to a pool for a
/// later second, not zeroed (a slot is occupied only when it carries its table's current epoch),
/// and are unmapped after two seconds unused. A record never waits on more than dropping the
/// seconds that passed since the shard's last record and, when the guard bounds each key's
/// share, uncounting `uncountPerRecord` slots of dropped tables.
///
/// Sizing: a second's first table is sized from the most entries a second of this shard has
/// taken lately (5/8 full at that peak), unless the live tables already hold several times the
/// live entries (then 16 slots: memory stays proportional to the entries however they are
/// spread over seconds); a second that outgrows its table (80 %) gets another, twice as large,
/// in its chain, and a record looks in each (usually one; a few while the rate climbs). No
/// table is ever rehashed. In a steady state, tables are a little over half full:
/// about 28 bytes a live nonce, and one table per second of lifetime and shard (at least 16
/// slots: 256 bytes).
/// `@unchecked Sendable`: its memory is reached only through its shard's lock.
struct NonceTable: ~Copyable, @unchecked Sendable {
    /// 16 bytes: four to a cache line.
    struct Entry {
        /// The keyed hash of (key, nonce) (occupancy is the epoch's, so all 64 bits count). Its high 32 bits picked the shard, its
        /// low 32 the home slot.
        var hash: UInt64
        /// The table's epoch when written (low 32 bits: a slot of another epoch is empty), 12
        /// check bits of the nonce and key (`HashedNonce.check`), and the key's slot in
        /// `KeyCounts` (high 20 bits; 0 when the guard keeps no counts).
        var meta: UInt64

        var epoch: UInt32 { UInt32(truncatingIfNeeded: meta) }
        var keySlot: Int { Int(meta >> 44) }

        /// Whether this entry, found in a table of `epoch`, holds the pair: 64 bits of keyed
        /// hash and 12 check bits.
        @inline(__always)
        func holds(hash: UInt64, check: UInt64, epoch: UInt32) -> Bool {
            self.hash == hash && meta & 0xFFF_FFFF_FFFF == (check & 0xFFF) << 32 | UInt64(epoch)
        }
    }

    /// Slots that hold one second's entries (or wait in the pool for a later second).
    struct Table {
        var slots: UnsafeMutableBufferPointer<Entry>
        /// Slots of another epoch are empty; it changes each time the table is reused.
        var epoch: UInt32
        var used = 0
        /// When it entered the pool.
        var pooledAt = Int64.min
    }

    /// The tables of one live second: the one inserts go to, and those it outgrew (usually none).
    struct Second {
        var expires: Int64
        var newest: Table
        var outgrown: [Table] = []
        var count = 0

        var tables: [Table] { outgrown + [newest] }
    }

    /// Live seconds, at stable indices (`vacant` lists the unused ones), found through `index`.
    private var seconds: [Second] = []
    private var vacant: [Int] = []
    private var index: [Int64: Int] = [:]
    /// The live seconds' expiries, soonest first (a binary heap).
    private var soonest: [Int64] = []
    /// Where the seconds recently used are, by their lowest two bits: the records of a moment
    /// use one or a few seconds (`index` finds the others).
    private var recent = [(expires: Int64, position: Int)](repeating: (.min, 0), count: NonceTable.recentCount)
    static let recentCount = 4
    /// Tables of dropped seconds, ready for reuse.
    private var pool: [Table] = []
    /// Dropped tables whose key counts are still being taken back (only when keys are counted).
    private var uncounting: [Table] = []
    private var uncounted = 0
    /// The most entries a second of this shard took lately: the size of a new second's table.
    private var recentPeak = 0
    /// The second made last, and where it is.
    private var newestExpires = Int64.min, newestPosition = -1

    /// Entries held, in every live second.
    private(set) var used = 0
    /// Slots of the live seconds' tables.
    private var liveSlots = 0
    /// Slots of the guard's budget this shard holds and has not used yet.
    private(set) var credits = 0
    /// Entries per key, when the guard bounds each key's share.
    private var perKey = KeyCounts()
    /// The latest expiry of an entry dropped so far: a token that expired at or before it may
    /// have been forgotten, so such a token is refused (the clock may have stepped back).
    private(set) var droppedThrough = Int64.min
    /// Full passes (`dropAllExpired`) and fresh tables allocated so far (for tests), and the `now`
    /// of the last full uncount.
    private(set) var scans = 0
    private(set) var allocations = 0
    private var scannedAt = Int64.min

    /// Slots of dropped tables uncounted per record.
    static let uncountPerRecord = 64
    /// The smallest table (slots).
    static let minimumSize = 16

    init() {}

    deinit {
        for second in seconds { for table in second.tables { Self.release(table.slots) } }
        for table in pool + uncounting { Self.release(table.slots) }
    }

    // MARK: Prefetch hint

    /// The table that takes a second's entries, for the shard's prefetch hint.
    struct Layout {
        var expires: Int64, address: UInt, size: Int
    }

    /// A second's table that changed (a new second, or a larger table in its chain) since
    /// `takeLayoutChange` last returned it: the shard publishes its hint only then, under its lock.
    private var changedLayout: Layout?

    @inline(__always)
    mutating func takeLayoutChange() -> Layout? {
        guard let layout = changedLayout else { return nil }
        changedLayout = nil
        return layout
    }

    var bytes: Int {
        let tables = seconds.flatMap(\.tables) + pool + uncounting
        return tables.reduce(0) { $0 + $1.slots.count * MemoryLayout<Entry>.stride }
    }

    /// The first slot to probe for a pair's hash in a table of `size` slots: the low 32 bits
    /// scaled by a multiply (the shard was picked from the high 32).
    @inline(__always)
    static func home(hash: UInt64, size: Int) -> Int {
        Int(truncatingIfNeeded: ((hash & 0xFFFF_FFFF) &* UInt64(size)) >> 32)
    }

    // MARK: Record

    /// Records the pair until `expires`; false when there is no room and `borrow` (slots from
    /// the guard's budget) lends none. (Inlined into the shard's locked closure: a call here
    /// would add its register saves to every verify.)
    @inline(__always)
    mutating func record(_ pair: InMemoryReplayGuard.HashedNonce, expires: Int64, now: Int64, perKeyLimit: Int,
                         borrow: () -> Int) throws(SignCoreError) -> Bool {
        guard expires > droppedThrough else {
            throw SignCoreError(.expired, "the token expired before a time whose nonces the replay guard has already dropped")
        }
        if let first = soonest.first, first <= now { drop(through: now) }
        if !uncounting.isEmpty { uncount(slots: Self.uncountPerRecord) }
        guard expires > now else {
            // Expired already: nothing to remember, and forgotten at once, as a dropped entry is.
            droppedThrough = max(droppedThrough, expires)
            return true
        }
        let cached = Int(truncatingIfNeeded: expires) & (Self.recentCount - 1)
        var position = recent[cached].expires == expires ? recent[cached].position : -1
        if position < 0, let found = index[expires] {
            position = found
            recent[cached] = (expires, found)
        }
        var place = -1
        if position >= 0 {
            if !seconds[position].outgrown.isEmpty {
                for table in seconds[position].outgrown { _ = try Self.probe(table, for: pair) }
            }
            place = try Self.probe(seconds[position].newest, for: pair)
        }
        let countsKeys = perKeyLimit != .max  // a guard without a share per key keeps no counts
        if countsKeys, perKey.count(of: pair.key) >= perKeyLimit {
            if now != scannedAt { dropAllExpired(now: now) }
            guard perKey.count(of: pair.key) < perKeyLimit else {
                throw SignCoreError(.overloaded, "this key holds its share of the replay guard; retry later")
            }
        }
        if credits == 0 { credits = borrow() }
        if credits == 0, now != scannedAt { dropAllExpired(now: now) }
        guard credits > 0 else { return false }
        let keySlot = countsKeys ? try perKey.add(pair.key) : 0
        if position >= 0, 5 * (seconds[position].newest.used + 1) <= 4 * seconds[position].newest.slots.count {
            write(pair, keySlot: keySlot, at: place, in: position)  // the usual case: the second and its room exist
        } else {
            do throws(SignCoreError) {
                try insert(pair, keySlot: keySlot, expires: expires, at: position)
            } catch {
                if keySlot != 0 { perKey.remove(slot: keySlot) }
                throw error
            }
        }
        used += 1
        credits -= 1
        return true
    }

    /// The slot where the probe for the pair stopped, empty; `replayed` when the table holds it.
    @inline(__always)
    private static func probe(_ table: Table, for pair: InMemoryReplayGuard.HashedNonce) throws(SignCoreError) -> Int {
        let slots = table.slots, epoch = table.epoch
        var slot = home(hash: pair.hash, size: slots.count)
        while slots[slot].epoch == epoch {
            if slots[slot].holds(hash: pair.hash, check: pair.check, epoch: epoch) {
                throw SignCoreError(.replayed, "this token was already used")
            }
            slot = slot + 1 == slots.count ? 0 : slot + 1
        }
        return slot
    }

    /// Writes the entry at `place` (where the probe stopped, empty) in the newest table of the
    /// second at `position`.
    @inline(__always)
    private mutating func write(_ pair: InMemoryReplayGuard.HashedNonce, keySlot: Int, at place: Int, in position: Int) {
        let table = seconds[position].newest
        table.slots[place] = Entry(hash: pair.hash, meta: UInt64(table.epoch) | (pair.check & 0xFFF) << 32 | UInt64(keySlot) << 44)
        seconds[position].newest.used += 1
        seconds[position].count += 1
        recentPeak = max(recentPeak, seconds[position].count)
    }

    /// Adds the second (at no `position`) or, when its newest table is 80 % full, a table twice
    /// as large to its chain, then writes the entry there.
    private mutating func insert(_ pair: InMemoryReplayGuard.HashedNonce, keySlot: Int, expires: Int64,
                                 at position: Int) throws(SignCoreError) {
        var position = position
        if position < 0 {
            position = try addSecond(expires)
        } else {
            let grown = try table(slots: 2 * seconds[position].newest.slots.count)
            seconds[position].outgrown.append(seconds[position].newest)
            seconds[position].newest = grown
            liveSlots += grown.slots.count
            changedLayout = Layout(expires: expires, address: UInt(bitPattern: grown.slots.baseAddress), size: grown.slots.count)
        }
        write(pair, keySlot: keySlot, at: try Self.probe(seconds[position].newest, for: pair), in: position)
    }

    /// A live second for `expires`, with one table sized from the recent peak; its position.
    private mutating func addSecond(_ expires: Int64) throws(SignCoreError) -> Int {
        // The peak falls by a quarter a second, but not below the second made before this one
        // (it has taken about a second's entries): a falling rate gets smaller tables.
        let previous = seconds.indices.contains(newestPosition) && seconds[newestPosition].expires == newestExpires
            ? seconds[newestPosition].count : 0
        recentPeak = max(recentPeak - recentPeak / 4, previous)
        // At most 5/8 full at the recent peak; but a second that starts with no entries takes
        // such a table only while the live tables stay within a few times the live entries and
        // that peak: otherwise nonces spread over many seconds (a key holder choosing its
        // tokens' lifetimes) would cost a peak-sized table each. Such a second starts small and
        // doubles.
        var wanted = recentPeak + recentPeak * 3 / 5
        if liveSlots + wanted > 4 * used + 2 * wanted { wanted = Self.minimumSize }
        let first = try table(slots: wanted)
        liveSlots += first.slots.count
        let second = Second(expires: expires, newest: first)
        let position: Int
        if let reused = vacant.popLast() {
            seconds[reused] = second
            position = reused
        } else {
            seconds.append(second)
            position = seconds.count - 1
        }
        index[expires] = position
        (newestExpires, newestPosition) = (expires, position)
        recent[Int(truncatingIfNeeded: expires) & (Self.recentCount - 1)] = (expires, position)
        pushSoonest(expires)
        changedLayout = Layout(expires: expires, address: UInt(bitPattern: first.slots.baseAddress), size: first.slots.count)
        return position
    }

    /// A table of at least `slots` slots (`size(for:)`): the smallest in the pool that fits and
    /// has at most four times as many, else a new one. (A pooled table a little larger than the
    /// need is reused rather than unmapped while a new one is faulted in: the rate wavers.)
    private mutating func table(slots wanted: Int) throws(SignCoreError) -> Table {
        let size = Self.size(for: wanted)
        var found: Int?
        for (index, table) in pool.enumerated() where table.slots.count >= size && table.slots.count <= 4 * size {
            if found.map({ table.slots.count < pool[$0].slots.count }) ?? true { found = index }
        }
        if let found {
            var table = pool.remove(at: found)
            if table.epoch == .max {  // 4 billion reuses: zero it once rather than wrap
                table.slots.update(repeating: Entry(hash: 0, meta: 0))
                table.epoch = 0
            }
            table.epoch += 1
            table.used = 0
            return table
        }
        allocations += 1
        return Table(slots: try Self.allocate(size), epoch: 1)
    }

    /// The table size for `wanted` slots: the first of 16, 32, 48, ... (each step a quarter
    /// more, in multiples of 16) not below it. A few fixed sizes, so that a table dropped one
    /// second fits the next second's need though the rate wavers; about 11 % above the need on
    /// average.
    static func size(for wanted: Int) -> Int {
        var size = minimumSize
        while size < wanted { size += max(minimumSize, (size / 4 + minimumSize - 1) / minimumSize * minimumSize) }
        return size
    }

    // MARK: Expiry

    /// Drops every second up to `now`: its entries leave the count and give their slots back to
    /// the budget; its tables go to the pool (or, when keys are counted, first to be uncounted).
    /// Pooled tables unused for two seconds are released.
    private mutating func drop(through now: Int64) {
        while let first = soonest.first, first <= now {
            popSoonest()
            guard let position = index.removeValue(forKey: first) else { continue }
            let second = seconds[position]
            droppedThrough = max(droppedThrough, second.expires)
            used -= second.count
            liveSlots -= second.tables.reduce(0) { $0 + $1.slots.count }
            credits += second.count
            for var table in second.tables {
                table.pooledAt = now
                if table.used > 0, perKey.isCounting { uncounting.append(table) } else { pool.append(table) }
            }
            seconds[position] = Second(expires: .min, newest: Table(slots: UnsafeMutableBufferPointer(start: nil, count: 0), epoch: 0))
            vacant.append(position)
            let cached = Int(truncatingIfNeeded: first) & (Self.recentCount - 1)
            if recent[cached].expires == first { recent[cached] = (.min, 0) }
        }
        let stale = now > .min + 2 ? now - 2 : .min  // (no overflow for any `now` a caller passes)
        pool.removeAll { table in
            guard table.pooledAt < stale else { return false }
            Self.release(table.slots)
            return true
        }
    }

    /// Takes back the key counts of up to `count` slots of dropped tables (all of them for
    /// `.max`), pooling each table once done.
    private mutating func uncount(slots count: Int) {
        var budget = count
        while budget > 0, let table = uncounting.first {
            let end = min(table.slots.count, uncounted + budget)
            for slot in uncounted..<end where table.slots[slot].epoch == table.epoch && table.slots[slot].keySlot != 0 {
                perKey.remove(slot: table.slots[slot].keySlot)
            }
            budget -= end - uncounted
            uncounted = end
            if uncounted == table.slots.count {
                pool.append(uncounting.removeFirst())
                uncounted = 0
            }
        }
    }

    /// Drops what has expired and finishes uncounting (at most once per `now`: a flood against a
    /// full guard cannot make every verify do it).
    private mutating func dropAllExpired(now: Int64) {
        scans += 1
        scannedAt = now
        drop(through: now)
        uncount(slots: .max)
    }

    /// Hands back every credit, after a full sweep (expired seconds dropped, dropped tables
    /// uncounted) when `scan` (at most once per `now`);
    /// returns the credits handed back.
    mutating func handBack(now: Int64, scan: Bool) -> Int {
        if scan, now != scannedAt { dropAllExpired(now: now) }
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

    // MARK: The heap of live seconds

    private mutating func pushSoonest(_ expires: Int64) {
        soonest.append(expires)
        var child = soonest.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard soonest[parent] > soonest[child] else { break }
            soonest.swapAt(parent, child)
            child = parent
        }
    }

    private mutating func popSoonest() {
        let last = soonest.removeLast()
        guard !soonest.isEmpty else { return }
        soonest[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < soonest.count, soonest[left] < soonest[smallest] { smallest = left }
            if right < soonest.count, soonest[right] < soonest[smallest] { smallest = right }
            if smallest == parent { break }
            soonest.swapAt(parent, smallest)
            parent = smallest
        }
    }

    // MARK: Memory

    /// Tables from this size on come straight from the kernel (`zeroedPages`: in huge pages
    /// from 2 MiB) and go straight back to it.
    private static let pageTableBytes = 128 << 10

    /// A zeroed table: every slot empty. A failed allocation is `overloaded`, never a crash.
    static func allocate(_ count: Int) throws(SignCoreError) -> UnsafeMutableBufferPointer<Entry> {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: MemoryLayout<Entry>.stride)
        guard !overflow, let memory = bytes >= pageTableBytes ? zeroedPages(bytes) : calloc(count, MemoryLayout<Entry>.stride) else {
            throw SignCoreError(.overloaded, "the replay guard could not allocate memory; retry later")
        }
        return UnsafeMutableBufferPointer(start: memory.bindMemory(to: Entry.self, capacity: count), count: count)
    }

    private static func release(_ table: UnsafeMutableBufferPointer<Entry>) {
        let bytes = table.count * MemoryLayout<Entry>.stride
        if bytes >= pageTableBytes { freePages(table.baseAddress, bytes) } else { free(table.baseAddress) }
    }
}
