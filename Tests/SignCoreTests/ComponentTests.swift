import CSignBytes
import Foundation
import Testing
@_spi(Fuzzing) @testable import SignCore

@Suite struct KeyTests {
    /// Small sets are searched by comparing ids, large ones through the dictionary: both find
    /// exactly the keys present, byte for byte.
    @Test func keySetLookupSmallAndLarge() throws {
        for size in [1, 8, 9, 12] {
            let keys = try (0..<size).map { try SigningKey.hmac(secret: [UInt8](repeating: UInt8($0), count: 32), id: "kid-\($0)") }
                + [SigningKey.hmac(secret: [UInt8](repeating: 0xEE, count: 32), id: String(repeating: "long-id-", count: 8))]
            var set = try KeySet(keys)
            for key in keys {
                #expect(set.unretainedKey(id: key.idBytes)?.takeUnretainedValue() === key)
                #expect(set.key(id: key.id) === key)
            }
            #expect(Array("kid-".utf8).withUnsafeBytes { set.unretainedKey(id: $0) } == nil)
            #expect(Array("kid-0x".utf8).withUnsafeBytes { set.unretainedKey(id: $0) } == nil)
            #expect(set.remove(id: "kid-0") === keys[0])
            #expect(Array("kid-0".utf8).withUnsafeBytes { set.unretainedKey(id: $0) } == nil)
            #expect(set.count == size)
        }
    }

