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
}
