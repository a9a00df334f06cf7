internal import CSignBytes

/// The canonical URL (SPEC §2): the bytes both ends derive from a request URL, so that a URL
/// re-encoded by an HTTP stack or proxy still yields the same signature input.
///
/// Byte-level and table-driven; writes into a caller-owned buffer so a hot loop reuses it.
/// The result is a signing input, not a URL to send: every byte but the unreserved ones is
/// percent-encoded, whatever spelling it arrived in.
public enum CanonicalURL {
    /// Longest accepted input URL, in bytes (SPEC §2.1).
    public static let maxInputBytes = 8192
    /// Most query pairs accepted (SPEC §2.7).
    public static let maxQueryPairs = 256

    /// The canonical form of `url` as a string.
    public static func canonicalize(_ url: String) throws(SignCoreError) -> String {
        try withUTF8(of: url) { (raw) throws(SignCoreError) in try withCanonical(raw) { String(decoding: $0, as: UTF8.self) } }
    }

    /// The canonical form of URL bytes (which need not be valid UTF-8: that is an error).
    public static func canonicalize(bytes: [UInt8]) throws(SignCoreError) -> String {
        try withBytes(of: bytes) { (raw) throws(SignCoreError) in try withCanonical(raw) { String(decoding: $0, as: UTF8.self) } }
    }

    /// The canonical form of URL bytes, as bytes.
    public static func canonicalBytes(_ input: [UInt8]) throws(SignCoreError) -> [UInt8] {
        try withBytes(of: input) { (raw) throws(SignCoreError) in try withCanonical(raw) { Array($0) } }
    }

    /// The canonical form by one path only: `commonPath: false` skips the one-pass path for
    /// common URLs, so a fuzzer can check that both paths agree (`FuzzTesting/`).
    @_spi(Fuzzing)
    public static func canonicalBytes(_ input: UnsafeRawBufferPointer, commonPath: Bool) throws(SignCoreError) -> [UInt8] {
        try withCanonical(input, commonPath: commonPath) { Array($0) }
    }

    /// Appends the canonical form of the URL bytes to `out`. On error `out` is left as it was.
    public static func write(_ input: UnsafeRawBufferPointer, into out: inout [UInt8]) throws(SignCoreError) {
        try withCanonical(input) { out.append(contentsOf: $0) }
    }

