import SignCore

/// The fixed-offset binary of challenges and tokens (ATTEST.md §2.1, §5.1): big-endian integers
/// and fixed-size fields, written in order and read by offset.
struct LayoutWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { integer(UInt64(value), size: 2) }
    mutating func u32(_ value: UInt32) { integer(UInt64(value), size: 4) }
    mutating func u64(_ value: UInt64) { integer(value, size: 8) }
    mutating func raw(_ value: some Sequence<UInt8>) { bytes.append(contentsOf: value) }

    private mutating func integer(_ value: UInt64, size: Int) {
        for shift in stride(from: (size - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// Reads a layout whose length the caller has checked: every offset is inside `bytes`.
struct LayoutReader {
    let bytes: [UInt8]

    func u8(at offset: Int) -> UInt8 { bytes[offset] }
    func u16(at offset: Int) -> UInt16 { UInt16(integer(at: offset, size: 2)) }
    func u32(at offset: Int) -> UInt32 { UInt32(integer(at: offset, size: 4)) }
    func u64(at offset: Int) -> UInt64 { integer(at: offset, size: 8) }
    func raw(at offset: Int, count: Int) -> [UInt8] { Array(bytes[offset..<offset + count]) }

    private func integer(at offset: Int, size: Int) -> UInt64 {
        bytes[offset..<offset + size].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A server key id at `offset` (ATTEST.md §2.4, §5.4): 1-64 bytes of `A-Z a-z 0-9 - _`.
    static func isKeyID(_ bytes: ArraySlice<UInt8>) -> Bool {
        (1...SigningKey.maxKeyIDLength).contains(bytes.count) && bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"): true
            default: false
            }
        }
    }
}

/// A header value as base64url of at most 1024 bytes of text (ATTEST.md §2.4, §5.4); nil when not.
func decodeField(_ text: String) -> [UInt8]? {
    guard text.utf8.count <= 1024 else { return nil }
    return Base64URL.decode(text)
}

extension UInt64 {
    /// `self + other`, or `UInt64.max` when that does not fit: a time that far is never reached.
    func addingSaturated(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
