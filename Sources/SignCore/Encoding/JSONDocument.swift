/// A small strict JSON reader (RFC 8259) for key documents, with limits: it is the one parser
/// in SignCore that reads a whole document, so it bounds size and depth, rejects duplicate
/// member names (compared as bytes after unescaping: two `"k"` members would make a key
/// ambiguous), a byte-order mark and lone surrogates, and runs in time linear in the document.
///
/// The document's bytes are copied into a buffer of its own that is wiped when released, and
/// string values stay ranges of it: a secret member (`k`, `d`) is unescaped and decoded straight
/// into wiped buffers and never becomes a Swift String (SPEC §6.1).
final class JSONDocument {
    static let maxBytes = 1 << 20
    static let maxDepth = 16

    private let storage: WipedStorage
    private let count: Int
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage.memory[..<count]) }
    let root: JSON

    /// Parses a copy of `input` (the caller keeps and wipes its own bytes).
    init(copying input: UnsafeRawBufferPointer) throws(SignCoreError) {
        guard input.count <= Self.maxBytes else { throw SignCoreError(.invalidInput, "the JSON document is larger than 1 MiB") }
        let storage = WipedStorage(byteCount: input.count)  // wiped when released, parsed or not
        if let base = input.baseAddress { storage.memory.baseAddress?.copyMemory(from: base, byteCount: input.count) }
        root = try Self.parse(UnsafeRawBufferPointer(rebasing: storage.memory[..<input.count]))
        self.storage = storage
        count = input.count
    }

    private static func parse(_ text: UnsafeRawBufferPointer) throws(SignCoreError) -> JSON {
        // Unescaped strings are checked in a scratch buffer as large as the document, wiped after.
        try withHeapBuffer(byteCount: text.count, wiped: true) { (scratch) throws(SignCoreError) -> JSON in
            try parse(text, scratch: scratch)
        }
    }

    private static func parse(_ text: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer) throws(SignCoreError) -> JSON {
        var reader = Reader(bytes: text, scratch: scratch)
        if text.count >= 3, text[0] == 0xEF, text[1] == 0xBB, text[2] == 0xBF {
            throw Reader.error("a byte-order mark is not allowed")
        }
        let root = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == text.count else { throw Reader.error("unexpected data after the JSON value") }
        return root
    }

    /// The unescaped bytes of a string value, in a scratch buffer wiped after `body` returns
    /// (for secrets); nil when `value` is not a string.
    func withString<R, E: Error>(_ value: JSON, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R? {
        guard case .string(let range) = value else { return nil }
        return try withHeapBuffer(byteCount: range.count, wiped: true) { (scratch) throws(E) -> R in
            let reader = Reader(bytes: bytes, scratch: scratch)
            let count = reader.unescape(range)  // validated when parsed
            return try body(UnsafeRawBufferPointer(rebasing: scratch[..<count]))
        }
    }

    /// The unescaped bytes of a public string value; nil when `value` is not a string.
    func text(_ value: JSON) -> [UInt8]? {
        withString(value) { Array($0) }
    }

    /// A member of the root object, by name compared as bytes.
    subscript(name: StaticString) -> JSON? { root[name] }

    /// Reads JSON from `bytes`; positions are offsets into it.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        let scratch: UnsafeMutableRawBufferPointer
        var index = 0

        static func error(_ detail: String) -> SignCoreError { SignCoreError(.invalidInput, "invalid JSON: \(detail)") }

        private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

        mutating func skipSpace() {
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) throws(SignCoreError) -> JSON {
            guard depth < JSONDocument.maxDepth else { throw Self.error("nested deeper than 16 levels") }
            skipSpace()
            guard index < bytes.count else { throw Self.error("unexpected end of input") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: StaticString) throws(SignCoreError) {
            let w = word.bytes
            guard bytes.count - index >= w.count, bytesEqual(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + w.count)]), w) else {
                throw Self.error("unexpected character")
            }
            index += w.count
        }

        mutating func object(depth: Int) throws(SignCoreError) -> JSON {
            let start = index
            index += 1
            var members: [JSON.Member] = []
            var names = Set<[UInt8]>()
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members, start..<index) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Self.error("expected a member name") }
                let range = try string()
                let name = Array(UnsafeRawBufferPointer(rebasing: scratch[..<unescape(range)]))
                guard names.insert(name).inserted else { throw Self.error("duplicate member name") }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Self.error("expected ':'") }
                index += 1
                members.append(JSON.Member(name: name, value: try value(depth: depth + 1)))
                skipSpace()
                guard index < bytes.count else { throw Self.error("unexpected end of input") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { throw Self.error("expected ',' or '}'") }
                index += 1
                return .object(members, start..<index)
            }
        }

        mutating func array(depth: Int) throws(SignCoreError) -> JSON {
            index += 1
            var items: [JSON] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw Self.error("unexpected end of input") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "]") else { throw Self.error("expected ',' or ']'") }
                index += 1
                return .array(items)
            }
        }

        /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, kept as a range.
        mutating func number() throws(SignCoreError) -> Range<Int> {
            let start = index
            func digits() -> Int {
                let from = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                return index - from
            }
            func skip(_ byte: UInt8) -> Bool {
                guard index < bytes.count, bytes[index] == byte else { return false }
                index += 1
                return true
            }
            _ = skip(UInt8(ascii: "-"))
            let leadingZero = index < bytes.count && bytes[index] == UInt8(ascii: "0")
            let integer = digits()
            guard integer > 0, !leadingZero || integer == 1 else { throw Self.error("invalid number") }
            if skip(UInt8(ascii: ".")), digits() == 0 { throw Self.error("invalid number") }
            if skip(UInt8(ascii: "e")) || skip(UInt8(ascii: "E")) {
                _ = skip(UInt8(ascii: "+")) || skip(UInt8(ascii: "-"))
                guard digits() > 0 else { throw Self.error("invalid number") }
            }
            return start..<index
        }

        /// A string's range between its quotes, checked: escapes valid, no raw control
        /// character, surrogates paired, the unescaped bytes UTF-8.
        mutating func string() throws(SignCoreError) -> Range<Int> {
            index += 1
            let start = index
            while true {
                guard index < bytes.count else { throw Self.error("unterminated string") }
                let c = bytes[index]
                if c == UInt8(ascii: "\"") { break }
                if c < 0x20 { throw Self.error("control character in a string") }
                if c == UInt8(ascii: "\\") {
                    guard index + 1 < bytes.count else { throw Self.error("unterminated string") }
                    switch bytes[index + 1] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                         UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 2
                    case UInt8(ascii: "u"):
                        let unit = try hex4(at: index + 2)
                        index += 6
                        if (0xD800...0xDBFF).contains(unit) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u"),
                                  (0xDC00...0xDFFF).contains(try hex4(at: index + 2)) else {
                                throw Self.error("unpaired surrogate")
                            }
                            index += 6
                        } else if (0xDC00...0xDFFF).contains(unit) {
                            throw Self.error("unpaired surrogate")
                        }
                    default:
                        throw Self.error("unknown escape")
                    }
                } else {
                    index += 1
                }
            }
            let range = start..<index
            index += 1
            let count = unescape(range)
            guard UTF8Validation.isValid(UnsafeRawBufferPointer(rebasing: scratch[..<count])) else {
                throw Self.error("a string is not valid UTF-8")
            }
            return range
        }

        /// Writes the unescaped bytes of a checked string range to the start of `scratch`; their count.
        func unescape(_ range: Range<Int>) -> Int {
            var out = 0, i = range.lowerBound
            func put(_ byte: UInt8) {
                scratch[out] = byte
                out += 1
            }
            func putScalar(_ v: UInt32) {
                if v < 0x80 {
                    put(UInt8(v))
                } else if v < 0x800 {
                    put(UInt8(0xC0 | v >> 6)); put(UInt8(0x80 | v & 0x3F))
                } else if v < 0x10000 {
                    put(UInt8(0xE0 | v >> 12)); put(UInt8(0x80 | v >> 6 & 0x3F)); put(UInt8(0x80 | v & 0x3F))
                } else {
                    put(UInt8(0xF0 | v >> 18)); put(UInt8(0x80 | v >> 12 & 0x3F)); put(UInt8(0x80 | v >> 6 & 0x3F)); put(UInt8(0x80 | v & 0x3F))
                }
            }
            while i < range.upperBound {
                let c = bytes[i]
                guard c == UInt8(ascii: "\\") else { put(c); i += 1; continue }
                let e = bytes[i + 1]
                i += 2
                switch e {
                case UInt8(ascii: "b"): put(0x08)
                case UInt8(ascii: "f"): put(0x0C)
                case UInt8(ascii: "n"): put(0x0A)
                case UInt8(ascii: "r"): put(0x0D)
                case UInt8(ascii: "t"): put(0x09)
                case UInt8(ascii: "u"):
                    var v = (try? hex4(at: i)) ?? 0
                    i += 4
                    if (0xD800...0xDBFF).contains(v) {
                        let low = (try? hex4(at: i + 2)) ?? 0xDC00
                        v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
                    }
                    putScalar(v)
                default: put(e)  // " \ /
                }
            }
            return out
        }

        func hex4(at position: Int) throws(SignCoreError) -> UInt32 {
            guard position + 4 <= bytes.count else { throw Self.error("short \\u escape") }
            var v: UInt32 = 0
            for k in 0..<4 {
                guard let h = CanonicalURL.hexValue(bytes[position + k]) else { throw Self.error("bad \\u escape") }
                v = v << 4 | UInt32(h)
            }
            return v
        }
    }
}
