/// The header fields a token covers (SPEC §4.3): their names as the token lists them, and the
/// digest that binds their values into the signing input.
enum CoveredHeaders {
    /// At most this many names per token.
    static let maxCount = 16
    /// Longest covered name, in bytes.
    static let maxNameLength = 64
    /// Longest canonical value of one covered field (all its lines joined), in bytes.
    static let maxValueLength = 8192
    static let digestPrefix: StaticString = "SignCore/3 headers\n"

    /// A name byte: `a-z 0-9 - _` (the names a token can carry: lower case, no `.` or `,`).
    static func isNameByte(_ byte: UInt8) -> Bool {
        (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
    }

    /// The names a signer covers, in the token's form (§4.3): lower-cased, sorted by bytes,
    /// each once. Refuses (`invalidInput`) a name outside `A-Z a-z 0-9 - _` or longer than 64
    /// bytes, more than 16 names, and `whash` or `wtoken`, which cannot cover themselves.
    static func normalizedNames(_ names: [String]) throws(SignCoreError) -> [String] {
        var result: [[UInt8]] = []
        for name in names {
            let lower = name.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
            guard (1...maxNameLength).contains(lower.count), lower.allSatisfy(isNameByte) else {
                throw SignCoreError(.invalidInput, "a covered header name must be 1-64 characters from A-Z a-z 0-9 - _")
            }
            guard lower != Array("whash".utf8), lower != Array("wtoken".utf8) else {
                throw SignCoreError(.invalidInput, "the whash and wtoken headers cannot be covered")
            }
            if !result.contains(lower) { result.append(lower) }
        }
        guard result.count <= maxCount else { throw SignCoreError(.invalidInput, "a token covers at most 16 header fields") }
        result.sort { $0.lexicographicallyPrecedes($1) }
        return result.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether `text` is a valid `headers` token field (§4.1): empty, or 1–16 names of 1–64
    /// bytes of `a-z 0-9 - _`, joined by `,`, strictly ascending by bytes.
    static func isValidField(_ text: UnsafeRawBufferPointer) -> Bool {
        if text.isEmpty { return true }
        var count = 0
        var previous: Range<Int>? = nil
        var start = 0
        for index in 0...text.count {
            guard index == text.count || text[index] == UInt8(ascii: ",") else {
                guard isNameByte(text[index]) else { return false }
                continue
            }
            let name = start..<index
            guard (1...maxNameLength).contains(name.count) else { return false }
            if let previous, !UnsafeRawBufferPointer(rebasing: text[previous])
                .lexicographicallyPrecedes(UnsafeRawBufferPointer(rebasing: text[name])) {
                return false
            }
            count += 1
            previous = name
            start = index + 1
        }
        return count <= maxCount
    }

    /// The names of a valid `headers` field, as byte ranges.
    static func names(in text: UnsafeRawBufferPointer) -> [Range<Int>] {
        guard !text.isEmpty else { return [] }
        var names: [Range<Int>] = []
        var start = 0
        for index in 0...text.count where index == text.count || text[index] == UInt8(ascii: ",") {
            names.append(start..<index)
            start = index + 1
        }
        return names
    }

    /// SHA-256("SignCore/3 headers\n" || block), the block holding, for each covered name in
    /// order, `u8(len(name)) || name` then `u8(0)` when no field has that name, or `u8(1) ||
    /// u16(len(value)) || value` with the field's canonical value (§4.3).
    static func digest(names text: UnsafeRawBufferPointer, fields: [HeaderField]) throws(SignCoreError) -> SHA256Digest {
        var hasher = SHA256Hasher()
        hasher.update(digestPrefix)
        try withScratch(byteCount: maxValueLength) { (scratch) throws(SignCoreError) in
            for range in names(in: text) {
                let name = UnsafeRawBufferPointer(rebasing: text[range])
                hasher.update(CollectionOfOne(UInt8(name.count)))
                hasher.update(name)
                var value = ByteWriter(scratch)
                var present = false
                for field in fields {
                    let matched = try withUTF8(of: field.name) { (fieldName) throws(SignCoreError) -> Bool in
                        guard asciiCaseInsensitiveEqual(fieldName, name) else { return false }
                        if present { try append(", ", to: &value) }
                        try withUTF8(of: field.value) { (raw) throws(SignCoreError) in try appendCanonical(raw, to: &value) }
                        return true
                    }
                    present = present || matched
                }
                if present {
                    hasher.update(CollectionOfOne(UInt8(1)))
                    hasher.update([UInt8(value.count >> 8), UInt8(value.count & 0xFF)])
                    hasher.update(value.written)
                } else {
                    hasher.update(CollectionOfOne(UInt8(0)))
                }
            }
        }
        return hasher.finalize()
    }

    /// One field line's value in canonical form (§4.3): each obs-fold (`OWS CR LF RWS`) becomes
    /// one space, leading and trailing spaces and tabs are removed, inner whitespace is kept as
    /// it is; any other CR, LF or control byte (0x00–0x08, 0x0A–0x1F, 0x7F) is `invalidHeader`.
    /// Bytes 0x80–0xFF (obs-text) are kept as they are.
    static func appendCanonical(_ raw: UnsafeRawBufferPointer, to out: inout ByteWriter) throws(SignCoreError) {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        // A whitespace run is written only once a byte follows it, so leading and trailing
        // whitespace never count against the length limit (found by FuzzCoveredHeaders).
        var pending: Range<Int>? = nil, pendingIsFold = false, wroteAny = false
        var index = 0
        while index < raw.count {
            let byte = raw[index]
            if isSpace(byte) || byte == 0x0D {
                var end = index, folded = false
                while true {
                    while end < raw.count, isSpace(raw[end]) { end += 1 }
                    if end + 2 < raw.count, raw[end] == 0x0D, raw[end + 1] == 0x0A, isSpace(raw[end + 2]) {
                        folded = true
                        end += 2
                        continue
                    }
                    break
                }
                guard end > index else { throw invalid("a covered header field has a CR or LF outside an obs-fold") }
                if wroteAny { (pending, pendingIsFold) = (index..<end, folded) }
                index = end
            } else {
                guard byte >= 0x20, byte != 0x7F else { throw invalid("a covered header field has a control character") }
                if let run = pending {
                    if pendingIsFold { try append(" ", to: &out) } else { try appendBytes(UnsafeRawBufferPointer(rebasing: raw[run]), to: &out) }
                    pending = nil
                }
                try appendBytes(UnsafeRawBufferPointer(rebasing: raw[index..<(index + 1)]), to: &out)
                wroteAny = true
                index += 1
            }
        }
    }

    private static func append(_ text: StaticString, to out: inout ByteWriter) throws(SignCoreError) {
        try appendBytes(text.bytes, to: &out)
    }

    private static func appendBytes(_ bytes: UnsafeRawBufferPointer, to out: inout ByteWriter) throws(SignCoreError) {
        guard out.capacity - out.count >= bytes.count else {
            throw invalid("a covered header field is longer than 8192 bytes")
        }
        out.append(bytes)
    }

    private static func asciiCaseInsensitiveEqual(_ a: UnsafeRawBufferPointer, _ lower: UnsafeRawBufferPointer) -> Bool {
        guard a.count == lower.count else { return false }
        for index in 0..<a.count {
            let byte = a[index]
            guard ((0x41...0x5A).contains(byte) ? byte | 0x20 : byte) == lower[index] else { return false }
        }
        return true
    }

    private static func invalid(_ detail: String) -> SignCoreError { SignCoreError(.invalidHeader, detail) }
}