    /// A large set's index place holds an id's length and first 31 bytes and compares the rest
    /// in the key: an id differing from the key's in any byte, or in length, is not the key's.
    @Test func indexPlaceComparesEveryByteOfTheID() throws {
        for length in [1, 30, 31, 32, 43, 64] {
            let id = String(decoding: (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }, as: UTF8.self)
            let key = try SigningKey.hmac(secret: [UInt8](repeating: 1, count: 32), id: id)
            let place = KeySet.IndexPlace(hash: 7, key: key)
            var variants: [[UInt8]] = [Array(id.utf8).dropLast(), Array(id.utf8) + [UInt8(ascii: "a")]]
            for position in Set([0, min(30, length - 1), min(31, length - 1), length - 1]) {
                var changed = Array(id.utf8)
                changed[position] = changed[position] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
                variants.append(changed)
            }
            #expect(Array(id.utf8).withUnsafeBytes { place.holds($0, hash: 7) })
            #expect(!Array(id.utf8).withUnsafeBytes { place.holds($0, hash: 8) })
            for variant in variants { #expect(!variant.withUnsafeBytes { place.holds($0, hash: 7) }, "length \(length)") }
        }
    }

    @Test(arguments: SignatureAlgorithm.allCases)
    func jwkRoundTrip(_ algorithm: SignatureAlgorithm) throws {
        let key = try SigningKey.generate(algorithm)
        let text = try JWK.serialize(key, includePrivate: true)
        let again = try JWK.parseKey(text)
        #expect(again.id == key.id)
        #expect(again.algorithm == algorithm)
        #expect(again.publicKey == key.publicKey)
        #expect(again.exportSecret() == key.exportSecret())
        // The default key id is the RFC 7638 thumbprint: 43 base64url characters.
        #expect(key.id.utf8.count == 43)
        if algorithm != .hmacSHA256 {
            let publicText = try JWK.serialize(key, includePrivate: false)
            #expect(!publicText.contains("\"d\""))
            let publicKey = try JWK.parseKey(publicText)
            #expect(publicKey.id == key.id && !publicKey.canSign)
        } else {
            #expect(throws: SignCoreError.self) { _ = try JWK.serialize(key, includePrivate: false) }
        }
    }

    @Test func keySetDocument() throws {
        let keys = try SignatureAlgorithm.allCases.map { try SigningKey.generate($0) }
        let set = try KeySet(jwks: try JWK.serialize(keys, includePrivate: true), allowPrivateKeys: true)
        #expect(set.count == 3)
        #expect(Set(set.ids) == Set(keys.map(\.id)))
        let duplicate = try JWK.serialize([keys[0], keys[0]], includePrivate: true)
        #expect(throws: SignCoreError.self) { _ = try KeySet(jwks: duplicate) }
        // A verifier's set refuses private EdDSA and ES256 keys unless asked (a verifier holds no secret it does not need).
        let refused = #expect(throws: SignCoreError.self) { _ = try KeySet(jwks: try JWK.serialize(keys, includePrivate: true)) }
        #expect(refused?.code == .invalidKey)
        let publicOnly = try JWK.serialize([keys[0]] + keys.dropFirst().map { try $0.publicOnly() }, includePrivate: true)
        #expect(try KeySet(jwks: publicOnly).count == 3)
    }

    @Test func customKeyIDs() throws {
        #expect(try SigningKey.generate(.hmacSHA256, id: "app-2026_v1").id == "app-2026_v1")
        for bad in ["", "has space", "dot.ted", String(repeating: "k", count: 65), "é"] {
            #expect(throws: SignCoreError.self) { _ = try SigningKey.generate(.hmacSHA256, id: bad) }
        }
    }

    @Test func hmacSecretLength() {
        #expect(throws: SignCoreError.self) { _ = try SigningKey.hmac(secret: [UInt8](repeating: 1, count: 31)) }
        #expect(throws: SignCoreError.self) { _ = try SigningKey.hmac(secret: [UInt8](repeating: 1, count: 1025)) }
    }

    @Test func malformedKeyDocumentsAreErrors() {
        for text in ["", "{", "[]", "null", #"{"kty":1}"#, #"{"kty":"oct","k":"@@"}"#, String(repeating: "[", count: 100),
                     #"{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}"#, #"{"keys":{}}"#, #"{"keys":[{"kty":"OKP"}]}"#] {
            let error = #expect(throws: SignCoreError.self) { _ = try JWK.parseKeys(text) }
            #expect(error?.code == .invalidKey, "\(text)")
        }
    }
}

@Suite struct EncodingTests {
    /// Methods are exact, case-sensitive tokens: each one parses, near misses do not.
    @Test func methodTokensAreExact() throws {
        for method in RequestMethod.allCases { #expect(try RequestMethod(token: method.rawValue) == method) }
        for token in ["", "get", "Get", "GETS", "GE", "PUSH", "PUTS", "HEAP", "POTS", "PATCHY", "PATHC", "DELETED", "OPTION",
                      "OPTIONZ", "CONNECT", "TRACE", "G\u{0}T", "PÖST"] {
            let error = #expect(throws: SignCoreError.self) { try RequestMethod(token: token) }
            #expect(error?.code == .unsupportedMethod, "\(token)")
        }
    }

    /// Each method's spelled-out digest head is its class's prefix, the method and a space, and
    /// a URL-class target digest is that request's whash (SPEC §4.2).
    @Test func digestHeadsAreTheirParts() {
        for method in RequestMethod.allCases {
            let prefix = method.contentClass == .url ? WHash.urlPrefix : SigningInput.targetPrefix
            #expect(Array(SigningInput.digestHead(method).bytes) == Array(prefix.bytes) + Array(method.rawValue.utf8) + [0x20])
            let url = Array("https://a.example/p?q=1".utf8)
            let target = url.withUnsafeBytes { SigningInput.targetDigest(method: method, canonicalURL: $0) }
            let parts = url.withUnsafeBytes { SigningInput.digest(prefix: prefix, method: method, canonicalURL: $0) }
            #expect(target == parts)
            if method.contentClass == .url {
                #expect(target == url.withUnsafeBytes { WHash.ofCanonicalURL($0, method: method) })
            }
        }
    }

    @Test func base64URLRoundTripAndStrictness() {
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255) }
            let text = Base64URL.encode(bytes)
            #expect(text.utf8.count == Base64URL.encodedLength(length))
            // An independent encoder: Foundation's base64, made URL-safe and unpadded.
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(text == foundation)
            #expect(Base64URL.decode(text) == bytes)
        }
        for bad in ["A", "AB=", "AB+/", "AB==", "AAB", "A A"] {
            #expect(Base64URL.decode(bad) == nil, "\(bad)")
        }
        #expect(Base64URL.decode("AQ") == [1])
        #expect(Base64URL.decode("AR") == nil)  // unused bits set: a second spelling of [1]
    }

    /// The table (public text) and the constant-time arithmetic (key material) agree on every
    /// byte, and both decoders give the same answers.
    @Test func publicAndConstantTimeDecodersAgree() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for byte in 0...255 {
            let expected = alphabet.firstIndex(of: UInt8(byte)).map(UInt32.init)
            let table = Base64URL.publicValue(of: UInt8(byte)), arithmetic = Base64URL.constantTimeValue(of: UInt8(byte))
            #expect(expected.map { table == $0 && arithmetic == $0 } ?? (table > 63 && arithmetic > 63), "\(byte)")
        }
        for text in ["", "AQ", "AR", "AQI", "AQJ", "AQID", "AQI@", "AQ=D", "AQ\u{e9}D", "_-_-_-", "A"] {
            let bytes = Array(text.utf8)
            let viaTable: [UInt8]? = bytes.withUnsafeBytes { raw in
                withUnsafeTemporaryAllocation(byteCount: 8, alignment: 1) { scratch in
                    var out = ByteWriter(scratch)
                    return Base64URL.decode(raw, into: &out) ? Array(out.written) : nil
                }
            }
            #expect(viaTable == Base64URL.decode(text), "\(text)")
        }
    }

    /// The shim's block decoder (16 characters at a time with SSSE3, the tail as one
    /// padded block) against Foundation's base64 and the constant-time decoder: every length up
    /// to 200 bytes, and every non-alphabet byte put at every position of a 64-character text
    /// (inside a block and in the tail), each refused by both decoders.
    @Test func blockCoderAgreesEverywhere() {
        func viaShim(_ text: [UInt8]) -> [UInt8]? {
            text.withUnsafeBytes { raw in
                withUnsafeTemporaryAllocation(byteCount: raw.count, alignment: 1) { scratch in
                    var out = ByteWriter(scratch)
                    return Base64URL.decode(raw, into: &out) ? Array(out.written) : nil
                }
            }
        }
        for length in 0...200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255) }
            let text = Base64URL.encode(bytes)
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(text == foundation, "\(length)")
            #expect(viaShim(Array(text.utf8)) == bytes, "\(length)")
        }
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let valid = Array(Base64URL.encode((0..<48).map { UInt8($0 * 5) }).utf8)
        for byte in (0...255).map(UInt8.init) where !alphabet.contains(byte) {
            for position in valid.indices {
                var text = valid
                text[position] = byte
                #expect(viaShim(text) == nil, "\(byte) at \(position)")
                #expect(text.withUnsafeBytes { Base64URL.decode($0) } == nil)
            }
        }
        // Unused trailing bits set after whole blocks: a second spelling, refused.
        #expect(viaShim(Array((String(repeating: "A", count: 32) + "AR").utf8)) == nil)
        #expect(viaShim(Array((String(repeating: "A", count: 32) + "AQ").utf8)) == Array(repeating: 0, count: 24) + [1])
    }

    /// A whash header's 43 characters through the digest decoder (a constant-length block
    /// decoder) against the general one: random digests round-trip; every non-alphabet byte at
    /// every position, every last character with unused bits set, and 42 or 44 characters are
    /// refused, the way the general decoder refuses them. The verifier's check by encoding
    /// (`isEncoded`, `sc_base64url_is_digest`) gives the same answer on every one of them.
    @Test func digestDecoderAgreesWithTheGeneralOne() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        func viaDigest(_ text: [UInt8]) -> [UInt8]? {
            var out = [UInt8](repeating: 0, count: 32)
            let ok = text.withUnsafeBytes { raw in out.withUnsafeMutableBytes { sc_base64url_decode_digest(raw.baseAddress, raw.count, $0.baseAddress) } }
            let decoded = ok == 1 ? out : nil
            // Checked against a fixed digest and against the one decoded: equal only to the latter.
            let zero = SHA256Digest(bytes: [UInt8](repeating: 0, count: 32))!
            let spelled = String(decoding: text, as: UTF8.self)
            #expect(zero.isEncoded(as: spelled) == (decoded == [UInt8](repeating: 0, count: 32)))
            if let decoded { #expect(SHA256Digest(bytes: decoded)!.isEncoded(as: spelled)) }
            return decoded
        }
        for _ in 0..<200 {
            let digest = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let text = Array(Base64URL.encode(digest).utf8)
            #expect(viaDigest(text) == digest)
            #expect(viaDigest(Array(text.dropLast())) == nil && viaDigest(text + [UInt8(ascii: "A")]) == nil)
            for last in alphabet {
                var changed = text
                changed[42] = last
                #expect(viaDigest(changed) == changed.withUnsafeBytes { Base64URL.decode($0) }, "last \(last)")
            }
        }
        let valid = Array(Base64URL.encode([UInt8](repeating: 0xA5, count: 32)).utf8)
        let digest = SHA256Digest(bytes: [UInt8](repeating: 0xA5, count: 32))!
        for byte in (0...255).map(UInt8.init) where !alphabet.contains(byte) {
            for position in valid.indices {
                var text = valid
                text[position] = byte
                #expect(viaDigest(text) == nil, "\(byte) at \(position)")
                #expect(!digest.isEncoded(as: String(decoding: text, as: UTF8.self)), "\(byte) at \(position)")
            }
        }
        // Every other alphabet character at every position: another digest, or no canonical one.
        #expect(digest.isEncoded(as: String(decoding: valid, as: UTF8.self)))
        for position in valid.indices {
            for character in alphabet where character != valid[position] {
                var text = valid
                text[position] = character
                #expect(!digest.isEncoded(as: String(decoding: text, as: UTF8.self)), "\(character) at \(position)")
            }
        }
    }

    /// Key material is encoded by arithmetic, public bytes through the shim's table and SSSE3
    /// blocks: both give Foundation's answer at every length, and the arithmetic character is
    /// the inverse of the arithmetic value for all 64.
    @Test func secretAndPublicEncodersAgree() {
        for value in UInt32(0)..<64 {
            #expect(Base64URL.constantTimeValue(of: Base64URL.constantTimeCharacter(value)) == value)
        }
        for length in 0...130 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255) }
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encodeSecret(bytes) == foundation, "\(length)")
            #expect(Base64URL.encode(bytes) == foundation, "\(length)")
        }
    }

    /// The shim's token encoder writes exactly the length the signer allocated, for every
    /// field size, and spells a negative time set by hand with its sign; fields set by hand to
    /// sizes no signer makes (an empty key id, a hint of 0-10 bytes) are encoded as they are.
    @Test func tokenEncoderFillsItsLength() throws {
        for (created, lifetime) in [(Int64(0), Int64(1)), (9, 10), (99_999_999_999, 86_400), (-5, 60), (Int64.min, Int64.max)] {
            for account in ["", "a", "ab", "abc", String(repeating: "é", count: 128)] {
                let token = WToken(keyID: "k", created: created, lifetime: lifetime, nonce: Nonce(words: (1, 2)),
                                   targetHint: [1, 2, 3, 4, 5, 6], account: account, coveredHeaders: ["a", "b"],
                                   signature: Array(repeating: 7, count: 32))
                let fields = token.encoded.split(separator: ".", omittingEmptySubsequences: false)
                #expect(fields.count == 9)
                #expect(fields[2] == "\(created)" && fields[3] == "\(lifetime)")
                #expect(Base64URL.decode(String(fields[6])) == Array(account.utf8))
                if (0...WToken.maxCreated).contains(created), (1...WToken.maxLifetime).contains(lifetime) {
                    #expect(try WToken(parsing: token.encoded) == token)
                }
            }
        }
        for hint in [[], [1], [1, 2, 3], Array(repeating: UInt8(9), count: 10)] as [[UInt8]] {
            let token = WToken(keyID: "", created: 1, lifetime: 1, nonce: Nonce(words: (1, 2)), targetHint: hint, account: "",
                               coveredHeaders: [], signature: [])
            let fields = token.encoded.split(separator: ".", omittingEmptySubsequences: false)
            #expect(fields.count == 9 && fields[1].isEmpty && fields[8].isEmpty)
            #expect(Base64URL.decode(String(fields[5])) == hint)
        }
    }

    /// The encoder's decimals (9 to 11 digits by a multiply method, others two digits at a
    /// time) spell every creation time as Swift does: each power of ten and its neighbours, a
    /// spread of real times, and their negatives (set by hand).
    @Test func tokenEncoderSpellsEveryCreationTime() {
        var times: [Int64] = [0, 1, 9, 10, 99, 100, WToken.maxCreated, WToken.maxCreated + 1, Int64.max, Int64.min]
        var power: Int64 = 1
        for _ in 0..<12 {
            times += [power - 1, power, power + 1]
            power *= 10
        }
        var random = SystemRandomNumberGenerator()
        times += (0..<2_000).map { _ in Int64.random(in: 100_000_000...WToken.maxCreated, using: &random) }
        for created in times + times.filter({ $0 != Int64.min }).map({ -$0 }) {
            let token = WToken(keyID: "k", created: created, lifetime: 60, nonce: Nonce(words: (1, 2)),
                               targetHint: [1, 2, 3, 4, 5, 6], account: "", coveredHeaders: [], signature: Array(repeating: 7, count: 32))
            let fields = token.encoded.split(separator: ".", omittingEmptySubsequences: false)
            #expect(fields.count == 9 && fields[2] == "\(created)", "\(created)")
        }
    }

    /// A large key set is searched through its own index: every key found by its id bytes,
    /// ids one byte off or absent found nowhere, and the index follows removals.
    @Test func largeKeySetsFindEveryKey() throws {
        var keys = try KeySet((0..<1000).map { try SigningKey.hmac(secret: [UInt8](repeating: UInt8($0 % 251), count: 32), id: "k\($0)") })
        func find(_ id: String) -> String? {
            var id = id
            return id.withUTF8 { keys.unretainedKey(id: UnsafeRawBufferPointer($0))?.takeUnretainedValue().id }
        }
        for i in 0..<1000 { #expect(find("k\(i)") == "k\(i)") }
        for id in ["k1000", "k", "K1", "k01", "x\(String(repeating: "y", count: 63))"] { #expect(find(id) == nil, "\(id)") }
        keys.remove(id: "k500")
        #expect(find("k500") == nil)
        #expect(find("k501") == "k501" && find("k499") == "k499")
        // Keys added after a removal (into the index, and past its next growth) are found too.
        for i in 1000..<3000 { try keys.add(try SigningKey.hmac(secret: [UInt8](repeating: 1, count: 32), id: "k\(i)")) }
        for i in [0, 499, 501, 999, 1000, 2047, 2999] { #expect(find("k\(i)") == "k\(i)") }
        #expect(find("k500") == nil && find("k3000") == nil)
    }

    /// The index's id hash reads every byte of an id at every length (1–64): changing any one
    /// byte changes the hash, so ids that differ in one place hash differently. (The
    /// lookup compares the bytes too: a hash that skipped a byte would cost speed, not answers.)
    @Test func keyIDHashReadsEveryByte() {
        for length in 1...SigningKey.maxKeyIDLength {
            let id = [UInt8]((0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) })
            let hash = id.withUnsafeBytes { KeySet.idHash($0) }
            for position in 0..<length {
                var changed = id
                changed[position] = UInt8(ascii: "Z")
                #expect(changed.withUnsafeBytes { KeySet.idHash($0) } != hash, "length \(length), byte \(position)")
            }
            #expect((id + [UInt8(ascii: "a")]).withUnsafeBytes { KeySet.idHash($0) } != hash, "length \(length) + 1")
        }
    }

    /// The two-digits-at-a-time decimal writer agrees with Swift's own at every digit count,
    /// around each power of ten, and at both ends of Int64.
    @Test func decimalsMatchSwiftsDescription() {
        var values: [Int64] = [0, 1, 9, Int64.max, Int64.min, Int64.min + 1, WToken.maxCreated]
        var power: Int64 = 10
        while true {
            values += [power - 1, power, power + 1, -power, -(power - 1), power + 42]
            guard power <= Int64.max / 10 else { break }
            power *= 10
        }
        for value in values {
            let text = withUnsafeTemporaryAllocation(byteCount: 24, alignment: 8) { scratch in
                var out = ByteWriter(scratch)
                out.appendDecimal(value)
                return String(decoding: out.written, as: UTF8.self)
            }
            #expect(text == String(value))
        }
    }

    @Test func tokenParserNeverCrashes() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("v2.0123456789AZaz-_=+/ \u{0}é".utf8) + [0xFF]
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0..<120, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            _ = try? WToken(parsing: String(decoding: bytes, as: UTF8.self))
        }
        let huge = String(repeating: "v2.", count: 100_000)
        let error = #expect(throws: SignCoreError.self) { _ = try WToken(parsing: huge) }
        #expect(error?.code == .headerTooLarge)
    }

    @Test func signerRefusesBadSettingsAndInput() throws {
        let key = try SigningKey.generate(.hmacSHA256)
        // Configuration errors are invalidConfiguration (`--lifetime 0` is a configuration error, not lifetimeTooLong).
        for lifetime: Int64 in [0, -1, 86_401] {
            let error = #expect(throws: SignCoreError.self) { _ = try Signer(key: key, lifetime: lifetime) }
            #expect(error?.code == .invalidConfiguration)
        }
        let account = #expect(throws: SignCoreError.self) { _ = try Signer(key: key, account: String(repeating: "a", count: 257)) }
        #expect(account?.code == .invalidInput)
        _ = try Signer(key: key, account: String(repeating: "a", count: 256))
        let rebound = #expect(throws: SignCoreError.self) { _ = try Signer(key: key).withAccount(String(repeating: "a", count: 257)) }
        #expect(rebound?.code == .invalidInput)
        #expect(try Signer(key: key, lifetime: 120).withAccount("user-7").account == "user-7")
        #expect(try Signer(key: key, lifetime: 120).withAccount("user-7").lifetime == 120)
        let signer = try Signer(key: key)
        for created: Int64 in [-1, 100_000_000_000] {
            let error = #expect(throws: SignCoreError.self) { _ = try signer.sign(method: .get, url: "https://h.example/", created: created, nonce: .random()) }
            #expect(error?.code == .invalidInput)
        }
        let url = #expect(throws: SignCoreError.self) { _ = try signer.sign(method: .post, url: "ftp://h.example/") }
        #expect(url?.code == .invalidURL)
    }

    @Test func tokenEncodingRoundTrips() throws {
        let token = WToken(keyID: "k1", created: 1_790_000_000, lifetime: 60, nonce: .random(),
                           targetHint: [1, 2, 3, 4, 5, 6], account: "用户", coveredHeaders: ["content-type", "x-tenant"],
                           signature: [UInt8](repeating: 7, count: 64))
        #expect(try WToken(parsing: token.encoded) == token)
    }

    /// Fields the wire format cannot hold are encoded without trapping and then refused by the
    /// parser; the signing-input builder refuses them with invalidInput.
    @Test func outOfRangeFieldsAreRefusedNotTrapped() throws {
        var token = WToken(keyID: String(repeating: "k", count: 300), created: -5, lifetime: Int64.min, nonce: .random(),
                           targetHint: [], account: String(repeating: "a", count: 400), coveredHeaders: [], signature: [])
        #expect(token.encoded.hasPrefix("v3.\(token.keyID).-5.-9223372036854775808."))
        #expect(throws: SignCoreError.self) { _ = try WToken(parsing: token.encoded) }
        token.created = Int64.max
        #expect(token.encoded.contains(".9223372036854775807."))

        let zero = SHA256Hasher.hash([UInt8]())
        let fine = try SigningInput.bytes(algorithm: .ed25519, keyID: "k", target: zero, whash: zero, created: 0,
                                          lifetime: 1, nonce: .random(), account: String(repeating: "a", count: 256))
        #expect(fine.count == 18 + 1 + 5 + 1 + 1 + 32 + 32 + 8 + 4 + 16 + 2 + 256 + 1)
        for (keyID, account, created, lifetime) in [("", "", Int64(0), Int64(1)), (String(repeating: "k", count: 65), "", 0, 1),
                                                    ("k", String(repeating: "a", count: 257), 0, 1), ("k", "", -1, 1),
                                                    ("k", "", 100_000_000_000, 1), ("k", "", 0, 0), ("k", "", 0, 86_401)] {
            let error = #expect(throws: SignCoreError.self) {
                _ = try SigningInput.bytes(algorithm: .hmacSHA256, keyID: keyID, target: zero, whash: zero, created: created,
                                           lifetime: lifetime, nonce: .random(), account: account)
            }
            #expect(error?.code == .invalidInput)
        }
    }

    @Test func bodyHasherLimit() throws {
        var hasher = WHash.BodyHasher(limit: 10)
        try hasher.append([UInt8](repeating: 1, count: 6))
        let error = #expect(throws: SignCoreError.self) { try hasher.append([UInt8](repeating: 1, count: 5)) }
        #expect(error?.code == .bodyTooLarge)
        try hasher.append([UInt8](repeating: 1, count: 4))
        #expect(hasher.finalize() == WHash.ofBody([UInt8](repeating: 1, count: 10)))
    }

    @Test func digestComparesByValue() {
        let a = SHA256Hasher.hash(Array("a".utf8)), b = SHA256Hasher.hash(Array("b".utf8))
        #expect(a == SHA256Hasher.hash(Array("a".utf8)))
        #expect(a != b)
        #expect(a.description == "ypeBEsobvcr6wjGzmiPcTaeG7_gUfE5yuYB3ha_uSLs")
    }
}

