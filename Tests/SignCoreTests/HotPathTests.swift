#if canImport(CSignShim)  // the C shim of the libsodium/OpenSSL backend (Linux)
import CSignBytes
import CSignShim
import Testing
@testable import SignCore
#if canImport(Glibc)
import Glibc
#endif

/// The shortcuts the hot path takes must give exactly what the plain computation gives.
@Suite struct HotPathTests {
    /// HMAC keys continue from a state that already absorbed their signing-input prefix; any
    /// message, with or without that prefix, must get the plain RFC 2104 tag.
    @Test func prefixedHMACEqualsPlainHMAC() throws {
        let secret = (0..<40).map { UInt8($0 * 7 % 256) }
        let key = try SigningKey.hmac(secret: secret)
        var plain = sc_hmac_key()
        secret.withUnsafeBytes { sc_hmac_key_init(&plain, $0.baseAddress, $0.count) }
        defer { withUnsafeMutableBytes(of: &plain) { sc_memzero($0.baseAddress, $0.count) } }
        let prefix = Array(key.signingInputPrefix)
        var otherPrefix = prefix
        otherPrefix[prefix.count - 1] ^= 1
        for message in [prefix, prefix + [1, 2, 3], prefix + (0..<300).map { UInt8($0 % 256) }, otherPrefix + [9],
                        Array(prefix.dropLast()), [], [0x61]] {
            var tag = [UInt8](repeating: 0, count: 32), expected = tag
            try message.withUnsafeBytes { m in try tag.withUnsafeMutableBytes { try key.sign(m, into: $0) } }
            message.withUnsafeBytes { m in expected.withUnsafeMutableBytes { sc_hmac_sha256(&plain, m.baseAddress, m.count, $0.baseAddress) } }
            #expect(tag == expected, "message of \(message.count) bytes")
            #expect(message.withUnsafeBytes { m in expected.withUnsafeBytes { key.isValidSignature($0, for: m) } })
        }
    }

