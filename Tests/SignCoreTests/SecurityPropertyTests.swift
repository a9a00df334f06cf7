import Testing
@testable import SignCore

/// Each property a signature must hold, tested so that its violation would be caught.
@Suite struct SecurityPropertyTests {
    static let url = "https://api.example.com/v1/orders?id=42&sort=desc"
    static let body = Array(#"{"item":"book","qty":1}"#.utf8)

    @Test(arguments: SignatureAlgorithm.allCases)
    func roundTripOnRandomRequests(_ algorithm: SignatureAlgorithm) async throws {
        let pair = try Pair(algorithm, account: "user-\(Int.random(in: 0..<1000))")
        var rng = SystemRandomNumberGenerator()
        let pieces = ["a", "B", "%41", "caf%C3%A9", "é", "x+y", "~", "(1)", "..", "."]
        for _ in 0..<50 {
            let method = RequestMethod.allCases.randomElement(using: &rng)!
            let path = (0..<Int.random(in: 0...4, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined(separator: "/")
            let query = (0..<Int.random(in: 0...4, using: &rng)).map { _ in "\(pieces.randomElement(using: &rng)!)=\(pieces.randomElement(using: &rng)!)" }
            let url = "https://host\(Int.random(in: 0..<9, using: &rng)).example/\(path)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
            let body = method.contentClass == .url ? []  // SPEC §3.2: a URL-class method carries no body
                : (0..<Int.random(in: 0..<300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let headers = try pair.signer.sign(method: method, url: url, body: body)
            let verified = try await pair.verifier.verify(received(method.rawValue, url, body, headers))
            #expect(verified.keyID == pair.key.id)
            #expect(verified.account == pair.signer.account)
            #expect(verified.algorithm == algorithm)
        }
    }

    /// The verifier checks a token's key id for its characters only when its key set has no such
    /// id (an id of the set is valid); the refusals stay those of SPEC §5 in step order. A key
    /// id with a character outside base64url is `malformedToken` ahead of a bad method (step 2),
    /// a bad created field, a bad account or header field and a bad signature field (all step 1,
    /// after the key id), and ahead of `unknownKey`; a valid unknown id is `unknownKey`.
    @Test func keyIDCharactersAreRefusedInStepOrder() async throws {
        let pair = try Pair(.hmacSHA256)
        let get = try pair.signer.sign(method: .get, url: Self.url)
        var fields = get.wtoken.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(fields.count == 9)
        func verify(_ method: String, _ changed: [String]) async -> (SignCoreError.Code?, String?) {
            let request = ReceivedRequest(method: method, url: Self.url, whash: get.whash, wtoken: changed.joined(separator: "."))
            do {
                _ = try pair.verifier.check(request)
                return (nil, nil)
            } catch {
                return (error.code, error.detail)
            }
        }
        #expect(await verify("GET", fields).0 == nil)
        let kidMessage = "the key id field is not 1-64 base64url characters"
        for bad in ["!", "=", "+", "/", "\u{0}", "é"] {
            var changed = fields
            changed[1] = String(fields[1].dropLast()) + bad
            #expect(await verify("GET", changed) == (.malformedToken, kidMessage), "\(bad)")
            #expect(await verify("G T", changed) == (.malformedToken, kidMessage), "\(bad) with a bad method")
            for (index, value) in [(2, "0123"), (6, "!"), (7, "X"), (8, "short")] {
                var worse = changed
                worse[index] = value
                #expect(await verify("GET", worse) == (.malformedToken, kidMessage), "\(bad) with field \(index)")
            }
        }
        // A valid id the set does not hold, and the same with a bad method: step 2 first.
        fields[1] = "unknownKeyId"
        #expect(await verify("GET", fields).0 == .unknownKey)
        #expect(await verify("G T", fields).0 != .unknownKey)
    }

    /// The longest URL SPEC §2.1 allows (8192 bytes) signs and verifies, by the one-pass path (a
    /// common URL: its scratch is then on the heap) and by the general one (an escaped
    /// unreserved byte at its end); one byte more is `invalidURL` at both ends.
    @Test func longestURLSignsAndVerifiesAndOneByteMoreIsRefused() async throws {
        let pair = try Pair(.hmacSHA256)
        for tail in ["a", "%41"] {
            let url = "https://h/" + String(repeating: "b", count: 8192 - 10 - tail.utf8.count) + tail
            #expect(url.utf8.count == 8192)
            let headers = try pair.signer.sign(method: .get, url: url)
            #expect(await errorCode { _ = try await pair.verifier.verify(received("GET", url, [], headers)) } == nil)
            let longer = url + "c"
            #expect(await errorCode { _ = try pair.signer.sign(method: .get, url: longer) } == .invalidURL)
            #expect(await errorCode { _ = try await pair.verifier.verify(received("GET", longer, [], headers)) } == .invalidURL)
        }
    }

    /// One request changed in one way at a time; each change is refused with its own code.
    @Test(arguments: SignatureAlgorithm.allCases)
    func everySingleChangeIsRejected(_ algorithm: SignatureAlgorithm) async throws {
        let pair = try Pair(algorithm, account: "alice")
        let post = try pair.signer.sign(method: .post, url: Self.url, body: Self.body)
        let get = try pair.signer.sign(method: .get, url: Self.url)
        let v = pair.verifier
        func code(_ r: ReceivedRequest) async -> SignCoreError.Code? { await errorCode { _ = try v.check(r) } }

        #expect(await code(received("POST", Self.url, Self.body, post)) == nil)
        #expect(await code(received("GET", Self.url, [], get)) == nil)
        // method
        #expect(await code(received("PUT", Self.url, Self.body, post)) == .targetMismatch)
        // A URL-class whash covers the method: the whash header catches the change first, and
        // a whash header recomputed for the new method still leaves the target hint unmatched.
        for method in [RequestMethod.delete, .head, .options] {
            #expect(await code(received(method.rawValue, Self.url, [], get)) == .whashMismatch)
            let rehashed = SignedHeaders(whash: try WHash.compute(method: method, url: Self.url).description, wtoken: get.wtoken)
            #expect(await code(received(method.rawValue, Self.url, [], rehashed)) == .targetMismatch)
        }
        // scheme, host, port, path, query on a POST (the whash covers the body)
        for other in ["http://api.example.com/v1/orders?id=42&sort=desc", "https://evil.example.com/v1/orders?id=42&sort=desc",
                      "https://api.example.com:8443/v1/orders?id=42&sort=desc", "https://api.example.com/v1/order?id=42&sort=desc",
                      "https://api.example.com/v1/orders?id=43&sort=desc", "https://api.example.com/v1/orders?id=42&sort=desc&x=1"] {
            #expect(await code(received("POST", other, Self.body, post)) == .targetMismatch, "\(other)")
            // On a GET the whash header catches the same change first.
            #expect(await code(received("GET", other, [], get)) == .whashMismatch, "\(other)")
        }
        // body
        var tampered = Self.body
        tampered[9] ^= 1
        #expect(await code(received("POST", Self.url, tampered, post)) == .whashMismatch)
        let forgedWHash = SignedHeaders(whash: WHash.ofBody(tampered).description, wtoken: post.wtoken)
        #expect(await code(received("POST", Self.url, tampered, forgedWHash)) == .badSignature)
        // key: the same key id bound to another key
        let impostor = try SigningKey.generate(algorithm, id: pair.key.id)
        let other = try Verifier(keys: try KeySet([impostor.publicOnly()]), replayGuard: try InMemoryReplayGuard(), clock: pair.clock.function)
        #expect(await errorCode { _ = try other.check(received("POST", Self.url, Self.body, post)) } == .badSignature)
        // time, nonce, account: token fields changed
        let token = try WToken(parsing: post.wtoken)
        func with(_ change: (inout WToken) -> Void) -> SignedHeaders {
            var t = token
            change(&t)
            return SignedHeaders(whash: post.whash, wtoken: t.encoded)
        }
        #expect(await code(received("POST", Self.url, Self.body, with { $0.created -= 1 })) == .badSignature)
        #expect(await code(received("POST", Self.url, Self.body, with { $0.lifetime += 1 })) == .badSignature)
        #expect(await code(received("POST", Self.url, Self.body, with { $0.nonce = .random() })) == .badSignature)
        #expect(await code(received("POST", Self.url, Self.body, with { $0.account = "mallory" })) == .badSignature)
        #expect(await code(received("POST", Self.url, Self.body, with { $0.account = "" })) == .badSignature)
        #expect(await code(received("POST", Self.url, Self.body, with { $0.keyID = "someone-else" })) == .unknownKey)
    }

    /// Any one character of the token replaced by any other header-safe character: refused.
    @Test(arguments: [SignatureAlgorithm.hmacSHA256, .ed25519])
    func everyTokenByteIsBound(_ algorithm: SignatureAlgorithm) throws {
        let pair = try Pair(algorithm)
        let headers = try pair.signer.sign(method: .post, url: Self.url, body: Self.body)
        let original = Array(headers.wtoken.utf8)
        let replacements = Array("A0a_-.v1Zz9".utf8)
        var checked = 0
        for position in original.indices {
            for replacement in replacements where replacement != original[position] {
                var changed = original
                changed[position] = replacement
                let request = ReceivedRequest(method: "POST", url: Self.url, body: .bytes(Self.body), whash: headers.whash,
                                              wtoken: String(decoding: changed, as: UTF8.self))
                #expect(throws: SignCoreError.self, "position \(position)") { _ = try pair.verifier.check(request) }
                checked += 1
            }
        }
        #expect(checked > original.count * 5)
        // The whash header is bound the same way.
        for position in 0..<headers.whash.utf8.count {
            var changed = Array(headers.whash.utf8)
            changed[position] ^= 0x01
            let request = ReceivedRequest(method: "POST", url: Self.url, body: .bytes(Self.body),
                                          whash: String(decoding: changed, as: UTF8.self), wtoken: headers.wtoken)
            #expect(throws: SignCoreError.self) { _ = try pair.verifier.check(request) }
        }
    }

    @Test func replayIsRejected() async throws {
        let pair = try Pair(.hmacSHA256)
        let headers = try pair.signer.sign(method: .get, url: Self.url)
        let request = received("GET", Self.url, [], headers)
        _ = try await pair.verifier.verify(request)
        #expect(await errorCode { _ = try await pair.verifier.verify(request) } == .replayed)
        // Signing again draws a fresh nonce, which is accepted.
        let again = try pair.signer.sign(method: .get, url: Self.url)
        #expect(again.wtoken != headers.wtoken)
        _ = try await pair.verifier.verify(received("GET", Self.url, [], again))
    }

    @Test func skewAndExpiryBoundaries() async throws {
        let pair = try Pair(.ed25519, lifetime: 60, skew: 30)
        let created = pair.clock.now
        let headers = try pair.signer.sign(method: .get, url: Self.url)
        let request = received("GET", Self.url, [], headers)
        func code(at t: Int64) async -> SignCoreError.Code? {
            await errorCode { _ = try pair.verifier.check(request, now: t) }
        }
        #expect(await code(at: created - 31) == .notYetValid)
        #expect(await code(at: created - 30) == nil)
        #expect(await code(at: created) == nil)
        #expect(await code(at: created + 59) == nil)
        #expect(await code(at: created + 60) == .expired)
        #expect(await code(at: created + 10_000) == .expired)
        // A lifetime beyond the verifier's maximum is refused whatever the time.
        let long = try Pair(.hmacSHA256, lifetime: 301, maxLifetime: 300)
        let longHeaders = try long.signer.sign(method: .get, url: Self.url)
        #expect(await errorCode { _ = try long.verifier.check(received("GET", Self.url, [], longHeaders)) } == .lifetimeTooLong)
    }

    /// SPEC §6.3: keys replaced while the verifier serves; the replay guard keeps its nonces.
    @Test func keyRotation() async throws {
        let clock = TestClock(1_790_000_000)
        let old = try SigningKey.generate(.ed25519), new = try SigningKey.generate(.ed25519)
        let oldSigner = try Signer(key: old, clock: clock.function), newSigner = try Signer(key: new, clock: clock.function)
        let verifier = try Verifier(keys: try KeySet([old.publicOnly()]), replayGuard: try InMemoryReplayGuard(), clock: clock.function)
        let early = received("GET", Self.url, [], try oldSigner.sign(method: .get, url: Self.url))
        _ = try await verifier.verify(early)
        let fromNewKey = received("GET", Self.url, [], try newSigner.sign(method: .get, url: Self.url))
        #expect(await errorCode { _ = try await verifier.verify(fromNewKey) } == .unknownKey)
        // Add the new key: both verify; a copy of the verifier sees the change too.
        let copy = verifier
        verifier.replaceKeys(try KeySet([old.publicOnly(), new.publicOnly()]))
        _ = try await copy.verify(fromNewKey)
        _ = try await verifier.verify(received("GET", Self.url, [], try oldSigner.sign(method: .get, url: Self.url)))
        #expect(await errorCode { _ = try await verifier.verify(early) } == .replayed)  // replay state kept
        // Remove the old key: its tokens are refused.
        verifier.replaceKeys(try KeySet([new.publicOnly()]))
        let late = received("GET", Self.url, [], try oldSigner.sign(method: .get, url: Self.url))
        #expect(await errorCode { _ = try await verifier.verify(late) } == .unknownKey)
        #expect(verifier.keys.ids == [new.id])
    }

    /// Keys replaced by one task while others verify: every verify sees a whole key set.
    @Test func keysReplacedWhileVerifying() async throws {
        let clock = TestClock(1_790_000_000)
        let a = try SigningKey.generate(.hmacSHA256), b = try SigningKey.generate(.hmacSHA256)
        let signer = try Signer(key: a, clock: clock.function)
        let verifier = try Verifier(keys: try KeySet([a, b]), replayGuard: try InMemoryReplayGuard(), clock: clock.function)
        let requests = try (0..<2000).map { _ in received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url)) }
        let accepted = await withTaskGroup(of: Int.self) { group in
            group.addTask {
                for round in 0..<200 { verifier.replaceKeys((try? KeySet(round % 2 == 0 ? [b, a] : [a, b])) ?? KeySet()) }
                return 0
            }
            for chunk in 0..<4 {
                group.addTask {
                    var ok = 0
                    for request in requests[(chunk * 500)..<((chunk + 1) * 500)] where (try? await verifier.verify(request)) != nil { ok += 1 }
                    return ok
                }
            }
            return await group.reduce(0, +)
        }
        #expect(accepted == requests.count)
    }

    @Test func algorithmComesFromTheKey() throws {
        // An attacker who knows an Ed25519 public key MACs a token with it as an HMAC secret.
        let clock = TestClock(1_790_000_000)
        let victim = try SigningKey.generate(.ed25519)
        let forger = try SigningKey.hmac(secret: victim.publicKey, id: victim.id)
        let forged = try Signer(key: forger, clock: clock.function).sign(method: .get, url: Self.url)
        let verifier = try Verifier(keys: try KeySet([victim.publicOnly()]), replayGuard: try InMemoryReplayGuard(), clock: clock.function)
        let error = #expect(throws: SignCoreError.self) { _ = try verifier.check(received("GET", Self.url, [], forged)) }
        #expect(error?.code == .algorithmMismatch)
    }

    @Test func concurrentVerification() async throws {
        let pair = try Pair(.hmacSHA256)
        let requests = try (0..<400).map { i in
            received("GET", Self.url + "&n=\(i)", [], try pair.signer.sign(method: .get, url: Self.url + "&n=\(i)"))
        }
        // Every distinct token verifies once, from many tasks at a time.
        let accepted = await withTaskGroup(of: Bool.self) { group in
            for request in requests { group.addTask { (try? await pair.verifier.verify(request)) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(accepted == requests.count)
        // The same token presented by 64 tasks at once is accepted exactly once.
        let one = received("GET", Self.url, [], try pair.signer.sign(method: .get, url: Self.url))
        let winners = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<64 { group.addTask { (try? await pair.verifier.verify(one)) != nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
    }

    @Test func streamedBodyVerifies() async throws {
        let pair = try Pair(.p256)
        let body = (0..<(3 << 20)).map { UInt8($0 % 251) }
        var hasher = WHash.BodyHasher(limit: 4 << 20)
        for start in stride(from: 0, to: body.count, by: 65536) { try hasher.append(Array(body[start..<min(body.count, start + 65536)])) }
        let whash = hasher.finalize()
        let headers = try pair.signer.sign(method: .put, url: Self.url, bodyWHash: whash)
        let request = ReceivedRequest(method: "PUT", url: Self.url, body: .whash(whash), whash: headers.whash, wtoken: headers.wtoken)
        _ = try await pair.verifier.verify(request)
        #expect(headers.whash == WHash.ofBody(body).description)
    }

    @Test func missingHeaders() async throws {
        let pair = try Pair(.hmacSHA256)
        let headers = try pair.signer.sign(method: .post, url: Self.url, body: Self.body)
        let noToken = ReceivedRequest(method: "POST", url: Self.url, body: .bytes(Self.body), whash: headers.whash, wtoken: nil)
        let noWHash = ReceivedRequest(method: "POST", url: Self.url, body: .bytes(Self.body), whash: nil, wtoken: headers.wtoken)
        #expect(await errorCode { _ = try pair.verifier.check(noToken) } == .missingHeader)
        #expect(await errorCode { _ = try pair.verifier.check(noWHash) } == .missingHeader)
    }

    @Test func publicKeysCannotSign() throws {
        for algorithm in [SignatureAlgorithm.ed25519, .p256] {
            let key = try SigningKey.generate(algorithm).publicOnly()
            #expect(!key.canSign)
            #expect(throws: SignCoreError.self) { _ = try Signer(key: key) }
        }
    }

    /// Arbitrary header values, methods and URLs: always a SignCoreError, never a crash or a pass.
    @Test func arbitraryInputIsRefusedCleanly() throws {
        let pair = try Pair(.hmacSHA256)
        let valid = try pair.signer.sign(method: .get, url: Self.url)
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("v2.-_AZaz09=%/:?#&é \u{0}".utf8) + [0xFF, 0x80]
        func noise(_ base: String) -> String {
            var bytes = Array(base.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = Int.random(in: 0...bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes.insert(alphabet.randomElement(using: &rng)!, at: i)
                case 1: if i < bytes.count { bytes.remove(at: i) }
                default: if i < bytes.count { bytes[i] = alphabet.randomElement(using: &rng)! }
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        for _ in 0..<3000 {
            let request = ReceivedRequest(method: Bool.random(using: &rng) ? "GET" : noise("GET"), url: noise(Self.url),
                                          whash: Bool.random(using: &rng) ? valid.whash : noise(valid.whash),
                                          wtoken: noise(valid.wtoken))
            do {
                _ = try pair.verifier.check(request)
                // Only a change that canonicalises away (e.g. a dropped fragment) may still verify.
                #expect(try CanonicalURL.canonicalize(request.url) == CanonicalURL.canonicalize(Self.url))
                #expect(request.wtoken == valid.wtoken)
            } catch {
                #expect(error.code != .cryptoFailure, "noise reached the crypto layer: \(error)")
            }
        }
    }
}
