/// RFC 4648 §5 base64url without padding (SPEC §1.2). Decoding is strict: only the 64
/// alphabet characters, no padding, and unused trailing bits must be zero, so every byte
/// string has exactly one spelling and no token character can change without changing bytes.
public enum Base64URL {
    static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /// The value of an alphabet character, 0xFF for every other byte (arithmetic, so the hot
    /// path touches no lazily initialised table).
    @inline(__always)
    static func value(of c: UInt8) -> UInt8 {
        switch c {
        case 0x41...0x5A: c &- 0x41        // A-Z
        case 0x61...0x7A: c &- 0x61 &+ 26  // a-z
        case 0x30...0x39: c &- 0x30 &+ 52  // 0-9
        case 0x2D: 62                      // -
        case 0x5F: 63                      // _
        default: 0xFF
        }
    }

    /// Number of characters for `count` bytes.
    public static func encodedLength(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Number of bytes `count` characters decode to, or nil when no byte string has that length.
    static func decodedLength(_ count: Int) -> Int? { count % 4 == 1 ? nil : count * 3 / 4 }

    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        let length = encodedLength(bytes.count)
        return String(unsafeUninitializedCapacity: length) { out in
            var writer = ByteWriter(UnsafeMutableRawBufferPointer(out))
            append(bytes, to: &writer)
            return writer.count
        }
    }

    public static func encode(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { encode($0) } }

    static func append(_ bytes: UnsafeRawBufferPointer, to out: inout ByteWriter) {
        let table = alphabet.utf8Start
        let n = bytes.count
        out.appendRun(maxCount: encodedLength(n)) { output in
            var i = 0, o = 0
            while i + 3 <= n {
                let v = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
                output[o] = table[v >> 18]
                output[o + 1] = table[v >> 12 & 63]
                output[o + 2] = table[v >> 6 & 63]
                output[o + 3] = table[v & 63]
                i += 3
                o += 4
            }
            if n - i == 1 {
                let v = Int(bytes[i]) << 16
                output[o] = table[v >> 18]
                output[o + 1] = table[v >> 12 & 63]
                o += 2
            } else if n - i == 2 {
                let v = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8
                output[o] = table[v >> 18]
                output[o + 1] = table[v >> 12 & 63]
                output[o + 2] = table[v >> 6 & 63]
                o += 3
            }
            return o
        }
    }

    /// Appends the canonical unpadded base64url `text` decodes to; false (and `out` unchanged)
    /// for anything else. `out` needs room for `decodedLength(text.count)` bytes.
    static func decode(_ text: UnsafeRawBufferPointer, into out: inout ByteWriter) -> Bool {
        guard decodedLength(text.count) != nil else { return false }
        let start = out.count
        var acc: UInt32 = 0
        var bits = 0
        for c in text {
            let v = value(of: c)
            if v == 0xFF {
                out.truncate(to: start)
                return false
            }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        if acc != 0 {  // non-zero unused bits: a second spelling of the same bytes
            out.truncate(to: start)
            return false
        }
        return true
    }

    /// Decodes canonical unpadded base64url; nil for anything else.
    public static func decode(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let length = decodedLength(text.count) else { return nil }
        var valid = false
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            var writer = ByteWriter(UnsafeMutableRawBufferPointer(buffer))
            valid = decode(text, into: &writer)
            count = valid ? writer.count : 0
        }
        return valid ? bytes : nil
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }
}
