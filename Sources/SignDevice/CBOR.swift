/// A strict, bounded CBOR reader (RFC 8949) for the platforms' attestation objects and
/// assertions (docs/ATTEST.md §9.7): definite lengths only, every head in its shortest form
/// (RFC 8949 §4.2.1 preferred serialization), no tags, no floating-point or undefined values,
/// text strings valid UTF-8, map keys unsigned, negative or text and unique, at most 16 levels
/// deep, 4096 items and 64 KiB, and nothing after the one top-level item. Anything else is a
/// `CBOR.Failure`; no input traps.
public indirect enum CBOR: Sendable, Equatable {
    case unsigned(UInt64)
    /// -1 − n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([Entry])
    case bool(Bool)
    case null

    public struct Entry: Sendable, Equatable {
        public let key: CBOR
        public let value: CBOR

        public init(key: CBOR, value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    /// Equal items: text compared as bytes (never by Unicode equivalence), as map keys are.
    public static func == (lhs: CBOR, rhs: CBOR) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)), (.negative(let a), .negative(let b)): a == b
        case (.bytes(let a), .bytes(let b)): a == b
        case (.text(let a), .text(let b)): a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        case (.null, .null): true
        default: false
        }
    }

    public static let maxBytes = 65536
    public static let maxDepth = 16
    public static let maxItems = 4096

    /// Why a document was refused (for tests and logs; callers report their own code).
    public enum Failure: Error, Equatable {
        case tooLarge, truncated, trailingBytes, tooDeep, tooManyItems, notShortest, indefiniteLength, tag, unsupportedSimple
        case invalidText, invalidKey, duplicateKey
    }

    /// Reads one item that is the whole of `bytes`.
    public init(decoding bytes: [UInt8]) throws(Failure) {
        guard bytes.count <= Self.maxBytes else { throw .tooLarge }
        var reader = Reader(bytes: bytes)
        self = try reader.item(depth: 1)
        guard reader.offset == bytes.count else { throw .trailingBytes }
    }

    /// The value of the map entry whose key is the text `key`; nil when there is none or this is not a map.
    public subscript(key: String) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(key) }?.value
    }

    /// The value of the map entry whose key is the integer `key` (COSE keys); nil when none.
    public subscript(integer key: Int64) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        let wanted: CBOR = key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-1 - key))
        return entries.first { $0.key == wanted }?.value
    }

    public var bytesValue: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var arrayValue: [CBOR]? {
        if case .array(let value) = self { return value }
        return nil
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        var items = 0

        mutating func byte() throws(Failure) -> UInt8 {
            guard offset < bytes.count else { throw .truncated }
            defer { offset += 1 }
            return bytes[offset]
        }

        /// The argument of a head whose additional information is `info`, in its shortest form.
        mutating func argument(_ info: UInt8) throws(Failure) -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24...27:
                let size = 1 << Int(info - 24)
                guard bytes.count - offset >= size else { throw .truncated }
                let value = bytes[offset..<offset + size].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                offset += size
                // The shortest form: a value that fits the next smaller size is refused.
                let smallest: UInt64 = switch info { case 24: 24; case 25: 0x100; case 26: 0x1_0000; default: 0x1_0000_0000 }
                guard value >= smallest else { throw .notShortest }
                return value
            case 31: throw .indefiniteLength
            default: throw .truncated  // 28-30 are reserved: a malformed head
            }
        }

        mutating func length(_ info: UInt8) throws(Failure) -> Int {
            let value = try argument(info)
            guard value <= UInt64(bytes.count - offset) else { throw .truncated }
            return Int(value)
        }

        mutating func item(depth: Int) throws(Failure) -> CBOR {
            guard depth <= CBOR.maxDepth else { throw .tooDeep }
            items += 1
            guard items <= CBOR.maxItems else { throw .tooManyItems }
            let head = try byte()
            let major = head >> 5, info = head & 0x1F
            switch major {
            case 0: return .unsigned(try argument(info))
            case 1: return .negative(try argument(info))
            case 2:
                let count = try length(info)
                defer { offset += count }
                return .bytes(Array(bytes[offset..<offset + count]))
            case 3:
                let count = try length(info)
                defer { offset += count }
                guard let text = String(validating: bytes[offset..<offset + count], as: UTF8.self) else { throw .invalidText }
                return .text(text)
            case 4:
                // Each element is at least one byte: a count past the bytes left is truncated.
                let count = try length(info)
                var elements: [CBOR] = []
                elements.reserveCapacity(min(count, 64))
                for _ in 0..<count { elements.append(try item(depth: depth + 1)) }
                return .array(elements)
            case 5:
                let value = try argument(info)
                guard value <= UInt64(bytes.count - offset) / 2 else { throw .truncated }
                var entries: [Entry] = []
                // Keys are unique by their encoding: every head is in its shortest form, so two
                // encodings of one key are the same bytes (and text is compared as bytes).
                var keys = Set<ArraySlice<UInt8>>()
                for _ in 0..<Int(value) {
                    let start = offset
                    let key = try item(depth: depth + 1)
                    switch key {
                    case .unsigned, .negative, .text: break
                    default: throw .invalidKey
                    }
                    guard keys.insert(bytes[start..<offset]).inserted else { throw .duplicateKey }
                    entries.append(Entry(key: key, value: try item(depth: depth + 1)))
                }
                return .map(entries)
            case 6: throw .tag
            default:
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                default: throw .unsupportedSimple
                }
            }
        }
    }
}
