/// A small JSON object read under SPEC §6.1's document rules (RFC 8259; no byte-order mark, no
/// duplicate member in any object, no lone surrogate escape, at most 16 levels deep), for the
/// flows that take short JSON bodies (ATTEST.md §4.2 and §4.4). Every refusal is `invalidInput`.
/// Its string members are public text: secrets are read by the key parser, never here.
public struct JSONObject: Sendable {
    /// A member's value: a string (its unescaped bytes), an integer written without fraction or
    /// exponent that fits an `Int64`, or anything else.
    public enum Value: Sendable, Equatable {
        case string([UInt8])
        case integer(Int64)
        /// A nested object: its text as it stands in the document, braces included (a JWK,
        /// which `JWK.parseKey(bytes:)` reads under its own rules).
        case object([UInt8])
        case other
    }

    /// The members of the object, in document order (names unescaped; no two alike).
    public let members: [(name: [UInt8], value: Value)]

    /// Reads `bytes`, which must be one JSON object of at most `maxBytes` bytes.
    public init(bytes: [UInt8], maxBytes: Int) throws(SignCoreError) {
        guard bytes.count <= min(maxBytes, JSONDocument.maxBytes) else {
            throw SignCoreError(.invalidInput, "the JSON document is larger than its limit")
        }
        let document = try withBytes(of: bytes) { (raw) throws(SignCoreError) in try JSONDocument(copying: raw) }
        guard case .object(let members, _) = document.root else { throw SignCoreError(.invalidInput, "the JSON document is not an object") }
        self.members = members.map { member in
            switch member.value {
            case .string: (member.name, Value.string(document.text(member.value) ?? []))
            case .number(let range): (member.name, Self.integer(UnsafeRawBufferPointer(rebasing: document.bytes[range])))
            case .object(_, let range): (member.name, Value.object(Array(document.bytes[range])))
            default: (member.name, Value.other)
            }
        }
    }

    /// The value of the member named `name` (compared as bytes), nil when there is none.
    public subscript(name: String) -> Value? {
        members.first { $0.name.elementsEqual(name.utf8) }?.value
    }

    /// A number as an `Int64` when it is an integer (an optional `-`, then digits: the parser
    /// has already refused leading zeros) that fits; `.other` otherwise.
    private static func integer(_ text: UnsafeRawBufferPointer) -> Value {
        var digits = text[...], negative = false
        if digits.first == UInt8(ascii: "-") { negative = true; digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return .other
        }
        let magnitude = digits.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
        return .integer(negative ? -magnitude : magnitude)
    }
}
