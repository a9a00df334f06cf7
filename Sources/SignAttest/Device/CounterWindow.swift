import SignCore

/// A device's counter state (ATTEST.md §9.5): the highest counter seen, and which of the 128
/// counters at and below it have been seen, as IPsec's anti-replay window (RFC 4303 §3.4.3).
/// A counter above the highest, or unseen within the window behind it, passes; a repeat, one
/// too far behind, or none from a device that has sent one, does not. So concurrent requests of
/// one device, which reach the server in any order, all pass, and a cloned key that replays the
/// device's sequence is caught.
public struct CounterWindow: Sendable, Hashable, CustomStringConvertible {
    /// Counters behind the highest that are still told apart (W).
    public static let width: UInt64 = 128
    /// The largest counter: PostgreSQL's `bigint` holds it.
    public static let maximum = UInt64(Int64.max)

    /// The highest counter seen; 0 while none has been.
    public private(set) var highest: UInt64
    /// Bit i (of 128, `high` holding 64-127) set when counter highest − i has been seen.
    public private(set) var low: UInt64
    public private(set) var high: UInt64

    public init() { self.init(highest: 0, low: 0, high: 0) }

    public init(highest: UInt64, low: UInt64, high: UInt64) {
        self.highest = highest
        self.low = low
        self.high = high
    }

    /// What a counter meets (ATTEST.md §9.5).
    public enum Verdict: Sendable, Hashable {
        /// Above the highest (the window slides), or unseen within it (its bit is set), or 0
        /// from a device that has never sent a counter (nothing changes).
        case accepted
        /// Seen already: a replayed sequence, the sign of a cloned key.
        case repeated
        /// W or more behind the highest: whether it was seen is no longer known.
        case tooOld
        /// 0 (no counter) from a device that has sent one.
        case missing

        public var error: SignCoreError? {
            switch self {
            case .accepted: nil
            case .repeated: SignCoreError(.counterRepeated, "the device counter has been seen already")
            case .tooOld: SignCoreError(.counterTooOld, "the device counter is too far behind the highest seen")
            case .missing: SignCoreError(.counterMissing, "the device has sent counters before and sent none")
            }
        }
    }

    /// Checks `counter` and, when it passes, records it.
    public mutating func observe(_ counter: UInt64) -> Verdict {
        if counter == 0 { return highest == 0 ? .accepted : .missing }
        if counter > highest {
            shift(by: counter - highest)
            low |= 1
            highest = counter
            return .accepted
        }
        let behind = highest - counter
        guard behind < Self.width else { return .tooOld }
        let bit: UInt64 = 1 << (behind % 64)
        if behind < 64 {
            if low & bit != 0 { return .repeated }
            low |= bit
        } else {
            if high & bit != 0 { return .repeated }
            high |= bit
        }
        return .accepted
    }

    /// Moves every seen bit `distance` places further behind.
    private mutating func shift(by distance: UInt64) {
        if distance >= 128 {
            (low, high) = (0, 0)
        } else if distance >= 64 {
            (low, high) = (0, low << (distance - 64))
        } else if distance > 0 {
            high = high << distance | low >> (64 - distance)
            low = low << distance
        }
    }

    /// The 16 bytes of the window, big-endian, offset 0's bit last (PostgreSQL's `bit(128)`).
    public var bitmap: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) } + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// A window read back from its highest counter and `bitmap`; nil when the bitmap is not 16 bytes.
    public init?(highest: UInt64, bitmap: [UInt8]) {
        guard bitmap.count == 16 else { return nil }
        let high = bitmap[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bitmap[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self.init(highest: highest, low: low, high: high)
    }

    /// A `signcore-counter` field's value (ATTEST.md §9.5): `0`, or 1-19 decimal digits without a
    /// leading zero, at most 2^63 − 1; nil for anything else (`invalidHeader`).
    public static func counter(field text: String) -> UInt64? {
        let digits = Array(text.utf8)
        guard (1...19).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }), digits.count == 1 || digits[0] != 0x30 else {
            return nil
        }
        let value = digits.reduce(UInt64(0)) { $0 * 10 + UInt64($1 - 0x30) }
        return value <= maximum ? value : nil
    }

    public var description: String { "CounterWindow(highest \(highest))" }
}
