import CSignBytes
import Testing
@testable import SignCore

@Suite struct ReplayGuardTests {
    static let key = "k1"

    /// The guard's nonce hash is SipHash: the shim's function with 2 and 4 rounds gives the
    /// reference vectors of the SipHash paper (key 00..0f, message 00..n-1) for whole words and
    /// for 7, 15 and 23 bytes (the last bytes beside the length).
    @Test func sipHashMatchesTheReferenceVectors() {
        let k0: UInt64 = 0x0706_0504_0302_0100, k1: UInt64 = 0x0F0E_0D0C_0B0A_0908
        let message: [UInt64] = [0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908, 0x1716_1514_1312_1110]
        let expected: [UInt64] = [0x726F_DB47_DD0E_0E31, 0x93F5_F579_9A93_2462, 0x3F2A_CC7F_57C2_9BDB, 0xB8AD_50C6_F649_AF94]
        let sevenMore: [UInt64] = [0xAB02_00F5_8B01_D137, 0xA129_CA61_49BE_45E5, 0xA80C_038C_CD5C_CEC8]
        for count in 0...3 {
            #expect(message.withUnsafeBufferPointer { sc_siphash_words(k0, k1, $0.baseAddress, count, 0, 0, 2, 4) } == expected[count])
        }
        for count in 0...2 {
            let tail = message[count] | 0xFF00_0000_0000_0000  // bytes 8 × count ..< 8 × count + 7, and one ignored
            #expect(message.withUnsafeBufferPointer { sc_siphash_words(k0, k1, $0.baseAddress, count, tail, 7, 2, 4) } == sevenMore[count])
        }
        // The guard's SipHash-1-3 of a nonce and a tag is the general function's, of 23 bytes.
        let tag: UInt64 = 0xFF16_1514_1312_1110
        #expect(sc_siphash13_nonce(k0, k1, 1, 2, tag)
            == [UInt64(1), 2].withUnsafeBufferPointer { sc_siphash_words(k0, k1, $0.baseAddress, 2, tag & 0x00FF_FFFF_FFFF_FFFF, 7, 1, 3) })
        #expect(sc_siphash13_nonce(k0, k1, 1, 2, tag) == sc_siphash13_nonce(k0, k1, 1, 2, tag & 0x00FF_FFFF_FFFF_FFFF))
        #expect(sc_siphash13_nonce(k0, k1, 1, 2, tag) != sc_siphash13_nonce(k0, k1 ^ 1, 1, 2, tag))
        #expect(sc_siphash13_nonce(k0, k1, 1, 2, tag) != sc_siphash13_nonce(k0, k1, 1, 2, tag ^ 1))
    }

    @Test func refusesWhenFullAndNeverForgetsAnUnexpiredNonce() throws {
        let guardian = try InMemoryReplayGuard(capacity: 4, maxShare: 1)
        let nonces = (0..<5).map { _ in Nonce.random() }
        for nonce in nonces.prefix(4) { try guardian.record(keyID: Self.key, nonce: nonce, expires: 100, now: 0) }
        let full = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: nonces[4], expires: 100, now: 1) }
        #expect(full?.code == .overloaded)
        for nonce in nonces.prefix(4) {  // still remembered after the refusal
            let replay = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: nonce, expires: 100, now: 2) }
            #expect(replay?.code == .replayed)
        }
    }

    /// A nonce seen under one key does not block it under another (a token's nonce,
    /// copied into an attacker's own token first, must not get the victim's token refused).
    #if DEBUG
    static let capacities = [1_000, 10_000, 100_000, 1_000_000]
    #else
    static let capacities = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]
    #endif

    @Test func noncesArePerKey() throws {
        let guardian = try InMemoryReplayGuard()
        let nonce = Nonce.random()
        try guardian.record(keyID: "attacker", nonce: nonce, expires: 100, now: 0)
        try guardian.record(keyID: "victim", nonce: nonce, expires: 100, now: 0)
        let again = #expect(throws: SignCoreError.self) { try guardian.record(keyID: "victim", nonce: nonce, expires: 100, now: 1) }
        #expect(again?.code == .replayed)
    }

    /// The same through a verifier: the victim's token passes after the attacker spent its nonce.
    @Test func stolenNonceUnderAnotherKeyDoesNotBlockTheVictim() async throws {
        let clock = TestClock(1_790_000_000)
        let victim = try SigningKey.generate(.hmacSHA256), attacker = try SigningKey.generate(.hmacSHA256)
        let verifier = try Verifier(keys: try KeySet([victim, attacker]), replayGuard: try InMemoryReplayGuard(), clock: clock.function)
        let url = "https://api.example.com/v1/orders"
        let stolen = try Signer(key: victim, clock: clock.function).sign(method: .get, url: url)
        let nonce = try WToken(parsing: stolen.wtoken).nonce
        let copied = try Signer(key: attacker, clock: clock.function).sign(method: .get, url: url, created: clock.now, nonce: nonce)
        _ = try await verifier.verify(received("GET", url, [], copied))
        _ = try await verifier.verify(received("GET", url, [], stolen))
    }

    /// `verifySynchronously` is `verify` without an await: one acceptance, then `replayed`; a
    /// guard that has to be awaited (any other than the in-memory one) is a configuration error.
    @Test func synchronousVerifyRecordsInTheSameGuard() async throws {
        let key = try SigningKey.generate(.hmacSHA256)
        let verifier = try Verifier(keys: try KeySet([key]), replayGuard: try InMemoryReplayGuard())
        let url = "https://api.example.com/v1/orders"
        let request = received("GET", url, [], try Signer(key: key).sign(method: .get, url: url))
        #expect(try verifier.verifySynchronously(request).keyID == key.id)
        #expect(await errorCode { _ = try verifier.verifySynchronously(request) } == .replayed)
        #expect(await errorCode { _ = try await verifier.verify(request) } == .replayed)

        struct AwaitedGuard: ReplayGuard {
            func record(keyID: String, nonce: Nonce, expires: Int64, now: Int64) async throws(SignCoreError) {}
        }
        let remote = try Verifier(keys: try KeySet([key]), replayGuard: AwaitedGuard())
        let fresh = received("GET", url, [], try Signer(key: key).sign(method: .get, url: url))
        #expect(await errorCode { _ = try remote.verifySynchronously(fresh) } == .invalidConfiguration)
        _ = try await remote.verify(fresh)
    }

    /// Verify at t0, step the clock an hour ahead and make the guard drop expired
    /// entries, step it back: the first token must not be accepted again.
    @Test func clockStepsCannotReplayATokenTheGuardForgot() async throws {
        let t0: Int64 = 1_790_000_000
        let clock = TestClock(t0)
        let key = try SigningKey.generate(.hmacSHA256)
        let signer = try Signer(key: key, clock: clock.function)
        let verifier = try Verifier(keys: try KeySet([key]), replayGuard: try InMemoryReplayGuard(capacity: 10_000, maxShare: 1),
                                    clock: clock.function)
        let url = "https://api.example.com/v1/orders"
        let first = received("GET", url, [], try signer.sign(method: .get, url: url))
        _ = try await verifier.verify(first)
        clock.set(t0 + 3600)
        for _ in 0..<2000 { _ = try await verifier.verify(received("GET", url, [], try signer.sign(method: .get, url: url))) }
        #expect((verifier.replayGuard as? InMemoryReplayGuard)?.count == 2000)  // the first token's nonce was dropped
        clock.set(t0 + 5)
        #expect(await errorCode { _ = try await verifier.verify(first) } == .expired)
        // A token the guard still holds is refused as a replay, and fresh tokens pass.
        let second = received("GET", url, [], try signer.sign(method: .get, url: url))
        _ = try await verifier.verify(second)
        #expect(await errorCode { _ = try await verifier.verify(second) } == .replayed)
    }

    /// The guard refuses only when it as a whole holds its capacity (first
    /// refusal at ≥ 95 % for every capacity; here exactly at it), and never holds more.
    @Test(arguments: Self.capacities)
    func firstRefusalComesAtTheStatedCapacity(_ capacity: Int) throws {
        let guardian = try InMemoryReplayGuard(capacity: capacity, maxShare: 1)
        var accepted = 0
        while true {
            do throws(SignCoreError) {
                try guardian.record(keyID: Self.key, nonce: .random(), expires: 100, now: 0)
                accepted += 1
            } catch {
                #expect(error.code == .overloaded)
                break
            }
        }
        #expect(accepted == capacity, "first refusal at \(accepted) of \(capacity)")
        #expect(guardian.count == accepted)
    }

    /// One key cannot fill the guard: it is refused at about its share, and other keys still get in.
    @Test func oneKeyCannotLockOutTheOthers() throws {
        let guardian = try InMemoryReplayGuard(capacity: 100_000, maxShare: 0.25)
        var flooder = 0
        while (try? guardian.record(keyID: "flooder", nonce: .random(), expires: 100, now: 0)) != nil { flooder += 1 }
        #expect(flooder <= 25_000 && flooder >= 23_000, "the flooding key held \(flooder)")
        for other in 0..<100 { try guardian.record(keyID: "key-\(other)", nonce: .random(), expires: 100, now: 0) }
        // Its entries expire: the key may record again.
        try guardian.record(keyID: "flooder", nonce: .random(), expires: 300, now: 200)
    }

    /// Times at the ends of the range (a caller's clock, a token's expiry) are answers, never traps.
    @Test func extremeTimesAreNotATrap() throws {
        let guardian = try InMemoryReplayGuard(capacity: 100, maxShare: 0.5)
        for (expires, now) in [(Int64.max, Int64.min), (Int64.max, Int64.max - 1), (Int64.min + 1, Int64.min),
                               (Int64.min + 2, Int64.min + 1), (0, Int64.min + 1)] {  // the fourth drops the second Int64.min + 1
            try guardian.record(keyID: Self.key, nonce: .random(), expires: expires, now: now)
        }
        let past = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: .random(), expires: Int64.min, now: Int64.min) }
        #expect(past?.code == .expired)
        try guardian.record(keyID: Self.key, nonce: .random(), expires: Int64.max, now: Int64.max - 1)
    }

    @Test func badConfigurationIsAnErrorNotATrap() {
        for (capacity, share) in [(0, 0.5), (-1, 0.5), (10, 0), (10, 1.5), (10, -0.1)] {
            let error = #expect(throws: SignCoreError.self) { _ = try InMemoryReplayGuard(capacity: capacity, maxShare: share) }
            #expect(error?.code == .invalidConfiguration)
        }
        let shards = #expect(throws: SignCoreError.self) { _ = try InMemoryReplayGuard(capacity: 10, shardCount: 0) }
        #expect(shards?.code == .invalidConfiguration)
    }

    /// A table the system cannot allocate is `overloaded`, not a crash.
    @Test func failedAllocationIsAnError() {
        let error = #expect(throws: SignCoreError.self) { _ = try NonceTable.allocate(1 << 52) }
        #expect(error?.code == .overloaded)
    }

    /// A full table is scanned for expired entries at most once per second: a flood of new
    /// nonces against a full guard cannot make every verify rescan it.
    @Test func fullGuardRescansOncePerSecond() throws {
        let guardian = try InMemoryReplayGuard(capacity: 8, maxShare: 1, shardCount: 1)
        for _ in 0..<8 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 100, now: 0) }
        let scans = guardian.shards.scans
        for _ in 0..<50 {
            let error = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: .random(), expires: 100, now: 5) }
            #expect(error?.code == .overloaded)
        }
        #expect(guardian.shards.scans <= scans + 2)  // the first refusal scanned; the other 49 did not
        // Everything expired: room again for the whole capacity.
        for _ in 0..<8 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 200, now: 100) }
        #expect(guardian.count == 8)
    }

    @Test func shardsShareTheLoad() throws {
        let guardian = try InMemoryReplayGuard(capacity: 64_000, maxShare: 1, shardCount: 64)
        for _ in 0..<64_000 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 100, now: 0) }
        #expect(guardian.count == 64_000)
    }

    @Test func expiredEntriesLeaveOnTheirOwn() throws {
        let guardian = try InMemoryReplayGuard(capacity: 100, maxShare: 1)
        for i in 0..<100 { try guardian.record(keyID: Self.key, nonce: .random(), expires: Int64(10 + i % 10), now: 0) }
        #expect(guardian.count == 100)
        // At t = 15 the entries expiring at 10...15 are gone: room for exactly 60 more.
        for _ in 0..<60 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 50, now: 15) }
        let full = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: .random(), expires: 50, now: 15) }
        #expect(full?.code == .overloaded)
        #expect(guardian.count == 100)
        // A nonce may be used again only once its token has expired.
        let nonce = Nonce.random()
        try guardian.record(keyID: Self.key, nonce: nonce, expires: 30, now: 20)
        #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: nonce, expires: 30, now: 29) }
        try guardian.record(keyID: Self.key, nonce: nonce, expires: 60, now: 30)
        #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: nonce, expires: 60, now: 31) }
    }

    /// Tables of 128 KiB and more come from mmap (40,000 nonces: about 1 MB): growing into them
    /// and resizing between them keeps every unexpired nonce, and the expired ones make room.
    @Test func largeTablesKeepEveryNonce() throws {
        let guardian = try InMemoryReplayGuard(capacity: 100_000, maxShare: 1, shardCount: 1)
        let nonces = (0..<40_000).map { _ in Nonce.random() }
        for nonce in nonces { try guardian.record(keyID: Self.key, nonce: nonce, expires: 100, now: 0) }
        #expect(guardian.count == nonces.count)
        var replays = 0
        for nonce in nonces {
            do throws(SignCoreError) { try guardian.record(keyID: Self.key, nonce: nonce, expires: 100, now: 1) } catch {
                if error.code == .replayed { replays += 1 }
            }
        }
        #expect(replays == nonces.count)
        // Once they have expired they make room: 110 000 nonces pass through a guard of 100 000.
        for _ in 0..<70_000 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 300, now: 200) }
        #expect(guardian.count <= 100_000)
        try guardian.record(keyID: Self.key, nonce: nonces[0], expires: 300, now: 200)  // expired: usable again
    }

    /// Large tables start on a 2 MiB boundary, whatever their length, so the kernel can back
    /// all of them with huge pages (an unaligned mapping loses one at each end), and come zeroed
    /// and writable to their last byte.
    @Test(arguments: [2 << 20, (2 << 20) + 16, 3 << 20, (5 << 20) - 16])
    func largeTablesAreHugePageAligned(length: Int) throws {
        let pages = try #require(sc_pages_zeroed(length))
        defer { sc_pages_free(pages, length) }
        #expect(UInt(bitPattern: pages) % UInt(2 << 20) == 0)
        let bytes = UnsafeMutableRawBufferPointer(start: pages, count: length)
        #expect(bytes.allSatisfy { $0 == 0 })
        bytes[0] = 1
        bytes[length - 1] = 1
        #expect(bytes[0] == 1 && bytes[length - 1] == 1)
    }

    /// Tables from 128 KiB to under 2 MiB are plain mappings (no huge-page hint): zeroed and
    /// writable to their last byte, released with the same length.
    @Test(arguments: [128 << 10, (200 << 10) + 16, (2 << 20) - 16])
    func smallerTablesAreMapped(length: Int) throws {
        let pages = try #require(sc_pages_zeroed(length))
        defer { sc_pages_free(pages, length) }
        let bytes = UnsafeMutableRawBufferPointer(start: pages, count: length)
        #expect(bytes.allSatisfy { $0 == 0 })
        bytes[length - 1] = 1
        #expect(bytes[length - 1] == 1)
    }

    /// A length of 0, or one the kernel cannot map, is NULL (the table's `overloaded`), never a
    /// crash or a mapping of the wrong size.
    @Test func impossibleTableLengthsAreRefused() {
        #expect(sc_pages_zeroed(0) == nil)
        #expect(sc_pages_zeroed(Int.max) == nil)
        #expect(sc_pages_zeroed(-1) == nil)  // SIZE_MAX: length + 2 MiB would wrap around
    }

    /// The guard against a plain dictionary of (key, nonce, expiry) → expiry, over
    /// 200,000 random records with time moving on: nonces drawn from a small pool and expiries
    /// from a few seconds (so replays, the same nonce under another expiry and reuse after
    /// expiry are all frequent), 10 keys with bounded shares (their counts come and go),
    /// lifetimes of 1–30 s, the clock now and then stepping back a second. An entry lost or
    /// misplaced would show up as an accepted replay; an entry kept too long, as a refusal.
    @Test func agreesWithAModelUnderContinuousExpiry() throws {
        let guardian = try InMemoryReplayGuard(capacity: 1_000_000, maxShare: 0.9, shardCount: 2)
        var model: [String: Int64] = [:]
        var generator = SystemRandomNumberGenerator()
        let pool = (0..<200).map { _ in Nonce.random() }
        var now: Int64 = 1_000, latest: Int64 = 1_000
        var replays = 0, expiredRefusals = 0
        for step in 0..<200_000 {
            if step % 200 == 0 {
                now += Int64.random(in: -1...2, using: &generator)
                latest = max(latest, now)
            }
            let key = "k\(Int.random(in: 0..<10, using: &generator))", nonce = pool.randomElement(using: &generator)!
            let expires = now + Int64.random(in: 1...30, using: &generator) / 10 * 10 + 1
            let name = "\(key) \(nonce) \(expires)"
            let live = (model[name] ?? .min) > now
            do throws(SignCoreError) {
                try guardian.record(keyID: key, nonce: nonce, expires: expires, now: now)
                #expect(!live, "a replay was accepted at step \(step)")
                model[name] = expires
            } catch {
                if error.code == .expired {
                    // The clock stepped back: only a token expiring no later than a time already passed.
                    #expect(expires <= latest, "step \(step): refused as expired")
                    expiredRefusals += 1
                } else {
                    #expect(live && error.code == .replayed, "step \(step): \(error.code)")
                    replays += 1
                }
            }
        }
        #expect(replays > 2_000)
        // Every entry not expired at the latest time is held; none that expired before the clock's last moves.
        #expect(guardian.count >= model.values.filter { $0 > latest }.count)
        #expect(guardian.count <= model.values.filter { $0 > now - 3 }.count)
    }

    /// A replay repeats its token's expiry (SPEC §5 step 10): the same nonce under another expiry
    /// is another entry, and each is refused again until it expires.
    @Test func sameNonceUnderAnotherExpiryIsAnotherEntry() throws {
        let guardian = try InMemoryReplayGuard(capacity: 100, maxShare: 1)
        let nonce = Nonce.random()
        try guardian.record(keyID: Self.key, nonce: nonce, expires: 100, now: 0)
        try guardian.record(keyID: Self.key, nonce: nonce, expires: 160, now: 0)
        for expires: Int64 in [100, 160] {
            let error = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: nonce, expires: expires, now: 50) }
            #expect(error?.code == .replayed)
        }
        #expect(guardian.count == 2)
    }

    /// By default one shard per 65,536 nonces of capacity, from 1 to 16.
    @Test func defaultShardCountFollowsCapacity() {
        #expect(InMemoryReplayGuard.defaultShardCount(capacity: 1) == 1)
        #expect(InMemoryReplayGuard.defaultShardCount(capacity: 3 * 65_536 + 1) == 3)
        #expect(InMemoryReplayGuard.defaultShardCount(capacity: 6_000_000) == 16)
    }

    /// A second that outgrows its table gets another, larger one in its chain: every entry
    /// stays a replay, in whichever table it went, and a clock stepped back cannot bring back a
    /// dropped second's nonces.
    @Test func aSecondThatOutgrowsItsTableKeepsEveryEntry() throws {
        let guardian = try InMemoryReplayGuard(capacity: 100_000, maxShare: 1, shardCount: 1)
        let early = (0..<50).map { _ in Nonce.random() }
        for nonce in early { try guardian.record(keyID: Self.key, nonce: nonce, expires: 10, now: 0) }
        let nonces = (0..<30_000).map { _ in Nonce.random() }
        for nonce in nonces { try guardian.record(keyID: Self.key, nonce: nonce, expires: 1_000, now: 0) }
        #expect(guardian.allocations >= 5)  // 16, 64, ... slots: the chain grew while the second filled
        for nonce in nonces + nonces.prefix(100) {
            let error = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: nonce, expires: 1_000, now: 5) }
            #expect(error?.code == .replayed)
        }
        try guardian.record(keyID: Self.key, nonce: .random(), expires: 1_000, now: 20)  // drops the second 10
        #expect(guardian.count == nonces.count + 1)
        for nonce in early {  // back to 5, when these would count as live: refused, never taken again
            let error = #expect(throws: SignCoreError.self) { try guardian.record(keyID: Self.key, nonce: nonce, expires: 10, now: 5) }
            #expect(error?.code == .expired)
        }
    }

    /// A steady state of continuous expiry allocates no table: 60 simulated seconds
    /// of 20,000 records a second with 10-second tokens, after a warm-up of 20 s; each new second
    /// takes the tables of one just dropped, no full sweep runs, and memory stays about twice
    /// the live entries.
    @Test func steadyStateAllocatesNoTable() throws {
        let guardian = try InMemoryReplayGuard(capacity: 1_000_000, maxShare: 1, shardCount: 4)
        var allocationsAfterWarmUp = 0, scansAfterWarmUp = 0
        for second in 0..<80 {
            if second == 20 { (allocationsAfterWarmUp, scansAfterWarmUp) = (guardian.allocations, guardian.shards.scans) }
            for _ in 0..<20_000 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 1_000 + Int64(second) + 10, now: 1_000 + Int64(second)) }
        }
        #expect(guardian.allocations == allocationsAfterWarmUp)
        #expect(guardian.shards.scans == scansAfterWarmUp)
        let live = 200_000
        #expect(guardian.count == live)
        #expect(guardian.tableBytes <= 16 * 4 * live, "\(guardian.tableBytes) bytes of tables")
    }

    /// Nonces spread over many seconds of expiry (a key holder choosing its tokens' lifetimes)
    /// do not get a table sized for the busy second each: memory stays within a few times the
    /// entries (here within 6 times the busy second's, which grows by 60 %; sized from the peak, these 300 seconds
    /// took 300 tables of 80,000 slots: 425 MB).
    @Test func spreadExpiriesCostMemoryByEntriesNotBySecond() throws {
        let guardian = try InMemoryReplayGuard(capacity: 1_000_000, maxShare: 1, shardCount: 1)
        for _ in 0..<50_000 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 1_000, now: 0) }
        let busy = guardian.tableBytes
        for second in 1...300 {  // while the busy second goes on taking entries
            for _ in 0..<100 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 1_000, now: 0) }
            try guardian.record(keyID: Self.key, nonce: .random(), expires: 1_000 + Int64(second), now: 0)
        }
        #expect(guardian.count == 80_300)
        #expect(guardian.tableBytes <= 6 * busy, "\(guardian.tableBytes) bytes of tables, \(busy) for the busy second")
        // The busy rate goes on in a new second: its table is sized for it again once the spread ones expire.
        for _ in 0..<50_000 { try guardian.record(keyID: Self.key, nonce: .random(), expires: 2_000, now: 1_500) }
        #expect(guardian.count == 50_000)
    }

    /// After a lull, a falling rate gets smaller tables, and the pool releases the large ones.
    @Test func tablesFollowTheRateDown() throws {
        let guardian = try InMemoryReplayGuard(capacity: 1_000_000, maxShare: 1, shardCount: 1)
        for second in 0..<5 {
            for _ in 0..<50_000 { try guardian.record(keyID: Self.key, nonce: .random(), expires: Int64(second) + 3, now: Int64(second)) }
        }
        let busy = guardian.tableBytes
        for second in 5..<60 {
            for _ in 0..<10 { try guardian.record(keyID: Self.key, nonce: .random(), expires: Int64(second) + 3, now: Int64(second)) }
        }
        #expect(guardian.count == 30)
        #expect(guardian.tableBytes * 100 < busy, "\(guardian.tableBytes) bytes of tables, \(busy) when busy")
    }

    /// Keys come and go: 3 rounds of 3,000 keys with one nonce each, all expired before the next
    /// round. A key whose entries are gone gives its counting slot back, and the counts stay
    /// exact: afterwards a key is still refused exactly past its share.
    @Test func keyCountsFollowKeysThatComeAndGo() throws {
        let guardian = try InMemoryReplayGuard(capacity: 10_000, maxShare: 0.1, shardCount: 1)
        // A key that stays through the churn, its count kept while others leave around it.
        for _ in 0..<400 { try guardian.record(keyID: "last", nonce: .random(), expires: 1_000, now: 0) }
        for round in 0..<3 {
            let now = Int64(100 * round)
            for key in 0..<3_000 { try guardian.record(keyID: "r\(round)-\(key)", nonce: .random(), expires: now + 10, now: now) }
        }
        var accepted = 0
        while (try? guardian.record(keyID: "last", nonce: .random(), expires: 1_000, now: 500)) != nil { accepted += 1 }
        #expect(accepted == 600)  // its share is 0.1 of 10,000 in the one shard, 400 already held
        let error = #expect(throws: SignCoreError.self) { try guardian.record(keyID: "last", nonce: .random(), expires: 1_000, now: 500) }
        #expect(error?.code == .overloaded)
        try guardian.record(keyID: "other", nonce: .random(), expires: 1_000, now: 500)
    }

    /// The per-key counts against a dictionary: 200,000 random adds and removes over 2,000 tags
    /// (with tags sharing index chains), every count checked; slots of tags that reach zero are
    /// reused, so the slot numbers stay below the most tags ever held at once.
    @Test func keyCountsAgreeWithAModel() throws {
        var counts = KeyCounts()
        var model: [UInt64: Int] = [:], slots: [UInt64: Int] = [:], held: [(UInt64, Int)] = []
        var generator = SystemRandomNumberGenerator()
        let tags = (0..<2_000).map { UInt64($0 % 50) << 7 | UInt64($0) << 20 }  // 50 home places shared
        var mostAtOnce = 0
        for _ in 0..<200_000 {
            if held.isEmpty || Bool.random(using: &generator) {
                let tag = tags.randomElement(using: &generator)!
                let slot = try counts.add(tag)
                #expect(slots[tag] == nil || slots[tag] == slot)
                slots[tag] = slot
                model[tag, default: 0] += 1
                held.append((tag, slot))
            } else {
                let (tag, slot) = held.remove(at: Int.random(in: 0..<held.count, using: &generator))
                counts.remove(slot: slot)
                model[tag]! -= 1
                if model[tag] == 0 { model[tag] = nil; slots[tag] = nil }
            }
            mostAtOnce = max(mostAtOnce, model.count)
        }
        for tag in tags { #expect(counts.count(of: tag) == model[tag] ?? 0) }
        #expect(slots.values.allSatisfy { $0 >= 1 && $0 <= mostAtOnce })
    }

    @Test func shardedGuardIsThreadSafe() async throws {
        let guardian = try InMemoryReplayGuard(capacity: 100_000)
        let nonces = (0..<2000).map { _ in Nonce.random() }
        // Every nonce offered twice, concurrently: exactly one success each.
        let accepted = await withTaskGroup(of: Int.self) { group in
            for (index, nonce) in (nonces + nonces).enumerated() {
                group.addTask { (try? guardian.record(keyID: "k\(index % 7)", nonce: nonce, expires: 100, now: 0)) != nil ? 1 : 0 }
            }
            return await group.reduce(0, +)
        }
        // The same nonce under two different keys is two entries; under one key, one.
        let distinctPairs = Set((nonces + nonces).enumerated().map { "\($0.offset % 7) \($0.element)" }).count
        #expect(accepted == distinctPairs)
        #expect(guardian.count == distinctPairs)
    }
}
