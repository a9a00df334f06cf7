internal import CSignBytes

/// RFC 4648 §5 base64url without padding (SPEC §1.2). Decoding is strict: only the 64
/// alphabet characters, no padding, and unused trailing bits must be zero, so every byte
/// string has exactly one spelling and no token character can change without changing bytes.
public enum Base64URL {
    /// The value of an alphabet character, above 63 for every other byte. Branch-free
    /// arithmetic that touches no table, so decoding key material leaks nothing through timing.
    @inline(__always)
    static func constantTimeValue(of c: UInt8) -> UInt32 {
        let x = Int32(c)
        /// All ones when `low <= x <= high`, else zero.
        func within(_ low: Int32, _ high: Int32) -> Int32 { ((low &- 1 &- x) & (x &- high &- 1)) >> 31 }
        let upper = within(0x41, 0x5A), lower = within(0x61, 0x7A), digit = within(0x30, 0x39)
        let dash = within(0x2D, 0x2D), underscore = within(0x5F, 0x5F)
        let value = (upper & (x &- 0x41)) | (lower & (x &- 0x61 &+ 26)) | (digit & (x &- 0x30 &+ 52))
            | (dash & 62) | (underscore & 63) | (~(upper | lower | digit | dash | underscore) & 0x100)
        return UInt32(bitPattern: value)
    }

    /// The value of an alphabet character, above 63 for every other byte: one table load, for
    /// public text (token fields, whash headers), where branches would mispredict.
    @inline(__always)
    static func publicValue(of c: UInt8) -> UInt32 { UInt32(sc_base64url_value(c)) }

    /// Whether every byte of public `text` is an alphabet character: one table load and one OR
    /// per byte, no branch until the end.
    static func isAlphabet(_ text: UnsafeRawBufferPointer) -> Bool {
        var all: UInt32 = 0
        for c in text { all |= publicValue(of: c) }
        return all < 64
    }

    /// Number of characters for `count` bytes.
    public static func encodedLength(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Number of bytes `count` characters decode to, or nil when no byte string has that length.
    static func decodedLength(_ count: Int) -> Int? { count % 4 == 1 ? nil : count * 3 / 4 }

    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        let length = encodedLength(bytes.count)
        guard length <= 1024 else {
            return String(unsafeUninitializedCapacity: length) { out in
                var writer = ByteWriter(UnsafeMutableRawBufferPointer(out))
                append(bytes, to: &writer)
                return writer.count
            }
        }
        // Short text (a digest, a token) is written on the stack, then copied into the string
        // unchecked: fewer instructions than a string's storage filled in place and validated.
        return withUnsafeTemporaryAllocation(byteCount: length, alignment: 16) { text in
            var writer = ByteWriter(text)
            append(bytes, to: &writer)
            return stringOfOwnASCII(writer.written)
        }
    }

    public static func encode(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { encode($0) } }

    /// Appends the base64url of public bytes (`sc_base64url_encode`: a table indexed by the
    /// data, two characters per load). Key material goes through `appendSecret`.
    static func append(_ bytes: UnsafeRawBufferPointer, to out: inout ByteWriter) {
        out.appendRun(maxCount: encodedLength(bytes.count)) { output in
            bytes.isEmpty ? 0 : sc_base64url_encode(bytes.baseAddress, bytes.count, output.base)
        }
    }

    /// Appends the base64url of key material in constant time: each character by arithmetic on
    /// its 6-bit value, no table and no branch that depends on the bytes.
    static func appendSecret(_ bytes: UnsafeRawBufferPointer, to out: inout ByteWriter) {
        out.appendRun(maxCount: encodedLength(bytes.count)) { output in
            var o = 0, bits: UInt32 = 0, count: UInt32 = 0
            for byte in bytes {
                bits = bits << 8 | UInt32(byte)
                count += 8
                while count >= 6 {
                    count -= 6
                    output[o] = constantTimeCharacter(bits >> count & 63)
                    o += 1
                }
            }
            if count > 0 {
                output[o] = constantTimeCharacter(bits << (6 - count) & 63)
                o += 1
            }
            bits = 0
            return o
        }
    }

    /// The alphabet character of a 6-bit value, by branch-free arithmetic (the inverse of
    /// `constantTimeValue`).
    @inline(__always)
    static func constantTimeCharacter(_ value: UInt32) -> UInt8 {
        let x = Int32(bitPattern: value)
        func below(_ limit: Int32) -> Int32 { (x &- limit) >> 31 }  // all ones when x < limit
        let lt26 = below(26), lt52 = below(52), lt62 = below(62), lt63 = below(63)
        let c = (lt26 & (x &+ 65)) | (~lt26 & lt52 & (x &+ 71)) | (~lt52 & lt62 & (x &- 4)) | (~lt62 & lt63 & 45) | (~lt63 & 95)
        return UInt8(truncatingIfNeeded: c)
    }

