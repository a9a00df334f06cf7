/// Host and port of the canonical URL (SPEC §2.4, §2.5).
enum CanonicalHost {
    static let maxHostBytes = 255

    /// Writes `host[:port]` for an authority: host lower-cased (IPv6 in RFC 5952 form, in
    /// brackets), the port without leading zeros and dropped when it is the scheme's default.
    static func write(_ authority: Slice<UnsafeRawBufferPointer>, defaultPort: Int, into out: inout ByteWriter) throws(SignCoreError) {
        guard firstIndex(of: UInt8(ascii: "@"), in: authority.base, authority.startIndex..<authority.endIndex) == nil else {
            throw CanonicalURL.invalid("userinfo (user@host) is not allowed")
        }
        guard let first = authority.first else { throw CanonicalURL.invalid("the host is empty") }
        var hostEnd: Int
        if first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                throw CanonicalURL.invalid("an IPv6 host has no closing ']'")
            }
            try writeIPv6(authority[(authority.startIndex + 1)..<close], into: &out)
            hostEnd = close + 1
            guard hostEnd == authority.endIndex || authority[hostEnd] == UInt8(ascii: ":") else {
                throw CanonicalURL.invalid("an IPv6 host must be followed by ':port' or the path")
            }
        } else {
            hostEnd = firstIndex(of: UInt8(ascii: ":"), in: authority.base, authority.startIndex..<authority.endIndex) ?? authority.endIndex
            try writeRegName(authority[authority.startIndex..<hostEnd], into: &out)
        }
        if hostEnd < authority.endIndex {
            try writePort(authority[(hostEnd + 1)...], defaultPort: defaultPort, into: &out)
        }
    }

    /// A registered name or IPv4 address: ASCII letters, digits, `-`, `.`, `_`, `~`; lower-cased;
    /// otherwise written as received (no IDNA mapping, no IPv4 reinterpretation).
    private static func writeRegName(_ host: Slice<UnsafeRawBufferPointer>, into out: inout ByteWriter) throws(SignCoreError) {
        guard !host.isEmpty else { throw CanonicalURL.invalid("the host is empty") }
        guard host.count <= maxHostBytes else { throw CanonicalURL.invalid("the host is longer than 255 bytes") }
        let input = UnsafeRawBufferPointer(rebasing: host)
        try out.appendRun(maxCount: input.count) { (output) throws(SignCoreError) -> Int in
            for (i, byte) in input.enumerated() {
                if byte >= 0x80 {
                    throw CanonicalURL.invalid("the host must be ASCII; use its IDNA A-label (xn--...)")
                }
                if byte == UInt8(ascii: "%") {
                    throw CanonicalURL.invalid("percent-encoding is not allowed in the host")
                }
                let lower = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
                guard CanonicalURL.isUnreserved(lower) else {
                    throw CanonicalURL.invalid("the host contains a character that is not allowed")
                }
                output[i] = lower
            }
            return input.count
        }
    }

    private static func writePort(_ port: Slice<UnsafeRawBufferPointer>, defaultPort: Int, into out: inout ByteWriter) throws(SignCoreError) {
        if port.isEmpty { return }  // "host:" means the default port (RFC 3986 §3.2.3)
        var value = 0
        for byte in port {
            guard (0x30...0x39).contains(byte) else { throw CanonicalURL.invalid("the port is not a decimal number") }
            value = value * 10 + Int(byte - 0x30)
            guard value <= 65535 else { throw CanonicalURL.invalid("the port is above 65535") }
        }
        guard value > 0 else { throw CanonicalURL.invalid("the port is 0") }
        if value == defaultPort { return }
        out.append(UInt8(ascii: ":"))
        out.appendDecimal(Int64(value))
    }

    // MARK: IPv6 (RFC 4291 §2.2 input, RFC 5952 §4 output)

    private static func writeIPv6(_ text: Slice<UnsafeRawBufferPointer>, into out: inout ByteWriter) throws(SignCoreError) {
        let groups = try parseIPv6(text)
        // The longest run of two or more zero groups becomes "::" (the first if tied).
        var bestStart = -1, bestLength = 1, runStart = -1
        for k in 0...8 {
            if k < 8, groups[k] == 0 {
                if runStart < 0 { runStart = k }
            } else if runStart >= 0 {
                if k - runStart > bestLength { bestStart = runStart; bestLength = k - runStart }
                runStart = -1
            }
        }
        out.append(UInt8(ascii: "["))
        var k = 0
        while k < 8 {
            if k == bestStart {
                out.append("::")
                k += bestLength
                continue
            }
            if k > 0, k != bestStart + bestLength { out.append(UInt8(ascii: ":")) }  // "::" already separates
            Array(String(groups[k], radix: 16).utf8).withUnsafeBytes { out.append($0) }
            k += 1
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func parseIPv6(_ text: Slice<UnsafeRawBufferPointer>) throws(SignCoreError) -> [UInt16] {
        let bad = CanonicalURL.invalid("the IPv6 address is not valid")
        if text.contains(UInt8(ascii: "%")) { throw CanonicalURL.invalid("IPv6 zone identifiers are not allowed") }
        let s = Array(text)
        let n = s.count
        var groups = [UInt16]()
        var compressAt: Int?
        var i = 0
        if n >= 2, s[0] == UInt8(ascii: ":"), s[1] == UInt8(ascii: ":") {
            compressAt = 0
            i = 2
        }
        while i < n {
            guard groups.count < 8 else { throw bad }
            var value: UInt32 = 0
            var digits = 0
            while i + digits < n, digits < 5, let h = CanonicalURL.hexValue(s[i + digits]) {
                value = value << 4 | UInt32(h)
                digits += 1
            }
            if i + digits < n, s[i + digits] == UInt8(ascii: ".") {
                guard groups.count <= 6 else { throw bad }
                let v4 = try parseIPv4(s[i...], error: bad)
                groups.append(UInt16(v4 >> 16))
                groups.append(UInt16(v4 & 0xFFFF))
                i = n
                break
            }
            guard digits >= 1, digits <= 4 else { throw bad }
            groups.append(UInt16(value))
            i += digits
            if i == n { break }
            guard s[i] == UInt8(ascii: ":") else { throw bad }
            i += 1
            if i < n, s[i] == UInt8(ascii: ":") {
                guard compressAt == nil else { throw bad }
                compressAt = groups.count
                i += 1
            } else if i == n {
                throw bad
            }
        }
        if let at = compressAt {
            guard groups.count < 8 else { throw bad }
            groups.insert(contentsOf: [UInt16](repeating: 0, count: 8 - groups.count), at: at)
        }
        guard groups.count == 8 else { throw bad }
        return groups
    }

    /// Dotted-quad tail of an IPv6 address: four decimal octets without leading zeros.
    private static func parseIPv4(_ s: ArraySlice<UInt8>, error: SignCoreError) throws(SignCoreError) -> UInt32 {
        let parts = s.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { throw error }
        var result: UInt32 = 0
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ (0x30...0x39).contains($0) }),
                  part.count == 1 || part.first != UInt8(ascii: "0") else { throw error }
            let value = part.reduce(UInt32(0)) { $0 * 10 + UInt32($1 - 0x30) }
            guard value <= 255 else { throw error }
            result = result << 8 | value
        }
        return result
    }
}
