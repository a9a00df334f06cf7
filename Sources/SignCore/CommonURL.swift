/// The canonical URL of a common request URL in one pass (the signer's and verifier's hot path).
///
/// Most URLs an API client sends are canonical already, apart from the order of the query
/// pairs and `+` for space: a lower-case `http`/`https` scheme, a host without port, path and
/// query made of unreserved bytes and upper-case escapes of reserved ones. This pass copies
/// such a URL byte by byte and gives up (`nil`) at the first byte that needs any other rule of
/// SPEC §2: a port, an IPv6 host, a dot segment, a lower-case or needless escape, a second
/// `=`, an empty query piece, a fragment, a byte outside ASCII. The general path then starts
/// over, so the result never depends on which path produced it (tests compare the two).
enum CommonURL {
    /// Query pairs this pass sorts in place; more go the general way.
    static let maxPairs = 16

    /// Writes the canonical form of `input` to `output` (room for `3 * input.count + 8` bytes)
    /// and returns its length, or nil when the URL is not of the common kind.
    static func write(_ input: UnsafeRawBufferPointer, to output: UnsafeMutableRawPointer,
                      spare: UnsafeMutableRawBufferPointer) -> Int? {
        guard let p = input.baseAddress else { return nil }
        let n = input.count
        var i = 0, o = 0

        // Scheme, exactly as it is written canonically.
        let https: StaticString = "https://", http: StaticString = "http://"
        if n > 8, bytesEqual(UnsafeRawBufferPointer(start: p, count: 8), https.bytes) {
            i = 8
        } else if n > 7, bytesEqual(UnsafeRawBufferPointer(start: p, count: 7), http.bytes) {
            i = 7
        } else {
            return nil
        }
        output.copyMemory(from: p, byteCount: i)
        o = i

        // Host: unreserved bytes, upper case folded; anything else (port, userinfo, IPv6) is not common.
        let hostStart = i
        while i < n {
            let c = p.load(fromByteOffset: i, as: UInt8.self)
            guard CanonicalURL.isUnreserved(c) else { break }
            output.storeBytes(of: c &- 0x41 < 26 ? c | 0x20 : c, toByteOffset: o, as: UInt8.self)
            i += 1
            o += 1
        }
        guard i > hostStart, i - hostStart <= 255 else { return nil }

        // Path: '/' and already canonical segments; a segment starting with '.' may be a dot segment.
        if i == n || p.load(fromByteOffset: i, as: UInt8.self) == UInt8(ascii: "?") {
            output.storeBytes(of: UInt8(ascii: "/"), toByteOffset: o, as: UInt8.self)
            o += 1
        } else {
            guard p.load(fromByteOffset: i, as: UInt8.self) == UInt8(ascii: "/") else { return nil }
            while i < n {
                let c = p.load(fromByteOffset: i, as: UInt8.self)
                if c == UInt8(ascii: "?") { break }
                if c == UInt8(ascii: "/") {
                    if i + 1 < n, p.load(fromByteOffset: i + 1, as: UInt8.self) == UInt8(ascii: ".") { return nil }
                    output.storeBytes(of: c, toByteOffset: o, as: UInt8.self)
                    i += 1
                    o += 1
                } else if !copyComponentByte(p, n, &i, output, &o, plusIsSpace: false) {
                    return nil
                }
            }
        }
        guard i < n else { return o }

        // Query: pairs written as they come, joined by '&' (empty pieces dropped), then put in key order.
        i += 1  // '?'
        output.storeBytes(of: UInt8(ascii: "?"), toByteOffset: o, as: UInt8.self)
        o += 1
        let pairsStart = o
        let count = withUnsafeTemporaryAllocation(of: CanonicalURL.QueryPair.self, capacity: maxPairs) { pairs -> Int? in
            var count = 0
            while i < n {
                if p.load(fromByteOffset: i, as: UInt8.self) == UInt8(ascii: "&") {
                    i += 1
                    continue
                }
                guard count < maxPairs else { return nil }
                if count > 0 {
                    output.storeBytes(of: UInt8(ascii: "&"), toByteOffset: o, as: UInt8.self)
                    o += 1
                }
                let start = o
                var keyEnd = -1
                while i < n {
                    let c = p.load(fromByteOffset: i, as: UInt8.self)
                    if c == UInt8(ascii: "&") { break }
                    if c == UInt8(ascii: "=") {
                        guard keyEnd < 0 else { return nil }  // a second '=' is data: %3D
                        keyEnd = o
                        output.storeBytes(of: c, toByteOffset: o, as: UInt8.self)
                        i += 1
                        o += 1
                    } else if !copyComponentByte(p, n, &i, output, &o, plusIsSpace: true) {
                        return nil
                    }
                }
                if keyEnd < 0 {  // "a" is "a="
                    keyEnd = o
                    output.storeBytes(of: UInt8(ascii: "="), toByteOffset: o, as: UInt8.self)
                    o += 1
                }
                pairs[count] = CanonicalURL.QueryPair(start: Int32(start), keyEnd: Int32(keyEnd), end: Int32(o))
                count += 1
            }
            CanonicalURL.sortPairs(UnsafeMutableBufferPointer(rebasing: pairs[..<count]),
                                   in: UnsafeMutableRawBufferPointer(start: output + pairsStart, count: o - pairsStart),
                                   offset: pairsStart, spare: spare)
            return count
        }
        guard let count else { return nil }
        return count == 0 ? pairsStart - 1 : o
    }

