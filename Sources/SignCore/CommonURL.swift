import CSignBytes

/// The canonical URL of a common request URL, checked in one read-only pass (the signer's and
/// verifier's hot path).
///
/// Most URLs an API client sends are canonical already, apart from the order of the query
/// pairs, the case of hex digits in escapes and `+`: a lower-case `http`/`https` scheme, a
/// host without port, a path and query made of unreserved bytes, escapes of reserved ones and
/// `+`. Such a URL is copied as it is, `+` spelled out (`%2B` in the path, `%20` in the
/// query: at most 16 of them, found in an SSE2 pass when the first pass stops at one and then
/// expanded before a second), escapes' hex digits put in upper
/// case, and its pairs put in order. The pass gives up (`nil`) at the first byte that needs
/// any other rule of SPEC §2: a port, an IPv6 host, a dot segment, a needless escape, a key
/// without `=` or with two, an empty query piece, a fragment, a byte outside ASCII. The
/// general path then starts over, so the result never depends on which path produced it (a
/// differential test compares the two).
enum CommonURL {
    /// Query pairs this pass sorts in place; more go the general way.
    static let maxPairs = 16

    /// The classes of `sc_url_byte_class`, one table load per byte (a bit-set test of each
    /// byte took twice the instructions). Classes 0 and 1 are the unreserved bytes.
    private enum Class {
        static let upperCase: UInt8 = 1, slash: UInt8 = 2, percent: UInt8 = 3, question: UInt8 = 4
        static let equals: UInt8 = 5, ampersand: UInt8 = 6
    }

    /// Pluses this pass spells out; more go the general way.
    static let maxPluses = 16