@Suite struct ErrorCodeTests {
    @Test func codesAreStableAndDescribed() {
        let codes = SignCoreError.Code.allCases
        #expect(Set(codes.map(\.rawValue)).count == codes.count)
        #expect(Set(codes.map(\.name)).count == codes.count)
        for code in codes { #expect(SignCoreError.Code(name: code.name) == code) }
        #expect(SignCoreError.Code.badSignature.rawValue == 12)
        #expect(SignCoreError(.expired, "x").isRetryable)
        #expect(SignCoreError.Code.expired.advice == .resyncClock)
        #expect(!SignCoreError(.invalidURL, "x").isRetryable)
        #expect(SignCoreError.Code.overloaded.advice == .retryLater)
    }

    @Test func errorTextCarriesNoSecretsOrInput() async throws {
        let secretURL = "https://api.example.com/secret-path?token=hunter2"
        let pair = try Pair(.hmacSHA256)
        let headers = try pair.signer.sign(method: .post, url: secretURL, body: Array("password=hunter2".utf8))
        let request = received("POST", secretURL, Array("password=hunter3".utf8), headers)
        do {
            _ = try pair.verifier.check(request)
            Issue.record("tampered body accepted")
        } catch {
            #expect(!error.description.contains("hunter"))
            #expect(!error.description.contains(headers.wtoken))
        }
    }
}
