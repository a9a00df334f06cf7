/// A parsed JSON value; strings and numbers are ranges of their `JSONDocument`'s bytes.
enum JSON: Sendable {
    case null
    case bool(Bool)
    case number(Range<Int>)
    /// Between the quotes, escapes not decoded (`JSONDocument.withString` decodes them).
    case string(Range<Int>)
    case array([JSON])
    /// The members, and the range of the whole object's text (braces included).
    case object([Member], Range<Int>)

    struct Member: Sendable {
        /// The name's bytes after unescaping.
        let name: [UInt8]
        let value: JSON
    }

    /// The member named `name`, compared as bytes (never as Unicode text: a Kelvin sign is
    /// not a `K`).
    subscript(name: StaticString) -> JSON? {
        guard case let .object(members, _) = self else { return nil }
        let wanted = name.bytes
        return members.first { $0.name.withUnsafeBytes { bytesEqual($0, wanted) } }?.value
    }

    var isString: Bool {
        if case .string = self { return true }
        return false
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
}

/// A JSON string literal of public text (RFC 8259 §7), for the flows that write short JSON.
@_spi(SignCoreTools)
public func jsonQuoted(_ text: String) -> String { JSON.quote(text) }