    /// An HS256 request signed in one pass (`sc_hs256_sign_common`) must give the headers the
    /// plain composition gives: the canonical URL, its target digest, the whash, the signing
    /// input of SPEC §4.2 and its RFC 2104 HMAC, and the token of §4.1, for every method, common
    /// URLs and others (the general path), bodies in memory or hashed apart, accounts and key ids
    /// of every length class; a GET body allowed unsigned and a creation time out of range go the
    /// general way. (The token's text is checked independently by the sign vectors, which the
    /// Python reference made from the spec and which take the one-pass path.)
    @Test func onePassSignEqualsThePlainComposition() throws {
        let secret = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 3) }
        var plain = sc_hmac_key()
        secret.withUnsafeBytes { sc_hmac_key_init(&plain, $0.baseAddress, $0.count) }
        defer { withUnsafeMutableBytes(of: &plain) { sc_memzero($0.baseAddress, $0.count) } }
        let urls = ["https://api.example.com/v1/orders?id=42&sort=desc&q=caf%C3%A9", "https://H.example/a+b?q=a+b&a=%2f",
                    "http://h", "https://h?", "https://h/x?b=1&a=2&a=1", "https://h/%7e?x", "https://h/./a", "https://u@h/",
                    "https://h/" + String(repeating: "p/", count: 300), "https://h/é?k=v"]
        for (index, id) in ["k", "key-1", String(repeating: "Kk", count: 32)].enumerated() {
            let key = try SigningKey.hmac(secret: secret, id: id)
            for account in ["", "alice", String(repeating: "ü", count: 128)] {
                let signer = try Signer(key: key, lifetime: Int64(60 + index), account: account)
                for method in RequestMethod.allCases {
                    for url in urls {
                        for body in method.contentClass == .url ? [[UInt8]()] : [[], [1, 2, 3]] {
                            let nonce = Nonce.random()
                            let created: Int64 = 1_790_000_000 + Int64(index)
                            // The plain composition, from the spec's parts; a URL it refuses, the signer refuses alike.
                            let canonical: [UInt8]
                            do {
                                canonical = Array(try CanonicalURL.canonicalize(url).utf8)
                            } catch let refused {
                                #expect(throws: refused) { try signer.sign(method: method, url: url, body: body, created: created, nonce: nonce) }
                                continue
                            }
                            let signed = try signer.sign(method: method, url: url, body: body, created: created, nonce: nonce)
                            if method.contentClass == .body {  // the body hashed apart (a stream): the same headers
                                let clocked = try Signer(key: key, lifetime: Int64(60 + index), account: account, clock: { created })
                                let viaHash = try clocked.sign(method: method, url: url, bodyWHash: body.withUnsafeBytes { WHash.ofBody($0) })
                                let drawn = try WToken(parsing: viaHash.wtoken).nonce
                                #expect(viaHash == (try signer.sign(method: method, url: url, body: body, created: created, nonce: drawn)))
                            }
                            let target = canonical.withUnsafeBytes { SigningInput.targetDigest(method: method, canonicalURL: $0) }
                            let whash = method.contentClass == .url ? target : body.withUnsafeBytes { WHash.ofBody($0) }
                            let input = try SigningInput.bytes(algorithm: .hmacSHA256, keyID: id, target: target, whash: whash, created: created,
                                                               lifetime: Int64(60 + index), nonce: nonce, account: account)
                            var tag = [UInt8](repeating: 0, count: 32)
                            input.withUnsafeBytes { m in tag.withUnsafeMutableBytes { sc_hmac_sha256(&plain, m.baseAddress, m.count, $0.baseAddress) } }
                            let token = WToken(keyID: id, created: created, lifetime: Int64(60 + index), nonce: nonce,
                                               targetHint: Array(target.bytes.prefix(6)), account: account, coveredHeaders: [], signature: tag)
                            #expect(signed.whash == whash.description, "\(method) \(url)")
                            #expect(signed.wtoken == token.encoded, "\(method) \(url) \(account.count)")
                        }
                    }
                }
            }
        }
        // A GET body allowed unsigned: signed as if it were empty, by the general path.
        let key = try SigningKey.hmac(secret: secret, id: "k")
        let lenient = try Signer(key: key, allowsUnsignedBody: true)
        let url = urls[0]
        let nonce = Nonce.random()
        #expect(try lenient.sign(method: .get, url: url, body: [1], created: 1_790_000_000, nonce: nonce)
                == lenient.sign(method: .get, url: url, created: 1_790_000_000, nonce: nonce))
        #expect(throws: SignCoreError.self) { try Signer(key: key).sign(method: .get, url: url, body: [1], created: 1_790_000_000, nonce: nonce) }
        // A creation time out of range: the general path's refusal.
        #expect(throws: SignCoreError.self) { try lenient.sign(method: .get, url: url, created: WToken.maxCreated + 1, nonce: nonce) }
    }

    /// Short digests are padded by the shim and fed to the block function directly; every
    /// length around the block boundaries, split anywhere, must equal OpenSSL's own padding.
    @Test func directBlockDigestsEqualStreamingDigests() {
        let bytes = (0..<700).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }
        for total in Array(0...200) + [447, 448, 511, 512, 513, 575, 576, 600, 700] {
            for split in Set([0, total / 3, min(total, 21), total]) {
                let prefix = Array(bytes[..<split]), data = Array(bytes[split..<total])
                var direct = [UInt8](repeating: 0, count: 32), streamed = direct
                prefix.withUnsafeBytes { p in
                    data.withUnsafeBytes { d in
                        direct.withUnsafeMutableBytes { sc_sha256_prefixed(p.baseAddress, p.count, d.baseAddress, d.count, $0.baseAddress) }
                    }
                }
                var state = sc_sha256_state()
                sc_sha256_init(&state)
                prefix.withUnsafeBytes { sc_sha256_update(&state, $0.baseAddress, $0.count) }
                data.withUnsafeBytes { sc_sha256_update(&state, $0.baseAddress, $0.count) }
                streamed.withUnsafeMutableBytes { sc_sha256_final(&state, $0.baseAddress) }
                #expect(direct == streamed, "\(total) bytes split at \(split)")
            }
        }
    }

    /// HMAC continued from a state that absorbed part of the message (with that part's bytes
    /// still buffered or not) equals RFC 2104 computed from plain SHA-256 calls.
    @Test func continuedHMACEqualsRFC2104() {
        let secret = (0..<32).map { UInt8($0 &+ 100) }
        var key = sc_hmac_key()
        secret.withUnsafeBytes { sc_hmac_key_init(&key, $0.baseAddress, $0.count) }
        defer { withUnsafeMutableBytes(of: &key) { sc_memzero($0.baseAddress, $0.count) } }
        func sha256(_ bytes: [UInt8]) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 32)
            bytes.withUnsafeBytes { b in out.withUnsafeMutableBytes { sc_sha256(b.baseAddress, b.count, $0.baseAddress) } }
            return out
        }
        let block = secret + [UInt8](repeating: 0, count: 32)
        let message = (0..<700).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for length in [0, 1, 55, 56, 63, 64, 65, 119, 120, 200, 447, 448, 511, 512, 513, 700] {
            for absorbed in Set([0, min(length, 4), min(length, 64), min(length, 70)]) {
                let whole = Array(message[..<length])
                let expected = sha256(block.map { $0 ^ 0x5c } + sha256(block.map { $0 ^ 0x36 } + whole))
                var inner = key.inner
                whole.withUnsafeBytes { sc_sha256_update(&inner, $0.baseAddress, absorbed) }
                var tag = [UInt8](repeating: 0, count: 32)
                whole.withUnsafeBytes { m in
                    tag.withUnsafeMutableBytes {
                        sc_hmac_sha256_continue(&key, &inner, m.baseAddress.map { $0 + absorbed }, length - absorbed, $0.baseAddress)
                    }
                }
                #expect(tag == expected, "\(length) bytes, \(absorbed) absorbed first")
            }
        }
    }

    @Test func keyIdBytesAndPrefixMatchTheSpec() throws {
        let key = try SigningKey.hmac(secret: [UInt8](repeating: 1, count: 32), id: "kid-1")
        #expect(Array(key.idBytes) == Array("kid-1".utf8))
        #expect(Array(key.signingInputPrefix) == Array("SignCore/3 wtoken\n".utf8) + [5] + Array("HS256".utf8) + [5] + Array("kid-1".utf8))
    }

    /// Nonces from the per-thread generator never repeat, across threads either.
    @Test func noncesAreUniqueAcrossThreads() async {
        let perTask = 20_000
        let sets = await withTaskGroup(of: Set<Nonce>.self) { group in
            for _ in 0..<4 { group.addTask { Set((0..<perTask).map { _ in Nonce.random() }) } }
            return await group.reduce(into: [Set<Nonce>]()) { $0.append($1) }
        }
        #expect(sets.allSatisfy { $0.count == perTask })
        #expect(sets.reduce(into: Set<Nonce>()) { $0.formUnion($1) }.count == 4 * perTask)
        // Every bit position takes both values (a stuck bit would show here).
        let all = sets.flatMap { $0 }
        var ones = [Int](repeating: 0, count: 128)
        for nonce in all { for (i, byte) in nonce.bytes.enumerated() { for bit in 0..<8 where byte >> bit & 1 == 1 { ones[i * 8 + bit] += 1 } } }
        #expect(ones.allSatisfy { (all.count * 45 / 100)...(all.count * 55 / 100) ~= $0 })
    }

    /// A forked child must not continue its parent's nonce stream: without the reseed it would
    /// draw exactly the nonce the parent draws next.
    @Test func forkedChildDrawsADifferentStream() throws {
        _ = Nonce.random()  // seed this thread's generator in the parent
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        let child = fork()
        if child == 0 {
            var nonce = Nonce.random()
            _ = withUnsafeBytes(of: &nonce.words) { write(pipeEnds[1], $0.baseAddress, 16) }
            _exit(0)
        }
        #expect(child > 0)
        close(pipeEnds[1])
        var fromChild = Nonce(words: (0, 0))
        let received = withUnsafeMutableBytes(of: &fromChild.words) { read(pipeEnds[0], $0.baseAddress, 16) }
        close(pipeEnds[0])
        var status: Int32 = 0
        waitpid(child, &status, 0)
        #expect(received == 16)
        #expect(fromChild != Nonce.random())
    }

    /// The same for a child no pthread_atfork handler ran in (a raw clone(2)): the wiped page
    /// (or the process id) tells it apart.
    @Test func rawCloneChildDrawsADifferentStream() {
        _ = Nonce.random()
        #expect(sc_nonce_differs_after_raw_clone() == 1)
    }

    /// Linux since 4.14 wipes a MADV_WIPEONFORK page in a child, and the generator relies on it
    /// only once a child was seen to get it zeroed (a sandbox may accept the advice and ignore it).
    @Test func theWipedPageIsUsedOnlyOnceSeenToWork() {
        _ = Nonce.random()
        #expect(sc_fork_sentinel_uses_wiped_page() == 1)
    }
}
#endif
