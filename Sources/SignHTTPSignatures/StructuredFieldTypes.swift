import Foundation
import RawStructuredFieldValues
import SignCore

/// The structured fields whose type this profile knows, for `sf` (RFC 9421 §2.1.1: the signer and
/// verifier must agree on a field's type; docs/HTTPSIG.md §2.3). `key` always reads a dictionary.
enum StructuredFieldTypes {
    enum Kind { case item, list, dictionary }

    /// RFC 9651's registry of the fields used with signatures and digests, and RFC 9421's own
    /// examples (`example-dict`, …) so its appendix can be reproduced.
    static let known: [String: Kind] = [
        "content-digest": .dictionary, "repr-digest": .dictionary, "want-content-digest": .dictionary, "want-repr-digest": .dictionary,
        "signature": .dictionary, "signature-input": .dictionary, "accept-signature": .dictionary, "signature-agent": .dictionary,
        "priority": .dictionary, "cache-status": .list, "proxy-status": .list, "accept-ch": .list,
        "example-dict": .dictionary, "example-list": .list, "example-item": .item,
    ]

    /// The most bytes of a field parsed as a structured field here.
    static let maxFieldBytes = 16 << 10

    static func dictionary(_ value: String) throws(SignCoreError) -> OrderedMap<String, ItemOrInnerList> {
        guard value.utf8.count <= maxFieldBytes else { throw invalid }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        do { return try parser.parseDictionaryFieldValue() } catch { throw invalid }
    }

    /// An RFC 8941 value as this profile serialises it (docs/HTTPSIG.md §2.3): RFC 9651's Date and
    /// Display String are no RFC 8941 values (refused); a byte sequence is read as RFC 8941 §4.2.7
    /// allows (padding optional, pad bits ignored) and written padded; one that is not base64, has
    /// `=` inside, a length of 1 modulo 4 or more padding than needed is refused.
    static func normalized(_ member: ItemOrInnerList) throws(SignCoreError) -> ItemOrInnerList {
        switch member {
        case .item(let item): return .item(try normalized(item))
        case .innerList(let list):
            var items = BareInnerList()
            for item in list.bareInnerList { items.append(try normalized(item)) }
            return .innerList(InnerList(bareInnerList: items, parameters: try normalized(list.rfc9651Parameters)))
        }
    }

    private static func normalized(_ item: Item) throws(SignCoreError) -> Item {
        Item(bareItem: try normalized(item.rfc9651BareItem), parameters: try normalized(item.rfc9651Parameters))
    }

    private static func normalized(_ parameters: OrderedMap<String, RFC9651BareItem>) throws(SignCoreError) -> OrderedMap<String, RFC9651BareItem> {
        var out = OrderedMap<String, RFC9651BareItem>()
        for (key, value) in parameters { out[key] = try normalized(value) }
        return out
    }

    private static func normalized(_ bare: RFC9651BareItem) throws(SignCoreError) -> RFC9651BareItem {
        switch bare {
        case .date, .displayString: throw invalid
        case .undecodedByteSequence(let text): return .undecodedByteSequence(try canonicalBase64(text))
        default: return bare
        }
    }

    /// Padded base64 of what `text` decodes to, read leniently as RFC 8941 §4.2.7 allows.
    static func canonicalBase64(_ text: String) throws(SignCoreError) -> String {
        let bytes = Array(text.utf8)
        let data = bytes.prefix { $0 != UInt8(ascii: "=") }
        let padding = bytes.count - data.count
        guard bytes[data.count...].allSatisfy({ $0 == UInt8(ascii: "=") }), data.count % 4 != 1,
              padding == 0 || (padding <= 2 && bytes.count % 4 == 0) else { throw invalid }
        var decoded: [UInt8] = []
        var accumulator: UInt32 = 0, bits = 0
        for byte in data {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            default: throw invalid
            }
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                decoded.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return Data(decoded).base64EncodedString()
    }

    /// The value parsed as the field's known type and serialised again (RFC 8941 §4.1).
    static func reserialize(_ value: String, field: String) throws(SignCoreError) -> String {
        guard let kind = known[field] else { throw ComponentIdentifier.invalid("sf on a field whose structured type is not known") }
        guard value.utf8.count <= maxFieldBytes else { throw invalid }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        var serializer = StructuredFieldValueSerializer()
        do {
            let bytes: [UInt8]
            switch kind {
            case .item:
                guard case .item(let item) = try normalized(.item(try parser.parseItemFieldValue())) else { throw invalid }
                bytes = try serializer.writeItemFieldValue(item)
            case .list:
                var list: [ItemOrInnerList] = []
                for member in try parser.parseListFieldValue() { list.append(try normalized(member)) }
                bytes = try serializer.writeListFieldValue(list)
            case .dictionary:
                var dictionary = OrderedMap<String, ItemOrInnerList>()
                for (key, member) in try parser.parseDictionaryFieldValue() { dictionary[key] = try normalized(member) }
                bytes = try serializer.writeDictionaryFieldValue(dictionary)
            }
            return String(decoding: bytes, as: UTF8.self)
        } catch {
            throw invalid
        }
    }

    /// One dictionary member's value (an item with its parameters, or an inner list) serialised.
    static func serialize(_ members: [ItemOrInnerList]) throws(SignCoreError) -> String {
        var serializer = StructuredFieldValueSerializer()
        var normal: [ItemOrInnerList] = []
        for member in members { normal.append(try normalized(member)) }
        do { return String(decoding: try serializer.writeListFieldValue(normal), as: UTF8.self) } catch { throw invalid }
    }

    private static var invalid: SignCoreError {
        ComponentIdentifier.invalid("a field covered as a structured field is not one of its type")
    }
}
