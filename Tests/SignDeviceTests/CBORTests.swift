import SignDevice
import Testing

/// The CBOR reader's rules (docs/ATTEST.md §9.7): what it reads, and each refusal.
@Suite struct CBORTests {
    func read(_ hex: String) -> Result<CBOR, CBOR.Failure> {
        let bytes = stride(from: 0, to: hex.count, by: 2).map { offset in
            UInt8(hex[hex.index(hex.startIndex, offsetBy: offset)..<hex.index(hex.startIndex, offsetBy: offset + 2)], radix: 16)!
        }
        return Result { () throws(CBOR.Failure) in try CBOR(decoding: bytes) }
    }

    /// A map of 2,047 distinct keys (the most the item limit allows) reads, each key checked once.
    @Test func aLargeMapReadsInOnePass() throws {
        var hex = "b907ff"
        for index in 0..<2047 { hex += String(format: "19%04x", 1000 + index) + "f6" }
        guard case .map(let entries) = try read(hex).get() else { Issue.record("not a map"); return }
        #expect(entries.count == 2047)
    }

    @Test func readsWhatAttestationsUse() throws {
        #expect(try read("a263666d746f6170706c652d61707061747465737468617574684461746143010203").get()
            == .map([.init(key: .text("fmt"), value: .text("apple-appattest")), .init(key: .text("authData"), value: .bytes([1, 2, 3]))]))
        #expect(try read("a5010203262001215820" + String(repeating: "11", count: 32) + "225820" + String(repeating: "22", count: 32)).get()[integer: -2]
            == .bytes(Array(repeating: 0x11, count: 32)))
        #expect(try read("1903e8").get() == .unsigned(1000))
        #expect(try read("3903e7").get() == .negative(999))
        #expect(try read("83f4f5f6").get() == .array([.bool(false), .bool(true), .null]))
        #expect(try read("1bffffffffffffffff").get() == .unsigned(.max))
    }

    @Test func refusesWhatIsNotStrict() {
        let cases: [(String, CBOR.Failure)] = [
            ("", .truncated), ("18", .truncated), ("1817", .notShortest), ("190017", .notShortest), ("1a0000ffff", .notShortest),
            ("1b00000000ffffffff", .notShortest), ("5f4101ff", .indefiniteLength), ("9f01ff", .indefiniteLength), ("c24101", .tag),
            ("f97e00", .unsupportedSimple), ("f7", .unsupportedSimple), ("fb3ff0000000000000", .unsupportedSimple),
            ("0101", .trailingBytes), ("62c328", .invalidText), ("a1410102", .invalidKey), ("a2616101616102", .duplicateKey),
            ("5a7fffffff", .truncated), ("9b7fffffffffffffff", .truncated), ("bb7fffffffffffffff", .truncated), ("1c", .truncated),
            (String(repeating: "81", count: 16) + "01", .tooDeep),
        ]
        for (hex, failure) in cases {
            #expect(read(hex).mapError { $0 } == .failure(failure), "\(hex)")
        }
        #expect(read("99" + "1001" + String(repeating: "00", count: 4097)).mapError { $0 } == .failure(.tooManyItems))
        // Keys are compared as bytes: "é" precomposed and decomposed are two keys, one key twice is refused.
        guard case .success(.map(let entries)) = read("a262c3a9016365cc8102") else { Issue.record("two keys alike in Unicode refused"); return }
        #expect(entries.count == 2)
        #expect(read("a262c3a90162c3a902").mapError { $0 } == .failure(.duplicateKey))
        #expect((try? CBOR(decoding: [UInt8](repeating: 0, count: 65537))) == nil)
    }
}

extension Result where Success == CBOR, Failure == CBOR.Failure {
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.success(let a), .success(let b)): a == b
        case (.failure(let a), .failure(let b)): a == b
        default: false
        }
    }
}
