import HTTPTypes
import RawStructuredFieldValues
import SignCore

/// Web Bot Auth's `Signature-Agent` field (docs/HTTPSIG.md §7.1): where the agent's key directory
/// is. Older drafts (and Cloudflare's verifier in 2026) send an sf-string; newer ones a dictionary
/// whose member for a signature's label names its agent. Both are read; a signer sends the dictionary.
public enum SignatureAgent {
    public static let field = HTTPField.Name("signature-agent")!
    /// The longest field read.
    public static let maxFieldBytes = 2048

    /// The agent's URL for the signature labelled `label` (or, when its `signature-agent` component
    /// has `key`, that member): the string form's value, or the dictionary's member. Nil when the
    /// field is absent, over 2048 bytes, of neither form, or has no such member.
    public static func url(in fields: HTTPFields, label: String, member: String? = nil) -> String? {
        let lines = fields[values: field]
        guard !lines.isEmpty else { return nil }
        let value = lines.joined(separator: ", ")
        guard value.utf8.count <= maxFieldBytes else { return nil }
        var itemParser = StructuredFieldValueParser(Array(value.utf8))
        if let item = try? itemParser.parseItemFieldValue(), case .string(let url) = item.rfc9651BareItem { return url }
        var dictionaryParser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? dictionaryParser.parseDictionaryFieldValue(),
              case .item(let item)? = dictionary[member ?? label], case .string(let url) = item.rfc9651BareItem else { return nil }
        return url
    }

    /// The dictionary a signer sends: `label="url"`.
    public static func fieldValue(label: String, url: String) -> String {
        var serializer = StructuredFieldValueSerializer()
        var dictionary = OrderedMap<String, ItemOrInnerList>()
        dictionary[label] = .item(Item(bareItem: RFC9651BareItem.string(url), parameters: OrderedMap<String, RFC9651BareItem>()))
        return (try? serializer.writeDictionaryFieldValue(dictionary)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// The origin (`https://host[:port]`, the host in lower case, without `:443`) of an agent URL:
    /// nil for anything but an absolute https URL with a host and no user information.
    public static func origin(of url: String) -> String? {
        guard let canonical = try? CanonicalURL.canonicalize(url), canonical.hasPrefix("https://") else { return nil }
        let rest = canonical.dropFirst("https://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        return "https://" + authority
    }
}
