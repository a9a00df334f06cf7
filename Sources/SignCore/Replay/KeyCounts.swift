#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// Whether any key is counted (a guard without shares per key counts none).
    var isCounting: Bool { keys > 0 }

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
        // Backward-shift deletion: every key after the hole that may move back into it does.
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
