import Testing
@_spi(SignCoreTools) @testable import SignCore

/// Covered headers, bodies of URL-class methods, keys that change while
/// the server runs, explicit configuration errors.
@Suite struct SignCore3Tests {
    static let url = "https://api.example.com/v1/orders"
    static let t0: Int64 = 1_790_000_000

    func verifier(_ keys: [SigningKey], clock: TestClock, required: RequiredHeaders = .none,
                  allowsUnsignedBody: Bool = false, cache: KeyCache? = nil) throws -> Verifier {
        try Verifier(keys: try KeySet(keys.map { try $0.publicOnly() }), keyCache: cache, replayGuard: try InMemoryReplayGuard(),
                     allowsUnsignedBody: allowsUnsignedBody, requiredHeaders: required, clock: clock.function)
    }

    // MARK: §3 covered headers

    /// Content-Type, Authorization, a tenant header and Idempotency-Key cannot change in transit.
    @Test(arguments: SignatureAlgorithm.allCases)
    func coveredHeadersCannotChange(_ algorithm: SignatureAlgorithm) async throws {
        let clock = TestClock(Self.t0)
        let key = try SigningKey.generate(algorithm)
        let signer = try Signer(key: key, coveredHeaders: ["Content-Type", "authorization", "X-Tenant", "idempotency-key"],
                                clock: clock.function)
        #expect(signer.coveredHeaders == ["authorization", "content-type", "idempotency-key", "x-tenant"])
        let fields = [HeaderField("Content-Type", "application/json"), HeaderField("Authorization", "Bearer abc"),
                      HeaderField("X-Tenant", "acme"), HeaderField("Idempotency-Key", "k-17")]
        let body = Array(#"{"item":"book"}"#.utf8)
        let v = try verifier([key], clock: clock)
        func request(_ fields: [HeaderField], _ headers: SignedHeaders) -> ReceivedRequest {
            ReceivedRequest(method: .post, url: Self.url, body: .bytes(body), headers: fields, whash: headers.whash, wtoken: headers.wtoken)
        }
        let good = try signer.sign(method: .post, url: Self.url, body: body, headers: fields)
        #expect(try WToken(parsing: good.wtoken).coveredHeaders == signer.coveredHeaders)
        let verified = try v.check(request(fields, good))
        #expect(verified.coveredHeaders == signer.coveredHeaders)
        for index in fields.indices {
            var changed = fields
            changed[index].value += "x"
            #expect(await errorCode { _ = try v.check(request(changed, good)) } == .badSignature, "\(fields[index].name) changed")
            var removed = fields
            removed.remove(at: index)
            #expect(await errorCode { _ = try v.check(request(removed, good)) } == .badSignature, "\(fields[index].name) removed")
        }
        // Another tenant: the same request for tenant "globex" is not the one signed.
        let otherTenant = fields.map { $0.name == "X-Tenant" ? HeaderField("X-Tenant", "globex") : $0 }
        #expect(await errorCode { _ = try v.check(request(otherTenant, good)) } == .badSignature)
        // Names compared case-insensitively, surrounding whitespace ignored; uncovered fields free.
        let respelled = fields.map { HeaderField($0.name.uppercased(), "  \($0.value)\t") } + [HeaderField("Accept", "*/*")]
        _ = try await v.verify(request(respelled, good))
    }

    /// A field signed as absent cannot be added (a tenant header added by an attacker).
    @Test func absentCoveredFieldCannotBeAdded() throws {
        let clock = TestClock(Self.t0)
        let key = try SigningKey.generate(.hmacSHA256)
        let signer = try Signer(key: key, coveredHeaders: ["x-tenant"], clock: clock.function)
        let headers = try signer.sign(method: .get, url: Self.url)
        let v = try verifier([key], clock: clock)
        _ = try v.check(ReceivedRequest(method: .get, url: Self.url, whash: headers.whash, wtoken: headers.wtoken))
        let added = ReceivedRequest(method: .get, url: Self.url, headers: [HeaderField("x-tenant", "")], whash: headers.whash, wtoken: headers.wtoken)
        #expect(throws: SignCoreError(.badSignature, "the signature does not verify")) { _ = try v.check(added) }
    }

    @Test func requiredHeadersMustBeCovered() async throws {
        let clock = TestClock(Self.t0)
        let key = try SigningKey.generate(.ed25519)
        let required = try RequiredHeaders(bodyMethods: ["Content-Type"])
        let v = try verifier([key], clock: clock, required: required)
        let plain = try Signer(key: key, clock: clock.function)
        let covering = try Signer(key: key, coveredHeaders: ["content-type"], clock: clock.function)
        let fields = [HeaderField("content-type", "application/json")]
        func post(_ signer: Signer) throws -> ReceivedRequest {
            let h = try signer.sign(method: .post, url: Self.url, body: [1], headers: fields)
            return ReceivedRequest(method: .post, url: Self.url, body: .bytes([1]), headers: fields, whash: h.whash, wtoken: h.wtoken)
        }
        #expect(await errorCode { _ = try v.check(try post(plain)) } == .headerNotCovered)
        _ = try v.check(try post(covering))
        // Only for the body class here: a GET needs nothing covered.
        let get = try plain.sign(method: .get, url: Self.url)
        _ = try v.check(ReceivedRequest(method: .get, url: Self.url, whash: get.whash, wtoken: get.wtoken))
        let badName = #expect(throws: SignCoreError.self) { _ = try RequiredHeaders(urlMethods: ["x.y"]) }
        #expect(badName?.code == .invalidConfiguration)
    }

    @Test func coveredNamesAndValuesAreChecked() throws {
        let key = try SigningKey.generate(.hmacSHA256)
        for names in [["x.y"], ["whash"], ["WToken"], [""], [String(repeating: "h", count: 65)], (0..<17).map { "h\($0)" }] {
            let error = #expect(throws: SignCoreError.self) { _ = try Signer(key: key, coveredHeaders: names) }
            #expect(error?.code == .invalidConfiguration)
        }
        let signer = try Signer(key: key, coveredHeaders: ["x-note"])
        for value in ["a\rb", "a\nb", "a\u{0}b", "a\u{7F}", String(repeating: "v", count: 8193)] {
            let error = #expect(throws: SignCoreError.self) {
                _ = try signer.sign(method: .get, url: Self.url, headers: [HeaderField("X-Note", value)])
            }
            #expect(error?.code == .invalidHeader)
        }
        _ = try signer.sign(method: .get, url: Self.url, headers: [HeaderField("X-Note", "a \r\n\t b"), HeaderField("x-note", String(repeating: "v", count: 8000))])
    }

