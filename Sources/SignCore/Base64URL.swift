/// RFC 4648 §5 base64url without padding (SPEC §1.2). Decoding is strict: only the 64
/// alphabet characters, no padding, and unused trailing bits must be zero, so every byte
/// string has exactly one spelling and no token character can change without changing bytes.
public enum Base64URL {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    /// Number of characters for `count` bytes.
    public static func encodedLength(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        var out = [UInt8]()
        out.reserveCapacity(encodedLength(bytes.count))
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public static func encode(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { encode($0) } }

    static func append(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var i = 0
        let n = bytes.count
        while i + 3 <= n {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(v >> 18)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(alphabet[Int(v & 63)])
            i += 3
        }
        if n - i == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(v >> 18)])
            out.append(alphabet[Int(v >> 12 & 63)])
        } else if n - i == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(v >> 18)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
        }
    }

    /// Decodes canonical unpadded base64url; nil for anything else.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        let n = text.count
        if n % 4 == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(n * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in text {
            let v = decodeTable[Int(c)]
            if v == 0xFF { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        if acc != 0 { return nil }  // non-zero unused bits: a second spelling of the same bytes
        return out
    }

    public static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }
}
