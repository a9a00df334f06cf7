import Testing
@testable import SignCore

/// The key-document reader: strict RFC 8259, bounded, duplicate names refused.
@Suite struct JSONTests {
    func parse(_ text: String) throws(SignCoreError) -> JSONDocument {
        try withBytes(of: Array(text.utf8)) { (bytes) throws(SignCoreError) in try JSONDocument(copying: bytes) }
    }
    func string(_ document: JSONDocument, _ value: JSON?) -> String? {
        value.flatMap { document.text($0) }.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test(arguments: ["0", "-0", "12", "-3.25", "1e5", "1E+5", "2.5e-3", "[1, 2.0, -0.5]"])
    func acceptsNumbers(_ text: String) throws {
        _ = try parse(text)
    }

    @Test(arguments: ["01", "+1", ".5", "1.", "1e", "-", "1e+", "--1", "0x10", "1.2.3", "NaN", "Infinity"])
    func refusesNonJSONNumbers(_ text: String) {
        let error = #expect(throws: SignCoreError.self) { _ = try parse(text) }
        #expect(error?.code == .invalidInput)
    }

    @Test func stringsAndEscapes() throws {
        let json = try parse(#"{"a":"x\"\\\/\n\u00e9\ud83d\ude00","b":[true,false,null]}"#)
        #expect(string(json, json["a"]) == "x\"\\/\né😀")
        #expect(json["b"] != nil && json["c"] == nil)
    }

    @Test(arguments: [
        #"{"k":1,"k":2}"#,            // duplicate member name
        #"{"k":1,"\u006b":2}"#,       // the same name after unescaping
        "\u{FEFF}{}",                 // a byte-order mark
        #"{"a":"\udc00"}"#,           // a lone low surrogate
        #"{"a":"\ud800\u0041"}"#,     // a high surrogate followed by no low one
        #"{"a":"\ud800"}"#,           // unpaired surrogate
        #"{"a":"\x"}"#,               // unknown escape
        "{\"a\":\"tab\there\"}",      // raw control character
        #"{"a":1,}"#,                 // trailing comma
        #"{"a":1} x"#,                // data after the value
        #"{"a" 1}"#,                  // missing colon
        #""unterminated"#,
        String(repeating: "[", count: 17) + String(repeating: "]", count: 17),  // deeper than 16
    ])
    func refusesMalformedDocuments(_ text: String) {
        #expect(throws: SignCoreError.self) { _ = try parse(text) }
    }

    @Test func nestingLimitIsSixteen() throws {
        _ = try parse(String(repeating: "[", count: 16) + String(repeating: "]", count: 16))
    }

    @Test func sizeLimit() {
        let big = "\"" + String(repeating: "a", count: JSONDocument.maxBytes) + "\""
        let error = #expect(throws: SignCoreError.self) { _ = try parse(big) }
        #expect(error?.code == .invalidInput)
    }

    @Test func invalidUTF8InAStringIsRefused() {
        #expect(throws: SignCoreError.self) { _ = try withBytes(of: [0x22, 0xC3, 0x28, 0x22]) { (b) throws(SignCoreError) in try JSONDocument(copying: b) } }
    }

    @Test func quoteEscapesWhatJSONRequires() throws {
        let original = "a\"b\\c\nd\u{1}é"
        let document = try parse(JSON.quote(original))
        #expect(string(document, document.root) == original)
    }

    /// Linear time (a quadratic duplicate check would take tens of seconds here): a document at the 1 MiB limit with
    /// 80,000 members, and one with a duplicate as its last member, parse or fail quickly. The
    /// bound asserted is loose (a quadratic reader needs minutes in a debug build); the figure
    /// is printed.
    @Test func largeDocumentsParseInLinearTime() throws {
        var text = "{" + (0..<80_000).map { "\"m\($0)\":\($0 % 10)" }.joined(separator: ",")
        let clock = ContinuousClock()
        let elapsed = try clock.measure { _ = try parse(text + "}") }
        text += ",\"m7\":1}"
        let duplicate = clock.measure { #expect(throws: SignCoreError.self) { _ = try parse(text) } }
        print("JSON: \(text.utf8.count) bytes, 80,000 members: \(elapsed); with a duplicate: \(duplicate)")
        #expect(elapsed < .seconds(5) && duplicate < .seconds(5))
        // Many array items and one huge string, at the size limit.
        _ = try parse("[" + Array(repeating: "0", count: 500_000).joined(separator: ",") + "]")
        _ = try parse("\"" + String(repeating: "a", count: JSONDocument.maxBytes - 2) + "\"")
    }

    /// Names are compared as bytes: a Kelvin sign (U+212A) is not a K.
    @Test func namesAreBytesNotUnicodeText() throws {
        let document = try parse(#"{"\u212Aty":"x","kty":"y"}"#)
        #expect(string(document, document["kty"]) == "y")
    }
}
