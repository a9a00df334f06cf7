/// The inner loop of a proof of work (ATTEST.md §3.2): SHA-256 over a short head and a big-endian
/// counter, searched for a digest with leading zero bits. The head and counter fit one block, so
/// each try costs one compression and nothing else (the default backend runs the loop in C on
/// OpenSSL's block function); a solver calls it on ranges it can cancel between.
public enum SHA256CounterSearch {
    /// The longest head: head, the 8-byte counter and SHA-256's padding fill one 64-byte block.
    public static let maxHeadBytes = 47
    /// The most leading zero bits searched for (the digest's first 32-bit word).
    public static let maxLeadingZeroBits = 32

    /// The first counter of `counters` for which SHA-256(head || u64(counter)) has at least
    /// `leadingZeroBits` leading zero bits; nil when none of the range has, or when the head is
    /// longer than 47 bytes or the bits are not 1-32.
    public static func firstCounter(head: [UInt8], in counters: Range<UInt64>, leadingZeroBits: Int) -> UInt64? {
        guard head.count <= maxHeadBytes, (1...maxLeadingZeroBits).contains(leadingZeroBits), !counters.isEmpty else { return nil }
        return head.withUnsafeBytes { CryptoBackend.firstCounter(head: $0, in: counters, leadingZeroBits: leadingZeroBits) }
    }

    /// The number of leading zero bits of `digest` read as a big-endian integer (0-256).
    public static func leadingZeroBits(of digest: SHA256Digest) -> Int {
        digest.withUnsafeBytes { bytes in
            var bits = 0
            for byte in bytes {
                guard byte == 0 else { return bits + byte.leadingZeroBitCount }
                bits += 8
            }
            return bits
        }
    }
}
