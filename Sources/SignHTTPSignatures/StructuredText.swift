import RawStructuredFieldValues
import SignCore

/// RFC 8941 §4.1's serialisation of the items a signature's identifiers and parameters are made
/// of (strings, integers, Booleans), written straight into bytes: the base is built on every
/// sign and verify, and the library's generic serializer costs more than the signature of an
/// HMAC key. Anything else (a token, a decimal, a byte sequence among a signature's unread
/// parameters) goes through the library's serializer.
enum StructuredText {
    /// An sf-string: printable ASCII only (0x20-0x7E), `"` and `\` escaped; nil otherwise.
    static func appendString(_ text: String, to out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            guard (0x20...0x7E).contains(byte) else { return false }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
        return true
    }

    /// An sf-integer (RFC 8941 §3.3.1: at most 15 digits).
    static func appendInteger(_ value: Int64, to out: inout [UInt8]) -> Bool {
        guard (-999_999_999_999_999...999_999_999_999_999).contains(value) else { return false }
        out += String(value).utf8
        return true
    }

    /// `;key` for true, `;key=?0` for false, `;key=value` for any other bare item.
    static func appendParameter(_ key: String, _ value: RFC9651BareItem, to out: inout [UInt8]) -> Bool {
        out.append(UInt8(ascii: ";"))
        out += key.utf8
        switch value {
        case .bool(true): return true
        case .bool(false): out += "=?0".utf8; return true
        case .integer(let integer): out.append(UInt8(ascii: "=")); return appendInteger(integer, to: &out)
        case .string(let text): out.append(UInt8(ascii: "=")); return appendString(text, to: &out)
        default:
            var serializer = StructuredFieldValueSerializer()
            guard let item = try? serializer.writeItemFieldValue(Item(bareItem: value, parameters: OrderedMap<String, RFC9651BareItem>())) else {
                return false
            }
            out.append(UInt8(ascii: "="))
            out += item
            return true
        }
    }
}
