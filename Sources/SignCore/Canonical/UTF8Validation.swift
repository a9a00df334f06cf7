/// Strict UTF-8 check (RFC 3629, SPEC §1.3): no overlong forms, no surrogates, nothing above
/// U+10FFFF, no truncated sequences. Byte-level and allocation-free.
enum UTF8Validation {
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = bytes.count
        while i < n {
            let b0 = bytes[i]
            if b0 < 0x80 { i += 1; continue }
            let length: Int
            var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
            switch b0 {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; lower = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; upper = 0x9F
            case 0xF0: length = 4; lower = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; upper = 0x8F
            default: return false
            }
            if i + length > n { return false }
            let b1 = bytes[i + 1]
            if b1 < lower || b1 > upper { return false }
            for k in 2..<length where bytes[i + k] & 0xC0 != 0x80 { return false }
            i += length
        }
        return true
    }

    static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        if let result = bytes.withContiguousStorageIfAvailable({ isValid(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(bytes).withUnsafeBytes { isValid($0) }
    }
}