    /// Writes the canonical form of `input` to `output` (room for `3 * input.count + 8` bytes)
    /// and returns its length, or nil when the URL is not of the common kind. `spare` has as
    /// much room again.
    static func write(_ input: UnsafeRawBufferPointer, to output: UnsafeMutableRawPointer,
                      spare: UnsafeMutableRawBufferPointer) -> Int? {
        if let count = writeWithoutPluses(input, to: output, spare: spare) { return count }
        // The pass gave up; if a '+' was among the reasons, spell the pluses out and try again.
        guard let p = input.baseAddress, let room = spare.baseAddress else { return nil }
        let n = input.count
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: maxPluses) { positions -> Int? in
            let pluses = sc_find_byte(p, n, UInt8(ascii: "+"), positions.baseAddress, maxPluses)
            if pluses == 0 { return nil }
            // Spell each '+' out in `spare`, then take that as the input (the rest of `spare`
            // holds the unsorted query while it is sorted).
            let expanded = n + 2 * pluses
            guard pluses <= maxPluses, 2 * expanded <= spare.count else { return nil }
            var question = n
            var one = 0
            if sc_find_byte(p, n, UInt8(ascii: "?"), &one, 1) > 0 { question = one }
            var from = 0, to = 0
            for k in 0..<pluses {
                let at = positions[k]
                (room + to).copyMemory(from: p + from, byteCount: at - from)
                to += at - from
                // "%2B" in the path, "%20" in the query
                room.storeBytes(of: UInt8(ascii: "%"), toByteOffset: to, as: UInt8.self)
                room.storeBytes(of: UInt8(ascii: "2"), toByteOffset: to + 1, as: UInt8.self)
                room.storeBytes(of: at < question ? UInt8(ascii: "B") : UInt8(ascii: "0"), toByteOffset: to + 2, as: UInt8.self)
                to += 3
                from = at + 1
            }
            (room + to).copyMemory(from: p + from, byteCount: n - from)
            return writeWithoutPluses(UnsafeRawBufferPointer(start: room, count: expanded), to: output,
                                      spare: UnsafeMutableRawBufferPointer(rebasing: spare[expanded...]))
        }
    }

    private static func writeWithoutPluses(_ input: UnsafeRawBufferPointer, to output: UnsafeMutableRawPointer,
                                           spare: UnsafeMutableRawBufferPointer) -> Int? {
        guard let p = input.baseAddress else { return nil }
        let n = input.count
        @inline(__always) func byte(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        @inline(__always) func kind(_ i: Int) -> UInt8 { sc_url_byte_class(byte(i)) }

        // Scheme, exactly as it is written canonically ("https://" or "http://" and a host byte,
        // read as one little-endian word).
        guard n > 8 else { return nil }
        let head = UInt64(littleEndian: p.loadUnaligned(as: UInt64.self))
        var i: Int
        if head == 0x2F2F_3A73_7074_7468 {  // "https://"
            i = 8
        } else if head & 0x00FF_FFFF_FFFF_FFFF == 0x002F_2F3A_7074_7468 {  // "http://"
            i = 7
        } else {
            return nil
        }

        // Host: unreserved bytes (upper case is folded below); a port, userinfo or IPv6 literal is not common.
        let hostStart = i
        var classes: UInt8 = 0  // the union: has upper case when it has bit 0
        while i < n, kind(i) <= Class.upperCase {
            classes |= kind(i)
            i &+= 1
        }
        let hostEnd = i
        guard hostEnd > hostStart, hostEnd - hostStart <= 255 else { return nil }

        // Path: already canonical segments; a segment that starts with '.' may be a dot segment.
        var lowerHex = false  // an escape with a lower-case hex digit, put in upper case below
        let hasPath = i < n && byte(i) == UInt8(ascii: "/")
        while i < n {
            let c = kind(i)
            if c <= Class.upperCase {
                i &+= 1
            } else if c == Class.slash {
                if i &+ 1 < n, byte(i &+ 1) == UInt8(ascii: ".") { return nil }
                i &+= 1
            } else if c == Class.percent {
                guard isReservedEscape(p, n, i, lowerHex: &lowerHex) else { return nil }
                i &+= 3
            } else if c == Class.question {
                break
            } else {
                return nil
            }
        }
        guard hasPath || i == hostEnd else { return nil }

        // The output is the input, with '/' for an empty path (shifting what follows by one).
        let shift = hasPath ? 0 : 1
        if hasPath {
            output.copyMemory(from: p, byteCount: n)
        } else {
            output.copyMemory(from: p, byteCount: hostEnd)
            output.storeBytes(of: UInt8(ascii: "/"), toByteOffset: hostEnd, as: UInt8.self)
            (output + hostEnd + 1).copyMemory(from: p + hostEnd, byteCount: n - hostEnd)
        }
        if classes & Class.upperCase != 0 {
            for k in hostStart..<hostEnd where byte(k) &- UInt8(ascii: "A") < 26 {
                output.storeBytes(of: byte(k) | 0x20, toByteOffset: k, as: UInt8.self)
            }
        }
        if lowerHex { upperCaseEscapes(output, from: hostEnd, to: i + shift) }  // the path's; the query's below
        guard i < n else { return n + shift }

        // Query: '&'-separated pairs with exactly one '=' each, then put in key order.
        i &+= 1  // '?'
        if i == n { return n + shift - 1 }  // "?" alone: no query
        let pairsStart = i
        return withUnsafeTemporaryAllocation(of: CanonicalURL.QueryPair.self, capacity: maxPairs) { pairs -> Int? in
            var count = 0
            while true {
                guard count < maxPairs else { return nil }
                let start = i
                var keyEnd = -1
                while i < n {
                    let c = kind(i)
                    if c <= Class.upperCase {
                        i &+= 1
                    } else if c == Class.percent {
                        guard isReservedEscape(p, n, i, lowerHex: &lowerHex) else { return nil }
                        i &+= 3
                    } else if c == Class.equals {
                        guard keyEnd < 0 else { return nil }  // a second '=' is data: %3D
                        keyEnd = i
                        i &+= 1
                    } else if c == Class.ampersand {
                        break
                    } else {
                        return nil
                    }
                }
                guard keyEnd >= 0 else { return nil }  // "a" becomes "a=" (or the piece is empty)
                pairs[count] = CanonicalURL.QueryPair(start: Int32(start + shift), keyEnd: Int32(keyEnd + shift), end: Int32(i + shift))
                count += 1
                if i == n { break }
                i &+= 1  // '&'
                guard i < n else { return nil }  // a trailing empty piece
            }
            if lowerHex { upperCaseEscapes(output, from: pairsStart + shift, to: n + shift) }  // before keys are compared
            CanonicalURL.sortPairs(UnsafeMutableBufferPointer(rebasing: pairs[..<count]),
                                   in: UnsafeMutableRawBufferPointer(start: output + pairsStart + shift, count: n - pairsStart),
                                   offset: pairsStart + shift, spare: spare)
            return n + shift
        }
    }

    /// `%XX` that decodes to a reserved byte (the canonical form keeps it escaped, in upper
    /// case: `lowerHex` records a lower-case digit). Escaped unreserved bytes are decoded by
    /// the general path.
    @inline(__always)
    private static func isReservedEscape(_ p: UnsafeRawPointer, _ n: Int, _ i: Int, lowerHex: inout Bool) -> Bool {
        guard i &+ 2 < n else { return false }
        let a = p.load(fromByteOffset: i &+ 1, as: UInt8.self), b = p.load(fromByteOffset: i &+ 2, as: UInt8.self)
        guard let high = hexValue(a), let low = hexValue(b) else { return false }
        if a >= UInt8(ascii: "a") || b >= UInt8(ascii: "a") { lowerHex = true }  // both are hex digits
        return !CanonicalURL.isUnreserved(high << 4 | low)
    }

    /// 0–15 for `0-9 A-F a-f`; nil for anything else.
    @inline(__always)
    private static func hexValue(_ c: UInt8) -> UInt8? {
        if c &- 0x30 < 10 { return c &- 0x30 }
        let letter = (c | 0x20) &- 0x61
        return letter < 6 ? letter &+ 10 : nil
    }

    /// Upper-cases the hex digits of every escape in `output[from..<to]` (only valid escapes
    /// are there: the scan checked them).
    private static func upperCaseEscapes(_ output: UnsafeMutableRawPointer, from: Int, to: Int) {
        var k = from
        while k < to {
            if output.load(fromByteOffset: k, as: UInt8.self) == UInt8(ascii: "%") {
                for digit in (k + 1)...(k + 2) {
                    let c = output.load(fromByteOffset: digit, as: UInt8.self)
                    if c >= UInt8(ascii: "a") { output.storeBytes(of: c &- 0x20, toByteOffset: digit, as: UInt8.self) }
                }
                k += 3
            } else {
                k += 1
            }
        }
    }
}
