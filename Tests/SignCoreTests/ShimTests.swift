#if canImport(CSignShim)  // the C shim of the libsodium/OpenSSL backend (Linux)
import CSignBytes
import CSignShim
import SignCoreVectors
import Testing
@testable import SignCore

/// The C shim against the primitives' own published vectors.
@Suite struct ShimTests {
    func sha256(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBytes { b in out.withUnsafeMutableBytes { sc_sha256(b.baseAddress, b.count, $0.baseAddress) } }
        return out.hex
    }

    @Test func sha256KnownAnswers() {
        // FIPS 180-4 examples.
        #expect(sha256([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(sha256(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(sha256(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // One million 'a', fed incrementally in odd chunks.
        var state = sc_sha256_state()
        sc_sha256_init(&state)
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 999)
        var fed = 0
        while fed < 1_000_000 {
            let n = min(chunk.count, 1_000_000 - fed)
            chunk.withUnsafeBytes { sc_sha256_update(&state, $0.baseAddress, n) }
            fed += n
        }
        var out = [UInt8](repeating: 0, count: 32)
        out.withUnsafeMutableBytes { sc_sha256_final(&state, $0.baseAddress) }
        #expect(out.hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// The one-pass digest of a common URL (`sc_sha256_common_url`, the canonical form
    /// hashed where it is written, padded in place) equals SHA-256(prefix || canonical form) on
    /// both SHA-256 paths, for every method's prefix and canonical lengths across the padding
    /// boundaries and past the short path's 512 bytes; it declines exactly the URLs that
    /// `sc_url_common` leaves to the general path.
    @Test func commonURLDigestHashesTheCanonicalForm() {
        let chosen = sc_sha256_short_path()
        defer { sc_sha256_set_short_path(chosen) }
        var urls = ["https://h", "http://h?a=1", "https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9",
                    "https://h/a+b?q=a+b", "https://h/%c3%a9?b=%2f&a=%41", "https://h/./x", "https://h:8443/", "ftp://h/", "https://"]
        for length in 1...600 { urls.append("https://h/" + String(repeating: "a", count: length)) }
        for pairs in 1...17 { urls.append("https://h/?" + (0..<pairs).map { "k\(pairs - $0)=v" }.joined(separator: "&")) }
        func digests() -> [String] {
            var results: [String] = []
            for url in urls {
                for method in RequestMethod.allCases {
                    let head = SigningInput.digestHead(method).bytes
                    Array(url.utf8).withUnsafeBytes { raw in
                        var digest = [UInt8](repeating: 0, count: 32)
                        // The scratch the header asks for, then 64 canary bytes that must stay as they are.
                        let size = sc_common_url_scratch(raw.count)
                        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: size + 64, alignment: 16)
                        defer { scratch.deallocate() }
                        scratch.initializeMemory(as: UInt8.self, repeating: 0xA5)
                        let status = sc_sha256_common_url(head.baseAddress, head.count, raw.baseAddress, raw.count, scratch.baseAddress, &digest)
                        #expect(scratch[size...].allSatisfy { $0 == 0xA5 }, "\(url)")
                        let canonical = CanonicalURLTests.viaCommonPath(url)
                        #expect((status == 0) == (canonical != nil), "\(url)")
                        if let canonical {
                            var expected = [UInt8](repeating: 0, count: 32)
                            Array(canonical.utf8).withUnsafeBytes { sc_sha256_prefixed(head.baseAddress, head.count, $0.baseAddress, $0.count, &expected) }
                            #expect(digest == expected, "\(url)")
                        }
                        results.append(status == 0 ? Base64URL.encode(digest) : "declined")
                    }
                }
            }
            return results
        }
        sc_sha256_set_short_path(1)
        let short = digests()
        sc_sha256_set_short_path(0)
        #expect(digests() == short)
        // Declined: %41 (an escaped unreserved byte), a dot segment, a port, another scheme, no
        // host, 17 pairs: six URLs, under every method.
        #expect(short.filter { $0 == "declined" }.count == 6 * RequestMethod.allCases.count)
    }

    /// The short-message path (own padding, then the block function) and the
    /// library's SHA256_Update/SHA256_Final give the same digests and HMAC tags, for every
    /// message length around the padding boundaries and past the 512-byte switch, after
    /// prefixes of every length up to two blocks. (Switching while other tests hash is
    /// harmless: both ways give the same bytes.)
    @Test func shortAndLibraryPathsAgree() throws {
        let chosen = sc_sha256_short_path()
        defer { sc_sha256_set_short_path(chosen) }
        let bytes = (0..<700).map { UInt8($0 % 251) }
        var key = sc_hmac_key()
        bytes.withUnsafeBytes { sc_hmac_key_init(&key, $0.baseAddress, 40) }
        defer { withUnsafeMutableBytes(of: &key) { sc_memzero($0.baseAddress, $0.count) } }
        func digests() -> [[UInt8]] {
            var results: [[UInt8]] = []
            bytes.withUnsafeBytes { b in
                for prefix in [0, 1, 55, 63, 64, 68, 119, 128] {
                    for length in Array(0...130) + [183, 184, 247, 248, 255, 256, 440, 447, 448, 511, 512, 513, 560] {
                        var out = [UInt8](repeating: 0, count: 32), tag = [UInt8](repeating: 0, count: 32)
                        out.withUnsafeMutableBytes { sc_sha256_prefixed(b.baseAddress, prefix, b.baseAddress! + prefix, length, $0.baseAddress) }
                        var inner = key.inner
                        sc_sha256_update(&inner, b.baseAddress, prefix)
                        tag.withUnsafeMutableBytes { sc_hmac_sha256_continue(&key, &inner, b.baseAddress! + prefix, length, $0.baseAddress) }
                        results += [out, tag]
                    }
                }
            }
            return results
        }
        sc_sha256_set_short_path(1)
        let short = digests()
        sc_sha256_set_short_path(0)
        let library = digests()
        #expect(short == library)
        // And both equal plain incremental SHA-256 of the same bytes.
        var expected = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBytes { sc_sha256($0.baseAddress, 68 + 100, &expected) }
        #expect(short[2 * (5 * 144 + 100)] == expected)
    }

    /// The HMAC of a signing input hashed straight from its values (the signer's and verifier's
    /// path) equals the HMAC of the bytes the writer lays out, on both SHA-256 paths: prefixes
    /// of every length around a block, accounts of 0–256 bytes (the padding crosses blocks), with
    /// and without covered headers, negative-free extremes of created and lifetime.
    @Test func signingInputHMACMatchesTheWrittenBytes() {
        let chosen = sc_sha256_short_path()
        defer { sc_sha256_set_short_path(chosen) }
        let bytes = (0..<400).map { UInt8(($0 &* 37 &+ 11) % 256) }
        var key = sc_hmac_key()
        bytes.withUnsafeBytes { sc_hmac_key_init(&key, $0.baseAddress, 32) }
        defer { withUnsafeMutableBytes(of: &key) { sc_memzero($0.baseAddress, $0.count) } }
        func words<T>(_ offset: Int, as: T.Type) -> T { bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) } }
        for short in [Int32(1), 0] {
            sc_sha256_set_short_path(short)
            for prefix in [0, 1, 55, 63, 64, 68, 100, 127] {
                var inner = key.inner
                bytes.withUnsafeBytes { sc_sha256_update(&inner, $0.baseAddress, prefix) }
                for account in [0, 1, 2, 17, 29, 30, 93, 94, 157, 158, 256] {
                    for headers in [Int32(0), 3] {
                        bytes.withUnsafeBytes { b in
                            var rest = sc_signing_input_rest(
                                target: words(0, as: (UInt64, UInt64, UInt64, UInt64).self),
                                whash: words(32, as: (UInt64, UInt64, UInt64, UInt64).self),
                                created: account.isMultiple(of: 2) ? 99_999_999_999 : 0, lifetime: headers == 0 ? 1 : 86_400,
                                nonce: words(64, as: (UInt64, UInt64).self), account: b.baseAddress! + 100, account_length: account,
                                headers_count: headers, headers_digest: words(80, as: (UInt64, UInt64, UInt64, UInt64).self))
                            var written = [UInt8](repeating: 0, count: Int(SC_SIGNING_INPUT_REST_MAX))
                            let count = written.withUnsafeMutableBytes { sc_signing_input_rest_write(&rest, $0.baseAddress) }
                            #expect(count == sc_signing_input_rest_length(&rest) && count == 95 + account + (headers > 0 ? 32 : 0))
                            var direct = [UInt8](repeating: 0, count: 32), expected = [UInt8](repeating: 1, count: 32)
                            direct.withUnsafeMutableBytes { sc_hmac_sha256_signing_input(&key, &inner, &rest, $0.baseAddress) }
                            written.withUnsafeBytes { w in
                                expected.withUnsafeMutableBytes { sc_hmac_sha256_continue(&key, &inner, w.baseAddress, count, $0.baseAddress) }
                            }
                            #expect(direct == expected, "short path \(short), prefix \(prefix), account \(account), headers \(headers)")
                        }
                    }
                }
            }
        }
    }

    /// RFC 4231 (the cases of CryptoBackendTests) through the shim's own prepared key.
    @Test(arguments: rfc4231Cases)
    func hmacKnownAnswers(_ key: String, _ message: String, _ expected: String) throws {
        let key = try #require([UInt8](hex: key)), message = try #require([UInt8](hex: message))
        var prepared = sc_hmac_key()
        key.withUnsafeBytes { sc_hmac_key_init(&prepared, $0.baseAddress, $0.count) }
        var out = [UInt8](repeating: 0, count: 32)
        // The prepared key is reused: the second message gives the same tag as the first.
        for _ in 0..<2 {
            message.withUnsafeBytes { m in out.withUnsafeMutableBytes { sc_hmac_sha256(&prepared, m.baseAddress, m.count, $0.baseAddress) } }
            #expect(out.hex == expected)
        }
        withUnsafeMutableBytes(of: &prepared) { sc_memzero($0.baseAddress, $0.count) }
    }

    /// Equal buffers compare equal at every length; one flipped bit anywhere (in the
    /// eight-byte words or in the tail) makes them differ.
    @Test func constantTimeCompare() {
        let a = (0..<40).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
        for length in 0...40 {
            #expect(a.withUnsafeBytes { x in a.withUnsafeBytes { sc_memcmp(x.baseAddress, $0.baseAddress, length) } } == 0)
            for position in 0..<length {
                for bit in [0, 7] {
                    var b = a
                    b[position] ^= UInt8(1 << bit)
                    #expect(a.withUnsafeBytes { x in b.withUnsafeBytes { sc_memcmp(x.baseAddress, $0.baseAddress, length) } } == -1,
                            "length \(length), byte \(position), bit \(bit)")
                }
            }
        }
    }

    /// The token parse finds its fields where a plain scan finds the dots: every length 0–300
    /// (16-byte blocks, 64-byte masks and the last 1–15 bytes), a dot alone at each position, all
    /// dots, and dots spread at random; more dots than the nine fields hold are counted.
    @Test func tokenFieldsAreWhereAPlainScanFindsTheDots() {
        func check(_ bytes: [UInt8]) {
            var parsed = sc_token_fields()
            _ = bytes.withUnsafeBytes { sc_token_parse($0.baseAddress, $0.count, 99_999_999_999, 86_400, 64, 1, &parsed) }
            let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
            let expected = [0] + dots.prefix(9).map { $0 + 1 } + (dots.count < 9 ? [bytes.count + 1] : [])
            let starts = withUnsafeBytes(of: parsed.starts) { Array($0.bindMemory(to: Int32.self).prefix(expected.count)) }
            #expect(Int(parsed.fields) == dots.count + 1 && starts.map(Int.init) == expected, "length \(bytes.count), dots at \(dots)")
        }
        var random = SystemRandomNumberGenerator()
        for length in 0...300 {
            let plain = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            check(plain)
            for position in 0..<length {
                var bytes = plain
                bytes[position] = UInt8(ascii: ".")
                check(bytes)
            }
            check([UInt8](repeating: UInt8(ascii: "."), count: length))
            for _ in 0..<20 {
                check(plain.map { _ in random.next() % 8 == 0 ? UInt8(ascii: ".") : UInt8(ascii: "a") })
            }
        }
    }

    #if arch(x86_64)
    /// The byte passes with and without SSSE3 (base64url and the token's fixed fields in plain C,
    /// as on arm64; the URL pass on SSE2 compares) give the same answers: base64url both ways at
    /// every length to 100, tokens and whash headers valid and with a byte changed at every
    /// position (to a character, another one's unused bits, a byte outside the alphabet, a dot),
    /// each changed whash also checked against the signed digest (`isEncoded`), and URLs of
    /// every kind the one-pass canonicaliser takes or hands on.
    @Test func passesAgreeWithAndWithoutSSSE3() throws {
        defer { sc_use_ssse3(1) }
        let signer = try Signer(key: .hmac(secret: [UInt8](repeating: 7, count: 32)), account: "ana")
        let nonce = try #require(Nonce(bytes: [UInt8](repeating: 9, count: 16)))
        let urls = ["https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9", "http://A.EXAMPLE/x?b=1&a=2",
                    "https://h/p%2fq?z=%7e&a=b+c", "https://h/a+b?q=1+2&k=v", "https://h", "https://h?x=1",
                    "https://h/%zz", "https://h/./a", "https://h:8080/a", "https://h/" + String(repeating: "a%2F", count: 40)]
        func decoded(_ text: [UInt8]) -> [UInt8]? {
            text.withUnsafeBytes { raw in
                withUnsafeTemporaryAllocation(byteCount: raw.count, alignment: 1) { scratch in
                    var out = ByteWriter(scratch)
                    return Base64URL.decode(raw, into: &out) ? Array(out.written) : nil
                }
            }
        }
        func answers() throws -> [String] {
            var answers: [String] = []
            for length in 0...100 {
                let text = Base64URL.encode((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
                answers += [text, "\(decoded(Array(text.utf8)) ?? [])"]
            }
            for url in urls {
                answers.append((try? CanonicalURL.canonicalize(url)) ?? "refused")
                guard let headers = try? signer.sign(method: .get, url: url, created: 1_790_000_000, nonce: nonce) else { continue }
                answers += [headers.whash, headers.wtoken]
                let whash = try #require(SHA256Digest(base64url: headers.whash))
                for (text, isToken) in [(headers.wtoken, true), (headers.whash, false)] {
                    let bytes = Array(text.utf8)
                    for position in -1..<bytes.count {
                      for replacement in position < 0 ? [0] : Array("AB=.".utf8) {
                        var changed = bytes
                        if position >= 0 { changed[position] = replacement }
                        let spelled = String(decoding: changed, as: UTF8.self)
                        if isToken {
                            do throws(SignCoreError) { answers.append(try WToken(parsing: spelled).encoded) } catch { answers.append("\(error.code)") }
                        } else {
                            answers.append(SHA256Digest(base64url: spelled)?.description ?? "refused")
                            answers.append("\(whash.isEncoded(as: spelled))")
                        }
                      }
                    }
                }
            }
            return answers
        }
        sc_use_ssse3(1)
        let withSSSE3 = try answers()
        sc_use_ssse3(0)
        #expect(sc_has_ssse3() == 0)
        let without = try answers()
        #expect(withSSSE3 == without)
        #expect(withSSSE3.contains("refused") && withSSSE3.count > 1_000)
    }
    #endif
}
#endif