    /// Calls `body` with the canonical form of the URL bytes, built in scratch memory that
    /// lives only for the call: the signer's and verifier's path, with no array per request.
    /// `commonPath: false` skips the one-pass path for common URLs (`sc_url_common`), so tests can
    /// check that both paths agree.
    @inline(__always)  // per sign and verify: a call and closure context cost more than the dispatch
    static func withCanonical<R>(_ input: UnsafeRawBufferPointer, commonPath: Bool = true,
                                 _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
        // §2.1 limits first: they bound the scratch memory.
        guard !input.isEmpty else { throw invalid("the URL is empty") }
        guard input.count <= maxInputBytes else { throw invalid("the URL is longer than 8192 bytes") }
        // Every input byte yields at most 3 output bytes ("é" → "%C3%A9"), and whatever is added
        // (a "/" for an empty path, "=" after a bare key) comes with input bytes that shrink or
        // stay; the second half holds the unsorted query while it is sorted. The 16 bytes more
        // are `sc_url_common`'s (whole 16-byte blocks read and written back past the end).
        let capacity = 3 * input.count + 24
        return try withScratch(byteCount: 2 * capacity) { (scratch) throws(SignCoreError) in
            let spare = UnsafeMutableRawBufferPointer(rebasing: scratch[capacity...])
            if commonPath, let output = scratch.baseAddress {
                let count = sc_url_common(input.baseAddress, input.count, output, spare.baseAddress)
                if count >= 0 { return try body(UnsafeRawBufferPointer(start: output, count: count)) }
            }
            var out = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: scratch[..<capacity]))
            try writeCanonical(input, into: &out, spare: spare)
            return try body(out.written)
        }
    }

    /// §2.1–§2.8 in order.
    private static func writeCanonical(_ input: UnsafeRawBufferPointer, into out: inout ByteWriter,
                                       spare: UnsafeMutableRawBufferPointer) throws(SignCoreError) {
        // §2.1 Input limits: no control bytes, valid UTF-8 (size was checked by the caller). One
        // branch-free pass over all bytes; the UTF-8 check runs only when a byte is not ASCII.
        var control: UInt8 = 0, union: UInt8 = 0
        for byte in input {
            control |= (byte < 0x20 ? 1 : 0) | (byte == 0x7F ? 1 : 0)
            union |= byte
        }
        guard control == 0 else { throw invalid("the URL contains a control character") }
        guard union < 0x80 || UTF8Validation.isValid(input) else { throw invalid("the URL is not valid UTF-8") }

        // §2.2 The fragment is never sent to a server: everything from the first '#' is dropped.
        let end = firstIndex(of: UInt8(ascii: "#"), in: input, 0..<input.count) ?? input.count

        // §2.3 Scheme: http or https, any case.
        guard let colon = firstIndex(of: UInt8(ascii: ":"), in: input, 0..<end) else {
            throw invalid("the URL has no scheme")
        }
        let isHTTPS: Bool
        if asciiLowercasedEquals(input[0..<colon], "https") {
            isHTTPS = true
        } else if asciiLowercasedEquals(input[0..<colon], "http") {
            isHTTPS = false
        } else {
            throw invalid("the scheme must be http or https")
        }
        guard colon + 2 < end, input[colon + 1] == UInt8(ascii: "/"), input[colon + 2] == UInt8(ascii: "/") else {
            throw invalid("the scheme must be followed by //authority")
        }
        out.append(isHTTPS ? "https://" : "http://")

        // §2.4–§2.5 Authority: host and port.
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < end, input[authorityEnd] != UInt8(ascii: "/"), input[authorityEnd] != UInt8(ascii: "?") {
            authorityEnd += 1
        }
        try CanonicalHost.write(input[authorityStart..<authorityEnd], defaultPort: isHTTPS ? 443 : 80, into: &out)

        // §2.6 Path.
        var pathEnd = authorityEnd
        while pathEnd < end, input[pathEnd] != UInt8(ascii: "?") { pathEnd += 1 }
        try writePath(input[authorityEnd..<pathEnd], into: &out)

        // §2.7 Query.
        if pathEnd < end {
            try writeQuery(input[(pathEnd + 1)..<end], into: &out, spare: spare)
        }
    }

    // MARK: §2.6 Path

    /// Normalises each segment, then removes dot segments (RFC 3986 §5.2.4) on the normalised
    /// bytes, so `%2E%2E` counts as `..`. An encoded slash `%2F` stays data, never a separator.
    private static func writePath(_ path: Slice<UnsafeRawBufferPointer>, into out: inout ByteWriter) throws(SignCoreError) {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        if path.isEmpty {
            out.append(slash)
            return
        }
        // A normalised segment never holds a raw '/', so the segment before `out.count` starts
        // at the last '/' at or after `pathStart`.
        let pathStart = out.count
        var i = path.startIndex + 1  // path begins with '/'
        while true {
            var segmentEnd = i
            while segmentEnd < path.endIndex, path[segmentEnd] != slash { segmentEnd += 1 }
            let isLast = segmentEnd == path.endIndex
            let segmentStart = out.count
            out.append(slash)
            try appendNormalized(path[i..<segmentEnd], plusIsSpace: false, into: &out)
            let written = out.count - segmentStart - 1
            if written == 1, out[segmentStart + 1] == dot {
                out.truncate(to: segmentStart)
                if isLast { out.append(slash) }
            } else if written == 2, out[segmentStart + 1] == dot, out[segmentStart + 2] == dot {
                out.truncate(to: segmentStart)
                var previous = segmentStart
                while previous > pathStart {
                    previous -= 1
                    if out[previous] == slash { break }
                }
                out.truncate(to: previous)
                if isLast { out.append(slash) }
            }
            if isLast { break }  // the last segment always leaves "/segment" or "/" behind
            i = segmentEnd + 1
        }
    }

    // MARK: §2.7 Query

    /// Where one normalised pair lies in the output: `start..<keyEnd` is the key.
    struct QueryPair {
        var start: Int32, keyEnd: Int32, end: Int32
    }

    /// Splits on `&`, drops empty pairs, splits each pair at its first `=` (a missing `=` means an
    /// empty value), normalises key and value with `+` meaning space, then sorts pairs by key
    /// bytes; pairs with equal keys keep their order, because `a=1&a=2` is a list.
    private static func writeQuery(_ query: Slice<UnsafeRawBufferPointer>, into out: inout ByteWriter,
                                   spare: UnsafeMutableRawBufferPointer) throws(SignCoreError) {
        let questionMark = out.count
        out.append(UInt8(ascii: "?"))
        let pairsStart = out.count
        var separators = 0
        for byte in query where byte == UInt8(ascii: "&") { separators += 1 }
        let tableSize = min(maxQueryPairs, separators + 1)
        try withScratch(byteCount: tableSize * MemoryLayout<QueryPair>.stride) { (raw) throws(SignCoreError) in
            // Write pairs in arrival order, joined by '&', remembering where each lies.
            let pairs = raw.bindMemory(to: QueryPair.self)
            var pairCount = 0
            var i = query.startIndex
            while i <= query.endIndex {
                var pairEnd = i
                while pairEnd < query.endIndex, query[pairEnd] != UInt8(ascii: "&") { pairEnd += 1 }
                if pairEnd > i {
                    guard pairCount < tableSize else { throw invalid("the query has more than 256 pairs") }
                    if pairCount > 0 { out.append(UInt8(ascii: "&")) }
                    var equals = i
                    while equals < pairEnd, query[equals] != UInt8(ascii: "=") { equals += 1 }
                    let start = out.count
                    try appendNormalized(query[i..<equals], plusIsSpace: true, into: &out)
                    let keyEnd = out.count
                    out.append(UInt8(ascii: "="))
                    if equals < pairEnd {
                        try appendNormalized(query[(equals + 1)..<pairEnd], plusIsSpace: true, into: &out)
                    }
                    pairs[pairCount] = QueryPair(start: Int32(start), keyEnd: Int32(keyEnd), end: Int32(out.count))
                    pairCount += 1
                }
                i = pairEnd + 1
            }
            if pairCount == 0 {
                out.truncate(to: questionMark)
                return
            }
            sortPairs(UnsafeMutableBufferPointer(rebasing: pairs[..<pairCount]),
                      in: UnsafeMutableRawBufferPointer(mutating: UnsafeRawBufferPointer(rebasing: out.written[pairsStart...])),
                      offset: pairsStart, spare: spare)
        }
    }

    /// Puts the pairs written in `region` (joined by '&'; `offset` is where the region starts
    /// in the positions of `pairs`) in key order; pairs with equal keys keep their order.
    /// Nothing moves when they are in order already; otherwise the pairs are copied back from
    /// `spare` (at least as large as the region) in their new order.
    static func sortPairs(_ pairs: consuming UnsafeMutableBufferPointer<QueryPair>, in region: UnsafeMutableRawBufferPointer,
                          offset: Int, spare: UnsafeMutableRawBufferPointer) {
        guard let text = region.baseAddress, pairs.count > 1 else { return }
        let base = UnsafeRawPointer(text - offset)  // pair positions are relative to this
        var moved = false
        if pairs.count <= 16 {
            // Insertion sort: stable, and one comparison per pair when already in order.
            for j in 1..<pairs.count {
                let pair = pairs[j]
                var k = j
                while k > 0, keyLess(pair, pairs[k - 1], base) {
                    pairs[k] = pairs[k - 1]
                    k -= 1
                }
                if k != j {
                    pairs[k] = pair
                    moved = true
                }
            }
        } else {
            // The standard sort, made stable by the tie-break on position.
            let ordered = { (a: QueryPair, b: QueryPair) in
                keyLess(a, b, base) || (!keyLess(b, a, base) && a.start < b.start)
            }
            for j in 1..<pairs.count where ordered(pairs[j], pairs[j - 1]) {
                moved = true
                break
            }
            if moved { pairs.sort(by: ordered) }
        }
        guard moved, let unsorted = spare.baseAddress else { return }
        unsorted.copyMemory(from: text, byteCount: region.count)
        var at = 0
        for (j, pair) in pairs.enumerated() {
            if j > 0 {
                text.storeBytes(of: UInt8(ascii: "&"), toByteOffset: at, as: UInt8.self)
                at += 1
            }
            let length = Int(pair.end - pair.start)
            copyShort(to: text + at, from: unsorted + (Int(pair.start) - offset), count: length)
            at += length
        }
    }

    /// Unsigned byte order of the two keys; a key that is a prefix of the other comes first.
    @inline(__always)
    private static func keyLess(_ a: QueryPair, _ b: QueryPair, _ base: UnsafeRawPointer) -> Bool {
        let lengthA = Int(a.keyEnd &- a.start), lengthB = Int(b.keyEnd &- b.start)
        if lengthA > 0, lengthB > 0 {  // most keys differ in their first byte: no call to memcmp
            let first = base.load(fromByteOffset: Int(a.start), as: UInt8.self), other = base.load(fromByteOffset: Int(b.start), as: UInt8.self)
            if first != other { return first < other }
        }
        let order = byteOrder(base + Int(a.start), base + Int(b.start), min(lengthA, lengthB))
        return order < 0 || (order == 0 && lengthA < lengthB)
    }

    // MARK: §2.8 Percent-encoding

    /// Decodes every `%XX`, then writes unreserved bytes as they are and every other byte as
    /// `%XX` with upper-case hex. A `%` without two hex digits is an error.
    static func appendNormalized(_ bytes: Slice<UnsafeRawBufferPointer>, plusIsSpace: Bool, into out: inout ByteWriter) throws(SignCoreError) {
        let input = UnsafeRawBufferPointer(rebasing: bytes)
        let hex = upperHex.utf8Start
        try out.appendRun(maxCount: 3 * input.count) { (output) throws(SignCoreError) -> Int in
            var i = 0, written = 0
            while i < input.count {
                var byte = input[i]
                if byte == UInt8(ascii: "%") {
                    guard i + 2 < input.count, let high = hexValue(input[i + 1]), let low = hexValue(input[i + 2]) else {
                        throw invalid("'%' must be followed by two hex digits")
                    }
                    byte = high << 4 | low
                    i += 3
                } else {
                    if plusIsSpace, byte == UInt8(ascii: "+") { byte = 0x20 }
                    i += 1
                }
                if isUnreserved(byte) {
                    output[written] = byte
                    written += 1
                } else {
                    output[written] = UInt8(ascii: "%")
                    output[written + 1] = hex[Int(byte >> 4)]
                    output[written + 2] = hex[Int(byte & 15)]
                    written += 3
                }
            }
            return written
        }
    }

    /// ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3), as a bit set of the 128 ASCII bytes.
    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        let low: UInt64 = 0x03FF_6000_0000_0000   // "-" "." "0"-"9"
        let high: UInt64 = 0x47FF_FFFE_87FF_FFFE  // "A"-"Z" "_" "a"-"z" "~"
        let set = byte < 64 ? low : (byte < 128 ? high : 0)  // selects, not branches
        return (set >> UInt64(byte & 63)) & 1 == 1
    }

    static let upperHex: StaticString = "0123456789ABCDEF"

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    static func asciiLowercasedEquals(_ bytes: Slice<UnsafeRawBufferPointer>, _ word: StaticString) -> Bool {
        guard bytes.count == word.utf8CodeUnitCount else { return false }
        let w = word.utf8Start
        for (k, b) in bytes.enumerated() where (b | 0x20) != w[k] { return false }
        return true
    }

    static func invalid(_ detail: String) -> SignCoreError { SignCoreError(.invalidURL, detail) }
}
