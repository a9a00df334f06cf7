import Foundation
import HTTPTypes
import RawStructuredFieldValues
import SignCore

/// The `Signature-Input` and `Signature` fields of a message (RFC 9421 §4): dictionaries keyed by
/// label, the first of parameters, the second of byte sequences.
public struct SignatureFields: Sendable {
    /// One labelled signature: its parameters and its bytes (nil when `Signature` has no member
    /// of the label, or one that is not a byte sequence).
    public struct Entry: Sendable {
        public var label: String
        public var parameters: SignatureParameters
        public var signature: [UInt8]?
    }

    /// The entries in `Signature-Input`'s order.
    public var entries: [Entry]

    public static let signatureInput = HTTPField.Name("signature-input")!
    public static let signature = HTTPField.Name("signature")!
    public static let acceptSignature = HTTPField.Name("accept-signature")!

    /// The most bytes of either field, and the most labels (docs/HTTPSIG.md §2.6).
    public static let maxFieldBytes = 8 << 10
    public static let maxEntries = 8

    /// Whether the fields carry any signature at all.
    public static func isPresent(in fields: HTTPFields) -> Bool { fields[signatureInput] != nil || fields[signature] != nil }

    /// Reads both fields (their lines combined, RFC 9110 §5.3). `signatureNotFound` when there
    /// is no `Signature-Input`; `signatureFieldsMalformed` when either is no dictionary, is over
    /// its limits, or a `Signature-Input` member is malformed (`componentInvalid` for a component).
    /// A `Signature` member that is no byte sequence, or absent, leaves its entry's bytes nil:
    /// only the entry verified must have them.
    public init(_ fields: HTTPFields) throws(SignCoreError) {
        let inputs = fields[values: Self.signatureInput], signatures = fields[values: Self.signature]
        guard !inputs.isEmpty else { throw SignCoreError(.signatureNotFound, "the request has no Signature-Input field") }
        let input = try Self.dictionary(inputs), signature = try Self.dictionary(signatures)
        guard input.count <= Self.maxEntries, signature.count <= Self.maxEntries else {
            throw SignatureParameters.malformed("a message carries at most 8 signatures")
        }
        var entries: [Entry] = []
        for (label, member) in input {
            var bytes: [UInt8]?
            if case .item(let item)? = signature[label], case .undecodedByteSequence(let encoded) = item.rfc9651BareItem,
               item.rfc9651Parameters.isEmpty, let data = Data(base64Encoded: encoded) {
                bytes = Array(data)
            }
            entries.append(Entry(label: label, parameters: try SignatureParameters(member: member), signature: bytes))
        }
        self.entries = entries
    }

    private static func dictionary(_ lines: [String]) throws(SignCoreError) -> OrderedMap<String, ItemOrInnerList> {
        let combined = lines.joined(separator: ", ")
        guard combined.utf8.count <= maxFieldBytes else { throw SignatureParameters.malformed("a signature field is over 8 KiB") }
        var parser = StructuredFieldValueParser(Array(combined.utf8))
        do { return try parser.parseDictionaryFieldValue() } catch {
            throw SignatureParameters.malformed("Signature-Input or Signature is not a structured dictionary")
        }
    }

    /// The two field values for one signature, as a signer adds them (RFC 9421 §4.1, §4.2).
    public static func serialize(label: String, parameters: SignatureParameters, signature: [UInt8]) throws(SignCoreError)
        -> (input: String, signature: String) {
        guard isLabel(label) else { throw SignatureParameters.malformed("a label is a structured-field key") }
        return (label + "=" + (try parameters.serialized()), label + "=:" + Data(signature).base64EncodedString() + ":")
    }

    /// RFC 8941 §3.2 key: `lcalpha` or `*`, then `lcalpha`, digits, `_ - . *`, at most 64 bytes here.
    public static func isLabel(_ label: String) -> Bool {
        guard let first = label.utf8.first, first == UInt8(ascii: "*") || (0x61...0x7A).contains(first), label.utf8.count <= 64 else { return false }
        return label.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || Array("_-.*".utf8).contains($0) }
    }
}
