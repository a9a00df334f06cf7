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

    static func dictionary(_ value: String, field: String) throws(SignCoreError) -> OrderedMap<String, ItemOrInnerList> {
        guard value.utf8.count <= maxFieldBytes else { throw invalid }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        do { return try parser.parseDictionaryFieldValue() } catch { throw invalid }
    }

    /// The value parsed as the field's known type and serialised again (RFC 8941 §4.1).
    static func reserialize(_ value: String, field: String) throws(SignCoreError) -> String {
        guard let kind = known[field] else { throw ComponentIdentifier.invalid("sf on a field whose structured type is not known") }
        guard value.utf8.count <= maxFieldBytes else { throw invalid }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        var serializer = StructuredFieldValueSerializer()
        do {
            let bytes: [UInt8] = switch kind {
            case .item: try serializer.writeItemFieldValue(try parser.parseItemFieldValue())
            case .list: try serializer.writeListFieldValue(try parser.parseListFieldValue())
            case .dictionary: try serializer.writeDictionaryFieldValue(try parser.parseDictionaryFieldValue())
            }
            return String(decoding: bytes, as: UTF8.self)
        } catch {
            throw invalid
        }
    }

    /// One dictionary member's value (an item with its parameters, or an inner list) serialised.
    static func serialize(_ members: [ItemOrInnerList], field: String) throws(SignCoreError) -> String {
        var serializer = StructuredFieldValueSerializer()
        do { return String(decoding: try serializer.writeListFieldValue(members), as: UTF8.self) } catch { throw invalid }
    }

    private static var invalid: SignCoreError {
        ComponentIdentifier.invalid("a field covered as a structured field is not one of its type")
    }
}
