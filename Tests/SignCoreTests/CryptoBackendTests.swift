#if canImport(CSignShim)
import CSignShim
#endif
import SignCoreVectors
import Testing
@_spi(Fuzzing) @testable import SignCore

/// RFC 4231 §4.2-4.8 but the truncated case 5: keys of 20 to 131 bytes (cases 6 and 7 longer than
/// a block, hashed first), as (key, data, tag) in hex. Also the shim's cases (ShimTests).
let rfc4231Cases = [
    ("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    ("4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    (String(repeating: "aa", count: 20), String(repeating: "dd", count: 50), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
    ("0102030405060708090a0b0c0d0e0f10111213141516171819", String(repeating: "cd", count: 50), "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
    (String(repeating: "aa", count: 131), "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    (String(repeating: "aa", count: 131),
     "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062792074686520484d414320616c676f726974686d2e",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
]

/// The crypto backend of this build (Crypto/CryptoBackend.swift) against published answers, and
/// SignCore's own Ed25519 point check against libsodium's. The whole suite runs with each backend
/// (`swift test` and `swift test --traits SwiftCryptoBackend`).
@Suite struct CryptoBackendTests {
    @Test func theBuildRunsOnTheBackendItWasBuiltFor() {
        #if SIGNCORE_SWIFT_CRYPTO
        #expect(SignCoreVersion.cryptoBackend.hasPrefix("swift-crypto"))
        #else
        #expect(SignCoreVersion.cryptoBackend.hasPrefix("libsodium"))
        #endif
    }

    /// RFC 4231 through the backend's prepared key, with the "prefix" absorbed at key set-up
    /// split anywhere in the message.
    @Test(arguments: rfc4231Cases)
    func hmacMatchesRFC4231(_ keyHex: String, _ dataHex: String, _ macHex: String) throws {
        let secret = try #require([UInt8](hex: keyHex)), data = try #require([UInt8](hex: dataHex))
        for split in [0, 1, data.count / 2, data.count] {  // the "prefix" absorbed at key set-up
            let key = secret.withUnsafeBytes { s in
                data.withUnsafeBytes { CryptoBackend.HMACKey(secret: s, signingInputPrefix: UnsafeRawBufferPointer(rebasing: $0[..<split])) }
            }
            defer { key.destroy() }
            var whole = [UInt8](repeating: 0, count: 32), continued = whole
            data.withUnsafeBytes { message in
                whole.withUnsafeMutableBytes { key.authenticate(message, into: $0) }
                continued.withUnsafeMutableBytes { key.authenticate(afterPrefix: UnsafeRawBufferPointer(rebasing: message[split...]), into: $0) }
            }
            #expect(whole.hex == macHex)
            #expect(continued.hex == macHex, "prefix of \(split) bytes")
            #expect(key.secret == secret)
        }
    }

    /// The verifier's tag check (`isTag`): the tag `authenticate(signingInputRest:)` makes is
    /// accepted, the same tag with any one of its 256 bits flipped is not (every word of the
    /// compare counts), and neither is a tag of another length.
    @Test func tagCheckAcceptsOnlyTheExactTag() {
        let secret = [UInt8](repeating: 5, count: 32), prefix = Array("SignCore/3 wtoken\n".utf8)
        let key = secret.withUnsafeBytes { s in prefix.withUnsafeBytes { CryptoBackend.HMACKey(secret: s, signingInputPrefix: $0) } }
        defer { key.destroy() }
        var rest = SigningInput.rest(target: SHA256Digest(), whash: SHA256Digest(), created: 1_790_000_000, lifetime: 60,
                                     nonce: Nonce(words: (1, 2)), account: UnsafeRawBufferPointer(start: nil, count: 0), headers: .none)
        var tag = [UInt8](repeating: 0, count: 32)
        tag.withUnsafeMutableBytes { key.authenticate(signingInputRest: &rest, into: $0) }
        #expect(tag.withUnsafeBytes { key.isTag($0, ofSigningInputRest: &rest) })
        for bit in 0..<256 {
            var changed = tag
            changed[bit / 8] ^= UInt8(1) << (bit % 8)
            #expect(!changed.withUnsafeBytes { key.isTag($0, ofSigningInputRest: &rest) }, "bit \(bit)")
        }
        #expect(!tag.dropLast().withUnsafeBytes { key.isTag($0, ofSigningInputRest: &rest) })
    }

    /// FIPS 180-4 examples ("abc", the 448-bit message, one million "a"), incrementally and in one call.
    @Test func sha256MatchesFIPS180() {
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        for (message, digest) in [
            (Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
            (million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        ] {
            var hasher = SHA256Hasher()
            for chunk in stride(from: 0, to: message.count, by: 4099) { hasher.update(message[chunk..<min(chunk + 4099, message.count)]) }
            #expect(hasher.finalize().bytes.hex == digest)
            let split = message.count / 3
            let oneCall = message.withUnsafeBytes {
                SHA256Hasher.hash(prefix: UnsafeRawBufferPointer(rebasing: $0[..<split]), UnsafeRawBufferPointer(rebasing: $0[split...]))
            }
            #expect(oneCall.bytes.hex == digest)
        }
    }

    /// RFC 8032 §7.1 test 2: the seed's public key and its (deterministic) signature; CryptoKit on
    /// Apple platforms randomises Ed25519 signatures, so there only the verification is checked.
    @Test func ed25519MatchesRFC8032() throws {
        let key = try SigningKey.ed25519(seed: try #require([UInt8](hex: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")))
        #expect(key.publicKey.hex == "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
        let expected = try #require([UInt8](hex: "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                                                  + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"))
        let signature = try sign([0x72], with: key)
        #if !canImport(CryptoKit)
        #expect(signature == expected)
        #endif
        for candidate in [signature, expected] { #expect(valid(key, candidate, [0x72])) }
        var forged = expected
        forged[0] ^= 1
        #expect(!valid(key, forged, [0x72]))
        #expect(!valid(key, expected, [0x73]))
    }

    /// P-256: scalars 0, n and above n and points off the curve are refused; a signature verifies,
    /// and so does its malleated twin (r, n − s), which SPEC §4.5 accepts; another message or key,
    /// a changed signature, r or s = 0 do not.
    @Test func p256SignsAndVerifies() throws {
        let n = try #require([UInt8](hex: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551"))
        for scalar in [[UInt8](repeating: 0, count: 32), n, [UInt8](repeating: 0xFF, count: 32)] {
            #expect(throws: SignCoreError.self) { try SigningKey.p256(privateKey: scalar) }
        }
        let key = try SigningKey.generate(.p256), other = try SigningKey.generate(.p256)
        #expect(key.publicKey.count == 65 && key.publicKey[0] == 4)
        #expect(try SigningKey.p256(privateKey: key.exportSecret() ?? []).publicKey == key.publicKey)
        var offCurve = key.publicKey
        offCurve[64] ^= 1
        #expect(throws: SignCoreError.self) { try SigningKey.p256(publicKey: offCurve) }
        let message = Array("SignCore/3 signing input".utf8)
        let signature = try sign(message, with: key)
        #expect(valid(key, signature, message))
        #expect(valid(try key.publicOnly(), signature, message))
        #expect(valid(key, Array(signature[..<32]) + subtract(n, Array(signature[32...])), message))
        #expect(!valid(other, signature, message))
        #expect(!valid(key, signature, message + [0]))
        var flipped = signature
        flipped[40] ^= 1
        #expect(!valid(key, flipped, message))
        #expect(!valid(key, Array(signature[..<32]) + [UInt8](repeating: 0, count: 32), message))
        #expect(!valid(key, [UInt8](repeating: 0, count: 32) + Array(signature[32...]), message))
    }

    func sign(_ message: [UInt8], with key: SigningKey) throws -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: key.algorithm.signatureByteCount)
        try message.withUnsafeBytes { m in try signature.withUnsafeMutableBytes { try key.sign(m, into: $0) } }
        return signature
    }

    func valid(_ key: SigningKey, _ signature: [UInt8], _ message: [UInt8]) -> Bool {
        message.withUnsafeBytes { m in signature.withUnsafeBytes { key.isValidSignature($0, for: m) } }
    }

    @Test func randomBytesDiffer() throws {
        var seen = Set<[UInt8]>()
        for _ in 0..<1000 { seen.insert(Nonce.random().bytes) }
        #expect(seen.count == 1000)
        let a = try SigningKey.generate(.hmacSHA256).exportSecret(), b = try SigningKey.generate(.hmacSHA256).exportSecret()
        #expect(a != b && a?.count == 32)
    }

    #if canImport(CSignShim)
    /// SignCore's Ed25519 point check gives (patched) libsodium's answer for random strings (about
    /// 1 in 16 is a valid point), for public keys and their negations, and for every small-order
    /// encoding; keys with a small-order component are jwk.json's vectors (orders 2 and 8).
    @Test func ed25519PointCheckAgreesWithLibsodium() throws {
        func both(_ bytes: [UInt8]) -> (swift: Bool, sodium: Bool) {
            bytes.withUnsafeBytes { (Ed25519PointCheck.isValid($0), sc_ed25519_is_valid_point($0.baseAddress) == 1) }
        }
        #expect(sc_init() == 0)
        var rng = SystemRandomNumberGenerator(), validCount = 0
        for _ in 0..<4000 {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let (swift, sodium) = both(bytes)
            #expect(swift == sodium, "\(bytes)")
            if sodium { validCount += 1 }
        }
        #expect(validCount > 100)
        for _ in 0..<200 {
            var publicKey = try SigningKey.generate(.ed25519).publicKey
            #expect(both(publicKey) == (true, true))
            publicKey[31] ^= 0x80
            let negated = both(publicKey)
            #expect(negated.swift == negated.sodium)
        }
        // libsodium's small-order list, with the sign bit set too, and y = p ... 2^255 - 1.
        for encoding in try smallOrder.map({ try #require([UInt8](hex: $0)) }) + (0...18).map({ [0xED + UInt8($0)] + [UInt8](repeating: 0xFF, count: 30) + [0x7F] }) {
            var signed = encoding
            signed[31] |= 0x80
            #expect(both(encoding) == (false, false))
            #expect(both(signed) == (false, false))
        }
    }

    #endif

    @Test func ed25519PointCheckTakesExactly32Bytes() throws {
        let valid = try #require([UInt8](hex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))  // RFC 8032 §7.1 test 1
        #expect(valid.withUnsafeBytes { Ed25519PointCheck.isValid($0) })
        for bytes in [[], Array(valid.dropLast()), valid + [0]] { #expect(!bytes.withUnsafeBytes { Ed25519PointCheck.isValid($0) }) }
    }
}

/// libsodium's list of small-order encodings (ed25519_ref10.c), in hex.
private let smallOrder = [
    "0000000000000000000000000000000000000000000000000000000000000000", "0100000000000000000000000000000000000000000000000000000000000000",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
]

/// a − b for 32-byte big-endian numbers with a ≥ b.
private func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
    var result = [UInt8](repeating: 0, count: 32), borrow = 0
    for i in (0..<32).reversed() {
        let difference = Int(a[i]) - Int(b[i]) - borrow
        result[i] = UInt8((difference + 256) % 256)
        borrow = difference < 0 ? 1 : 0
    }
    return result
}
