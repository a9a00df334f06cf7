/// A small strict JSON reader (RFC 8259) for key documents, with limits: it is the one parser
/// in SignCore that reads a whole document, so it bounds size and depth and rejects duplicate
/// member names (two `"k"` members would make a key ambiguous).
enum JSON: Sendable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    static let maxBytes = 1 << 20
    static let maxDepth = 16

    subscript(member: String) -> JSON? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.0 == member }?.1
    }

    var stringValue: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    static func parse(_ text: [UInt8]) throws(SignCoreError) -> JSON {
        guard text.count <= maxBytes else { throw SignCoreError(.invalidInput, "the JSON document is larger than 1 MiB") }
        var reader = Reader(bytes: text)
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.index == text.count else { throw Reader.error("unexpected data after the JSON value") }
        return value
    }

    /// Writes `s` as a JSON string literal.
    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        static func error(_ detail: String) -> SignCoreError { SignCoreError(.invalidInput, "invalid JSON: \(detail)") }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) throws(SignCoreError) -> JSON {
            guard depth < JSON.maxDepth else { throw Self.error("nested deeper than 16 levels") }
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

        mutating func literal(_ word: String) throws(SignCoreError) {
            let w = Array(word.utf8)
            guard index + w.count <= bytes.count, Array(bytes[index..<(index + w.count)]) == w else {
                throw Self.error("unexpected character")
            }
            index += w.count
        }

        mutating func object(depth: Int) throws(SignCoreError) -> JSON {
            index += 1
            var members: [(String, JSON)] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Self.error("expected a member name") }
                let name = try string()
                guard !members.contains(where: { $0.0 == name }) else { throw Self.error("duplicate member name") }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Self.error("expected ':'") }
                index += 1
                members.append((name, try value(depth: depth + 1)))
                skipSpace()
                guard index < bytes.count else { throw Self.error("unexpected end of input") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { throw Self.error("expected ',' or '}'") }
                index += 1
                return .object(members)
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

        /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, kept as text.
        mutating func number() throws(SignCoreError) -> String {
            let start = index
            func digits() -> Int {
                let from = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                return index - from
            }
            func skip(_ c: Character) -> Bool {
                guard index < bytes.count, bytes[index] == c.asciiValue else { return false }
                index += 1
                return true
            }
            _ = skip("-")
            let leadingZero = index < bytes.count && bytes[index] == UInt8(ascii: "0")
            let integer = digits()
            guard integer > 0, !leadingZero || integer == 1 else { throw Self.error("invalid number") }
            if skip("."), digits() == 0 { throw Self.error("invalid number") }
            if skip("e") || skip("E") {
                _ = skip("+") || skip("-")
                guard digits() > 0 else { throw Self.error("invalid number") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func string() throws(SignCoreError) -> String {
            index += 1
            var out = [UInt8]()
            while true {
                guard index < bytes.count else { throw Self.error("unterminated string") }
                let c = bytes[index]
                index += 1
                if c == UInt8(ascii: "\"") { break }
                if c < 0x20 { throw Self.error("control character in a string") }
                if c != UInt8(ascii: "\\") { out.append(c); continue }
                guard index < bytes.count else { throw Self.error("unterminated string") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw Self.error("unpaired surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw Self.error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw Self.error("unpaired surrogate") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw Self.error("unknown escape")
                }
            }
            guard UTF8Validation.isValid(out) else { throw Self.error("a string is not valid UTF-8") }
            return String(decoding: out, as: UTF8.self)
        }

        mutating func hex4() throws(SignCoreError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw Self.error("short \\u escape") }
            var v: UInt32 = 0
            for k in 0..<4 {
                guard let h = CanonicalURL.hexValue(bytes[index + k]) else { throw Self.error("bad \\u escape") }
                v = v << 4 | UInt32(h)
            }
            index += 4
            return v
        }
    }
}