    /// Copies one already canonical byte or escape of a path segment or query component:
    /// an unreserved byte, `+` in a query (as `%20`), or `%XX` with upper-case hex that
    /// decodes to a reserved byte. False for anything the general path must decide.
    @inline(__always)
    private static func copyComponentByte(_ p: UnsafeRawPointer, _ n: Int, _ i: inout Int,
                                          _ output: UnsafeMutableRawPointer, _ o: inout Int, plusIsSpace: Bool) -> Bool {
        let c = p.load(fromByteOffset: i, as: UInt8.self)
        if CanonicalURL.isUnreserved(c) {
            output.storeBytes(of: c, toByteOffset: o, as: UInt8.self)
            i += 1
            o += 1
            return true
        }
        if c == UInt8(ascii: "%") {
            guard i + 2 < n, let high = upperHexValue(p.load(fromByteOffset: i + 1, as: UInt8.self)),
                  let low = upperHexValue(p.load(fromByteOffset: i + 2, as: UInt8.self)),
                  !CanonicalURL.isUnreserved(high << 4 | low) else { return false }
            output.storeBytes(of: c, toByteOffset: o, as: UInt8.self)
            output.storeBytes(of: p.load(fromByteOffset: i + 1, as: UInt8.self), toByteOffset: o + 1, as: UInt8.self)
            output.storeBytes(of: p.load(fromByteOffset: i + 2, as: UInt8.self), toByteOffset: o + 2, as: UInt8.self)
            i += 3
            o += 3
            return true
        }
        if plusIsSpace, c == UInt8(ascii: "+") {
            output.storeBytes(of: UInt8(ascii: "%"), toByteOffset: o, as: UInt8.self)
            output.storeBytes(of: UInt8(ascii: "2"), toByteOffset: o + 1, as: UInt8.self)
            output.storeBytes(of: UInt8(ascii: "0"), toByteOffset: o + 2, as: UInt8.self)
            i += 1
            o += 3
            return true
        }
        return false
    }

    /// 0–15 for `0-9 A-F`; nil for lower-case hex too, which the general path upper-cases.
    @inline(__always)
    private static func upperHexValue(_ c: UInt8) -> UInt8? {
        if c &- 0x30 < 10 { return c &- 0x30 }
        if c &- 0x41 < 6 { return c &- 0x41 &+ 10 }
        return nil
    }
}
