import SignCore
import Testing

/// SHA-512, HMAC-SHA256 and HMAC-SHA512 through SignCore's public API (no `@testable`), on
/// whichever backend this build has: FIPS 180-4 and RFC 4231 known answers, and the incremental
/// hasher fed in uneven pieces.
@Suite struct PublicDigestTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func sha512KnownAnswers() {
        #expect(Self.hex(SHA512Hasher.hash(Array("abc".utf8))) == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(Self.hex(SHA512Hasher.hash([])) == "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
            + "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e")
        // 100,000 bytes of i mod 251 (Python's hashlib), fed in pieces of growing sizes.
        let long = (0..<100_000).map { UInt8($0 % 251) }
        var hasher = SHA512Hasher()
        var offset = 0, piece = 1
        while offset < long.count {
            let end = min(long.count, offset + piece)
            hasher.update(long[offset..<end])
            offset = end
            piece = piece * 3 + 1
        }
        let forked = hasher  // a copy continues on its own
        let expected = "9a63314a71907982aa89ca2dfd6e22b5c5a436df3a7b55f93785d7f7971324a3fd500ae72e066a5367b1f2d407a820503c6e2f13df5885f83a49aedb0706db84"
        #expect(Self.hex(hasher.finalize()) == expected && Self.hex(forked.finalize()) == expected)
    }

    @Test func hmacKnownAnswers() {
        // RFC 4231 test cases 1 (a 20-byte key) and 6 (a 131-byte key, hashed first).
        let cases: [([UInt8], String, String, String)] = [
            ([UInt8](repeating: 0x0b, count: 20), "Hi There",
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
             "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"),
            ([UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
             "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"),
        ]
        for (key, text, sha256, sha512) in cases {
            let message = Array(text.utf8)
            let code256 = HMACSHA256.authenticationCode(for: message, key: key)
            let code512 = HMACSHA512.authenticationCode(for: message, key: key)
            #expect(Self.hex(code256) == sha256 && Self.hex(code512) == sha512)
            #expect(HMACSHA256.isValidAuthenticationCode(code256, for: message, key: key))
            #expect(HMACSHA512.isValidAuthenticationCode(code512, for: message, key: key))
            #expect(!HMACSHA256.isValidAuthenticationCode(Array(code256.dropLast()), for: message, key: key))
            #expect(!HMACSHA512.isValidAuthenticationCode(code512, for: message + [0], key: key))
            #expect(!HMACSHA256.isValidAuthenticationCode(code256, for: message, key: key + [1]))
        }
    }
}