    /// No covered header: the signing input is the SignCore/2 layout plus one zero byte.
    @Test func noCoveredHeaderAddsOneByte() throws {
        let zero = SHA256Hasher.hash([UInt8]())
        let plain = try SigningInput.bytes(algorithm: .hmacSHA256, keyID: "k", target: zero, whash: zero, created: 1, lifetime: 1,
                                           nonce: .random(), account: "")
        #expect(plain.last == 0)
        let covered = try SigningInput.bytes(algorithm: .hmacSHA256, keyID: "k", target: zero, whash: zero, created: 1, lifetime: 1,
                                             nonce: .random(), account: "", headers: (2, zero))
        #expect(covered.count == plain.count + 32)
        #expect(covered[plain.count - 1] == 2)
    }

    // MARK: §2 bodies on URL-class methods

    @Test(arguments: [RequestMethod.get, .head, .options, .delete])
    func urlClassBodiesAreRefused(_ method: RequestMethod) async throws {
        let clock = TestClock(Self.t0)
        let key = try SigningKey.generate(.hmacSHA256)
        let signer = try Signer(key: key, clock: clock.function)
        let body = Array(#"{"ids":[17]}"#.utf8)
        let signError = #expect(throws: SignCoreError.self) { _ = try signer.sign(method: method, url: Self.url, body: body) }
        #expect(signError?.code == .unexpectedBody)
        let streamed = #expect(throws: SignCoreError.self) { _ = try signer.sign(method: method, url: Self.url, bodyWHash: WHash.ofBody(body)) }
        #expect(streamed?.code == .unexpectedBody)
        let h = try signer.sign(method: method, url: Self.url)
        let v = try verifier([key], clock: clock)
        for received in [RequestBody.bytes(body), .whash(WHash.ofBody(body)), .bytes(Array(repeating: 0, count: 1 << 20))] {
            let request = ReceivedRequest(method: method, url: Self.url, body: received, whash: h.whash, wtoken: h.wtoken)
            #expect(await errorCode { _ = try v.check(request) } == .unexpectedBody)
        }
        _ = try v.check(ReceivedRequest(method: method, url: Self.url, body: .whash(WHash.ofBody([])), whash: h.whash, wtoken: h.wtoken))
        // Explicitly allowed on both sides: signed without the body, which stays unsigned.
        let lenient = try Signer(key: key, allowsUnsignedBody: true, clock: clock.function)
        let h2 = try lenient.sign(method: method, url: Self.url, body: body)
        #expect(h2.whash == h.whash)
        let open = try verifier([key], clock: clock, allowsUnsignedBody: true)
        _ = try open.check(ReceivedRequest(method: method, url: Self.url, body: .bytes([9, 9]), whash: h2.whash, wtoken: h2.wtoken))
    }

    // MARK: §4 keys from a source

    final class CountingSource: KeySource {
        let keys: [String: SigningKey]
        let lookups = Locked(0)
        let failing: Bool
        init(_ keys: [SigningKey], failing: Bool = false) {
            self.keys = Dictionary(uniqueKeysWithValues: keys.map { ($0.id, $0) })
            self.failing = failing
        }
        func record(id: String) async throws(SignCoreError) -> KeyRecord? {
            lookups.withLock { $0 += 1 }
            if failing { throw SignCoreError(.unavailable, "the key store cannot be reached") }
            return keys[id].map { KeyRecord(key: $0) }
        }
    }

    @Test func keysComeFromASourceThroughACache() async throws {
        let clock = TestClock(Self.t0)
        let device = try SigningKey.generate(.ed25519)
        let source = CountingSource([try device.publicOnly()])
        let cache = try KeyCache(source: source, missesPerSecond: 5, clock: clock.function)
        let v = try Verifier(keys: KeySet(), keyCache: cache, replayGuard: try InMemoryReplayGuard(), clock: clock.function)
        let signer = try Signer(key: device, clock: clock.function)
        for _ in 0..<10 { _ = try await v.verify(received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url))) }
        #expect(source.lookups.withLock { $0 } == 1)  // fetched once, then cached
        // A flood of unknown key ids reaches the source at most `missesPerSecond` times a second.
        var codes: [SignCoreError.Code: Int] = [:]
        for index in 0..<100 {
            let stranger = try SigningKey.generate(.ed25519, id: "stranger-\(index)")
            let h = try Signer(key: stranger, clock: clock.function).sign(method: .get, url: Self.url)
            if let code = await errorCode({ _ = try await v.verify(received("GET", Self.url, [], h)) }) { codes[code, default: 0] += 1 }
        }
        // The device's lookup spent one of this second's 5 misses: 4 strangers were looked up.
        #expect(source.lookups.withLock { $0 } == 5)
        #expect(codes[.unknownKey] == 4 && codes[.unavailable] == 96)
        // A known unknown is answered from the cache, without a lookup.
        let stranger = try SigningKey.generate(.ed25519, id: "stranger-0")
        let again = try Signer(key: stranger, clock: clock.function).sign(method: .get, url: Self.url)
        clock.set(Self.t0 + 1)
        #expect(await errorCode { _ = try await v.verify(received("GET", Self.url, [], again)) } == .unknownKey)
        #expect(source.lookups.withLock { $0 } == 5)
    }

    /// The cache holds at most `capacity` ids: expired entries leave first, else the oldest.
    @Test func keyCacheStaysWithinItsCapacity() async throws {
        let clock = TestClock(Self.t0)
        let keys = try (0..<3).map { try SigningKey.generate(.hmacSHA256, id: "device-\($0)") }
        let source = CountingSource(keys)
        let cache = try KeyCache(source: source, capacity: 2, clock: clock.function)
        for key in keys { #expect(try await cache.key(id: key.id)?.id == key.id) }
        #expect(cache.count == 2)
        _ = try await cache.key(id: "device-2")  // still cached: no lookup
        _ = try await cache.key(id: "device-0")  // the oldest left: looked up again
        #expect(source.lookups.withLock { $0 } == 4)
        #expect(cache.count == 2)
    }

    /// A revoked key stops verifying and a registered one is found at once, not after the
    /// cache's lifetimes; a lookup in flight across an invalidation does not store its answer.
    @Test func invalidatedIdsAreLookedUpAgain() async throws {
        let clock = TestClock(Self.t0)
        let device = try SigningKey.generate(.ed25519, id: "device-1")
        let store = MutableSource()
        let cache = try KeyCache(source: store, clock: clock.function)
        let v = try Verifier(keys: KeySet(), keyCache: cache, replayGuard: try InMemoryReplayGuard(), clock: clock.function)
        let signer = try Signer(key: device, clock: clock.function)
        // Unknown, and remembered as unknown for 60 s...
        #expect(await errorCode { _ = try await v.verify(received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url))) } == .unknownKey)
        let registered = KeyRecord(key: try device.publicOnly(), metadata: ["model": "test-phone"])
        store.keys.withLock { $0[device.id] = registered }
        #expect(await errorCode { _ = try await v.verify(received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url))) } == .unknownKey)
        // ...until the registration invalidates it.
        cache.invalidate(id: device.id)
        _ = try await v.verify(received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url)))
        #expect(try await cache.record(id: device.id)?.metadata == ["model": "test-phone"])
        // Revoked (its record kept, its status changed): cached for 300 s, unless invalidated;
        // then refused as unknown, and its record still readable with its status.
        store.keys.withLock { $0[device.id]?.status = .revoked }
        _ = try await v.verify(received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url)))
        cache.invalidate(id: device.id)
        #expect(await errorCode { _ = try await v.verify(received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url))) } == .unknownKey)
        #expect(try await cache.record(id: device.id)?.status == .revoked && cache.count == 1)
        #expect(try await cache.key(id: device.id) == nil)
        // Deleted: unknown.
        store.keys.withLock { $0[device.id] = nil }
        cache.invalidate(id: device.id)
        #expect(await errorCode { _ = try await v.verify(received("GET", Self.url, [], try signer.sign(method: .get, url: Self.url))) } == .unknownKey)
        // A lookup that was answered before an invalidation, and returns after it, is not stored.
        store.keys.withLock { $0[device.id] = registered }
        cache.invalidate(id: device.id)
        store.gate.withLock { $0 = true }
        let slow = Task { try await cache.key(id: device.id) }
        for _ in 0..<500 where store.waiting.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(store.waiting.withLock { $0 } == 1, "the lookup did not reach the source")
        cache.invalidateAll()
        store.gate.withLock { $0 = false }
        #expect(try await slow.value?.id == device.id)
        #expect(cache.count == 0)
    }

    /// A key store that changes, and can hold a lookup until released.
    final class MutableSource: KeySource {
        let keys = Locked([String: KeyRecord]())
        let gate = Locked(false)
        let waiting = Locked(0)
        func record(id: String) async throws(SignCoreError) -> KeyRecord? {
            let answer = keys.withLock { $0[id] }
            if gate.withLock({ $0 }) {
                waiting.withLock { $0 += 1 }
                for _ in 0..<500 where gate.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
            }
            return answer
        }
    }

    /// Ids and code names are bytes: a Kelvin sign (U+212A) is not a K.
    @Test func idsAndCodeNamesAreComparedAsBytes() async throws {
        let key = try SigningKey.generate(.hmacSHA256, id: "Key")
        let source = CountingSource([key])
        let cache = try KeyCache(source: source)
        #expect(try await cache.key(id: "\u{212A}ey") == nil)
        #expect(source.lookups.withLock { $0 } == 0)
        #expect(try await cache.key(id: "Key")?.id == "Key")
        #expect(SignCoreError.Code(name: "unknown\u{212A}ey") == nil)
        #expect(SignCoreError.Code(name: "unknownKey") == .unknownKey)
    }

    @Test func anUnreachableSourceRefusesTheRequest() async throws {
        let clock = TestClock(Self.t0)
        let device = try SigningKey.generate(.hmacSHA256)
        let cache = try KeyCache(source: CountingSource([device], failing: true), clock: clock.function)
        let v = try Verifier(keys: KeySet(), keyCache: cache, replayGuard: try InMemoryReplayGuard(), clock: clock.function)
        let h = try Signer(key: device, clock: clock.function).sign(method: .get, url: Self.url)
        #expect(await errorCode { _ = try await v.verify(received("GET", Self.url, [], h)) } == .unavailable)
    }

    // MARK: §7 configuration and printing

    /// An unknown key id is named (it is public) in a field of its own, not in the detail text.
    @Test func unknownKeyNamesTheKeyID() throws {
        let clock = TestClock(Self.t0)
        let stranger = try SigningKey.generate(.hmacSHA256, id: "device-42")
        let h = try Signer(key: stranger, clock: clock.function).sign(method: .get, url: Self.url)
        let v = try verifier([try SigningKey.generate(.hmacSHA256)], clock: clock)
        let error = #expect(throws: SignCoreError.self) { _ = try v.check(received("GET", Self.url, [], h)) }
        #expect(error?.code == .unknownKey && error?.keyID == "device-42")
        #expect(error?.detail.contains("device-42") == false)
    }

    @Test func verifierSettingsOutOfRangeAreErrors() throws {
        for (skew, maxLifetime) in [(Int64(-1), Int64(300)), (86_401, 300), (30, 0), (30, 86_401)] {
            let error = #expect(throws: SignCoreError.self) {
                _ = try Verifier(keys: KeySet(), replayGuard: try InMemoryReplayGuard(), skew: skew, maxLifetime: maxLifetime)
            }
            #expect(error?.code == .invalidConfiguration)
        }
        let cache = #expect(throws: SignCoreError.self) { _ = try KeyCache(source: CountingSource([]), capacity: 0) }
        #expect(cache?.code == .invalidConfiguration)
        #expect(SignCoreError.Code.unsupportedVersion.advice == .updateClient)
    }

    @Test func verifiedRequestPrintsItsFieldsOnly() async throws {
        let pair = try Pair(.hmacSHA256, account: "user-1")
        let verified = try await pair.verifier.verify(received("GET", Self.url, [], try pair.signer.sign(method: .get, url: Self.url)))
        let text = "\(verified)"
        #expect(text.hasPrefix("VerifiedRequest(keyID: \(pair.key.id), algorithm: HS256, account: \"user-1\""))
        #expect(!text.contains("words") && !text.contains("KeyID("))
    }
}
