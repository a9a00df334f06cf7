import CSignBytes
import Testing
@testable import SignCore

@Suite struct CanonicalURLTests {
    func canonical(bytes: [UInt8]) throws(SignCoreError) -> String { try CanonicalURL.canonicalize(bytes: bytes) }

    @Test func errorLeavesBufferUnchanged() {
        var out = Array("prefix".utf8)
        let bad = Array("https://h.example/a%zz".utf8)
        #expect(throws: SignCoreError.self) {
            try withBytes(of: bad) { (raw) throws(SignCoreError) in try CanonicalURL.write(raw, into: &out) }
        }
        #expect(out == Array("prefix".utf8))
    }

    /// Random byte strings built from the characters the rules care about: never a crash, and
    /// whatever is accepted canonicalises to a fixed point.
    @Test func randomInputNeverCrashesAndIsIdempotent() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("https://[]:@%/?#&=+.aZ09~é\u{1}\t ".utf8) + [0x80, 0xFF, 0xC3]
        for _ in 0..<5000 {
            var bytes = Array(Array("https://h/".utf8).prefix(Int.random(in: 0...10, using: &generator)))
            for _ in 0..<Int.random(in: 0..<40, using: &generator) { bytes.append(alphabet.randomElement(using: &generator)!) }
            if let once = try? canonical(bytes: bytes) {
                #expect((try? canonical(bytes: Array(once.utf8))) == once, "not idempotent: \(bytes)")
            }
        }
    }

    /// The one-pass path for common URLs and the general path give the same canonical form (or
    /// the same error) for URLs assembled from the pieces where the rules differ.
    @Test func commonPathAgreesWithGeneralPath() {
        var generator = SystemRandomNumberGenerator()
        func pick(_ choices: [String]) -> String { choices.randomElement(using: &generator)! }
        func result(_ url: String, commonPath: Bool) -> String {
            do {
                return try withUTF8(of: url) { (raw) throws(SignCoreError) in
                    try CanonicalURL.withCanonical(raw, commonPath: commonPath) { String(decoding: $0, as: UTF8.self) }
                }
            } catch {
                return "error \(error.code)"
            }
        }
        let pieces = ["a", "Z9", "-._~", "", ".", "..", ".x", "%2E", "%2e", "%41", "%C3%A9", "%c3%A9", "%2F", "%3D", "%20",
                      "+", "=", "é", "%", "%G1", "!", " ", "#f", "&", "&&", "%e2%82%ac", "%2b", "a+b", "%7e", "%3d", "++", "%fF"]
        for _ in 0..<20_000 {
            var url = pick(["https://", "http://", "HTTPS://", "http:/", "ftp://", "https://"])
            url += pick(["api.example.com", "API.Example.com", "h", "a_b~c", "", "[::1]", "h:8443", "h:443", "h:", "u@h", "h%41"])
            for _ in 0..<Int.random(in: 0...3, using: &generator) { url += "/" + pick(pieces) + pick(pieces) }
            if Bool.random(using: &generator) {
                url += "?"
                for k in 0..<Int.random(in: 0...20, using: &generator) {
                    url += (k > 0 ? "&" : "") + pick(pieces) + pick(["=", "", "=="]) + pick(pieces)
                }
            }
            #expect(result(url, commonPath: true) == result(url, commonPath: false), "\(url)")
        }
        let common = "https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9"
        #expect(result(common, commonPath: true) == "https://api.example.com/v1/orders?id=42&q=caf%C3%A9&sort=desc")
        // Lower-case escapes and '+' stay on the one-pass path (realistic URLs stay fast).
        for (url, canonical) in [
            ("https://api.example.com/a+b/caf%c3%a9?q=a+b+c&k%3d=%e2%82%ac", "https://api.example.com/a%2Bb/caf%C3%A9?k%3D=%E2%82%AC&q=a%20b%20c"),
            ("http://h?b=%2f&a=+", "http://h/?a=%20&b=%2F"),
        ] {
            #expect(Self.viaCommonPath(url) == canonical, "\(url)")
            #expect(result(url, commonPath: false) == canonical)
        }
    }

    /// The one-pass path spells out at most 16 '+' (each moves the rest of the output, so a long
    /// URL of '+' would cost quadratic time); beyond that the general path, linear, takes over
    /// with the same result.
    @Test func manyPlusesGoTheGeneralWay() throws {
        for (count, common) in [(16, true), (17, false), (8000, false)] {
            for url in ["https://h/a" + String(repeating: "+", count: count), "https://h?q=" + String(repeating: "+", count: count)] {
                #expect((Self.viaCommonPath(url) != nil) == common, "\(count)")
                let expected = url.hasPrefix("https://h?") ? "https://h/?q=" + String(repeating: "%20", count: count)
                                                           : "https://h/a" + String(repeating: "%2B", count: count)
                #expect(try CanonicalURL.canonicalize(url) == expected)
            }
        }
    }

    /// The canonical form by `sc_url_common` alone, in a buffer of the size SignCore gives it;
    /// nil when it leaves the URL to the general path.
    static func viaCommonPath(_ url: String) -> String? {
        Array(url.utf8).withUnsafeBytes { raw in
            withUnsafeTemporaryAllocation(byteCount: 2 * (3 * raw.count + 24), alignment: 8) { scratch in
                let spare = UnsafeMutableRawBufferPointer(rebasing: scratch[(3 * raw.count + 24)...])
                let count = sc_url_common(raw.baseAddress, raw.count, scratch.baseAddress, spare.baseAddress)
                return count < 0 ? nil : String(decoding: UnsafeRawBufferPointer(start: scratch.baseAddress, count: count), as: UTF8.self)
            }
        }
    }
}
