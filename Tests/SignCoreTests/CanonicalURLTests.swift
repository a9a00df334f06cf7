import Foundation
import Testing
@testable import SignCore

struct CanonicalURLVectors: Decodable {
    struct Case: Decodable, Sendable, CustomTestStringConvertible {
        let tcId: Int
        let comment: String
        let input: String?
        let inputHex: String?
        let result: String
        let expected: String?
        let error: String?
        var testDescription: String { "tcId \(tcId): \(comment)" }
    }

    struct Pair: Decodable, Sendable, CustomTestStringConvertible {
        let tcId: Int
        let comment: String
        let a: String
        let b: String
        let result: String
        var testDescription: String { "tcId \(tcId): \(comment)" }
    }

    let tests: [Case]
    let pairs: [Pair]

    static func load() throws -> CanonicalURLVectors { try VectorFile.load("canonical_url.json") }
}

@Suite struct CanonicalURLTests {
    func canonical(bytes: [UInt8]) throws(SignCoreError) -> String {
        var out = [UInt8]()
        try withBytes(of: bytes) { (raw) throws(SignCoreError) in try CanonicalURL.write(raw, into: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func vectorFileHasEnoughCases() throws {
        let vectors = try CanonicalURLVectors.load()
        #expect(vectors.tests.count >= 40)
        #expect(vectors.pairs.contains { $0.result == "same" } && vectors.pairs.contains { $0.result == "different" })
    }

    @Test(arguments: try CanonicalURLVectors.load().tests)
    func vector(_ tc: CanonicalURLVectors.Case) throws {
        let bytes = try #require(tc.inputHex.map { [UInt8](hex: $0) } ?? tc.input.map { Array($0.utf8) })
        if tc.result == "valid" {
            let once = try canonical(bytes: bytes)
            #expect(once == tc.expected)
            // The canonical form is its own canonical form.
            #expect(try canonical(bytes: Array(once.utf8)) == once)
        } else {
            let expected = try #require(SignCoreError.Code(name: tc.error ?? ""))
            let error = #expect(throws: SignCoreError.self) { _ = try canonical(bytes: bytes) }
            #expect(error?.code == expected)
        }
    }

    @Test(arguments: try CanonicalURLVectors.load().pairs)
    func pair(_ tc: CanonicalURLVectors.Pair) throws {
        let a = try CanonicalURL.canonicalize(tc.a)
        let b = try CanonicalURL.canonicalize(tc.b)
        #expect((a == b) == (tc.result == "same"), "\(a) vs \(b)")
    }

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
