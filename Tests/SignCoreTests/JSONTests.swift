import Testing
@testable import SignCore

/// The key-document reader: strict RFC 8259, bounded, duplicate names refused.
@Suite struct JSONTests {
    func parse(_ text: String) throws(SignCoreError) -> JSON { try JSON.parse(Array(text.utf8)) }

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
        #expect(json["a"]?.stringValue == "x\"\\/\né😀")
        #expect(json["b"] != nil && json["c"] == nil)
    }

    @Test(arguments: [
        #"{"k":1,"k":2}"#,            // duplicate member name
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
        let big = "\"" + String(repeating: "a", count: JSON.maxBytes) + "\""
        let error = #expect(throws: SignCoreError.self) { _ = try parse(big) }
        #expect(error?.code == .invalidInput)
    }

    @Test func invalidUTF8InAStringIsRefused() {
        #expect(throws: SignCoreError.self) { _ = try JSON.parse([0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test func quoteEscapesWhatJSONRequires() throws {
        let original = "a\"b\\c\nd\u{1}é"
        #expect(try parse(JSON.quote(original)).stringValue == original)
    }
}