    /// The base64url of key material, as a String (an explicit export: the caller owns it).
    @_spi(Fuzzing)
    public static func encodeSecret(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: encodedLength(bytes.count)) { out in
                var writer = ByteWriter(UnsafeMutableRawBufferPointer(out))
                appendSecret(bytes, to: &writer)
                return writer.count
            }
        }
    }

    /// Appends the canonical unpadded base64url `text` decodes to; false (and `out` unchanged)
    /// for anything else. `out` needs room for `decodedLength(text.count)` bytes. For public
    /// text only: secrets go through `decode(_:)`, which runs in constant time.
    static func decode(_ text: UnsafeRawBufferPointer, into out: inout ByteWriter) -> Bool {
        guard let length = decodedLength(text.count) else { return false }
        var valid = false
        out.appendRun(maxCount: length) { output in
            let written = text.count == 0 ? 0 : sc_base64url_decode(text.baseAddress, text.count, output.base)
            valid = written >= 0
            return max(written, 0)
        }
        return valid
    }

    /// Four characters to three bytes at a time; one validity check at the end.
    @inline(__always)
    private static func decode(_ text: UnsafeRawBufferPointer, into out: inout ByteWriter,
                               value: (UInt8) -> UInt32) -> Bool {
        guard let length = decodedLength(text.count) else { return false }
        var valid = false
        out.appendRun(maxCount: length) { output in
            let n = text.count
            var i = 0, o = 0, all: UInt32 = 0
            while i + 4 <= n {
                let a = value(text[i]), b = value(text[i + 1]), c = value(text[i + 2]), d = value(text[i + 3])
                all |= a | b | c | d
                let v = a << 18 | b << 12 | c << 6 | d
                output[o] = UInt8(truncatingIfNeeded: v >> 16)
                output[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                output[o + 2] = UInt8(truncatingIfNeeded: v)
                i += 4
                o += 3
            }
            var unusedBits: UInt32 = 0  // must be zero: else a second spelling of the same bytes
            if n - i == 2 {
                let a = value(text[i]), b = value(text[i + 1])
                all |= a | b
                output[o] = UInt8(truncatingIfNeeded: (a << 2) | (b >> 4))
                unusedBits = b & 0x0F
                o += 1
            } else if n - i == 3 {
                let a = value(text[i]), b = value(text[i + 1]), c = value(text[i + 2])
                all |= a | b | c
                let v = a << 10 | b << 4 | c >> 2
                output[o] = UInt8(truncatingIfNeeded: v >> 8)
                output[o + 1] = UInt8(truncatingIfNeeded: v)
                unusedBits = c & 0x03
                o += 2
            }
            valid = all < 64 && unusedBits == 0
            return valid ? o : 0
        }
        return valid
    }

    /// What the public-text decoder (the shim's block decoder) makes of `text`, so a fuzzer can
    /// check it against the constant-time decoder (`FuzzTesting/`).
    @_spi(Fuzzing)
    public static func decodePublic(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let length = decodedLength(text.count) else { return nil }
        var valid = false
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            var writer = ByteWriter(UnsafeMutableRawBufferPointer(buffer))
            valid = decode(text, into: &writer)
            count = valid ? writer.count : 0
        }
        return valid ? bytes : nil
    }

    /// Appends what canonical unpadded base64url `text` decodes to, in constant time (for key
    /// material, into a buffer the caller wipes); false for anything else.
    static func decodeSecret(_ text: UnsafeRawBufferPointer, into out: inout ByteWriter) -> Bool {
        decode(text, into: &out, value: constantTimeValue(of:))
    }

    /// Decodes canonical unpadded base64url in constant time (key material arrives this way);
    /// nil for anything else.
    public static func decode(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let length = decodedLength(text.count) else { return nil }
        var valid = false
        let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            var writer = ByteWriter(UnsafeMutableRawBufferPointer(buffer))
            valid = decode(text, into: &writer, value: constantTimeValue(of:))
            count = valid ? writer.count : 0
        }
        return valid ? bytes : nil
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes exactly 43 characters of canonical base64url into the 32 bytes at `digest`
    /// (a `whash`); false for any other text.
    @inline(__always)
    static func decodeDigest(_ text: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer) -> Bool {
        sc_base64url_decode_digest(text.baseAddress, text.count, digest.baseAddress) == 1
    }

    /// Whether `text` is the canonical base64url of the 32 bytes of `digest`, compared in
    /// constant time: the verifier's whash check.
    @inline(__always)
    static func isEncoding(_ text: UnsafeBufferPointer<UInt8>, ofDigest digest: UnsafeRawBufferPointer) -> Bool {
        sc_base64url_is_digest(text.baseAddress, text.count, digest.baseAddress) == 1
    }
}
