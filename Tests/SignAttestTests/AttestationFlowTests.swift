import Testing
import SignCore
import SignAttest

/// The flow of ATTEST.md end to end in one process: issue, solve, redeem, check; and the
/// properties that make a copied or spliced artefact useless.
@Suite struct AttestationFlowTests {
    let server: AttestationKeys
    let client: SigningKey
    let thief: SigningKey
    let origin = "https://api.example.com"
    let now: UInt64 = 1_767_225_600_000

    init() throws {
        server = try AttestationKeys([SigningKey.hmac(secret: Array(repeating: 7, count: 32), id: "challenge-1"),
                                      SigningKey.generate(.ed25519, id: "token-1")])
        client = try SigningKey.generate(.ed25519)
        thief = try SigningKey.generate(.p256)
    }

    func attestor(store: any RedemptionStore = InMemoryRedemptionStore()) throws -> Attestor {
        try Attestor(keys: server, redemptions: store)
    }

    func challenge(_ attestor: Attestor, difficulty: Int = 12, count: Int = 4, minElapsed: Int = 0, key: SigningKey? = nil) throws -> Challenge {
        try attestor.challenge(ChallengePolicy(difficulty: difficulty, count: count, levels: .level(0), minElapsed: minElapsed),
                               keyThumbprint: AttestationScope.keyThumbprint(of: key ?? client), origin: origin, now: now)
    }

    @Test func issueSolveRedeemCheck() async throws {
        let attestor = try attestor()
        let challenge = try challenge(attestor)
        #expect(try Challenge(parsing: challenge.text) == challenge)
        let answer = try await ProofOfWorkSolver(workers: 2).solve(challenge)
        #expect(ProofOfWork.isValid(answer, for: challenge))
        let body = AttestRequest(challenge: challenge, answer: answer).body
        let token = try await attestor.redeem(body, keyThumbprint: AttestationScope.keyThumbprint(of: client), origin: origin, now: now + 10)
        #expect(token.levels == .level(0) && token.ttl == 900 && token.issuedAt == now + 10)
        let checked = try attestor.checkToken(token.text, keyThumbprint: AttestationScope.keyThumbprint(of: client),
                                              coveredHeaders: ["attest-token"], origin: origin, now: now + 20, required: .level(0))
        #expect(checked == token)
        let response = AttestResponse(token: token, now: now + 10)
        #expect(try AttestResponse(body: response.body) == response)
        #expect(response.now == 1_767_225_600)
    }

    @Test func aChallengeIsRedeemedOnceEvenConcurrently() async throws {
        let attestor = try attestor()
        let challenge = try challenge(attestor)
        let body = AttestRequest(challenge: challenge, answer: ProofOfWork.smallestAnswer(for: challenge)).body
        let thumbprint = AttestationScope.keyThumbprint(of: client)
        let outcomes = await withTaskGroup(of: SignCoreError.Code?.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    do throws(SignCoreError) {
                        _ = try await attestor.redeem(body, keyThumbprint: thumbprint, origin: origin, now: now + 1)
                        return nil
                    } catch { return error.code }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 1)
        #expect(outcomes.filter { $0 == SignCoreError.Code.challengeRedeemed }.count == 15)
    }

    @Test func aStolenTokenOrChallengeIsUselessWithAnotherKey() async throws {
        let attestor = try attestor()
        let challenge = try challenge(attestor)
        let body = AttestRequest(challenge: challenge, answer: ProofOfWork.smallestAnswer(for: challenge)).body
        await #expect(throws: SignCoreError.self) {
            _ = try await attestor.redeem(body, keyThumbprint: AttestationScope.keyThumbprint(of: thief), origin: origin, now: now)
        }
        let refused = await #expect(throws: SignCoreError.self) {
            _ = try await attestor.redeem(body, keyThumbprint: AttestationScope.keyThumbprint(of: thief), origin: origin, now: now)
        }
        #expect(refused?.code == .challengeKeyMismatch)
        let token = try await attestor.redeem(body, keyThumbprint: AttestationScope.keyThumbprint(of: client), origin: origin, now: now)
        let stolen = #expect(throws: SignCoreError.self) {
            try attestor.checkToken(token.text, keyThumbprint: AttestationScope.keyThumbprint(of: thief), coveredHeaders: ["attest-token"],
                                    origin: origin, now: now, required: .level(0))
        }
        #expect(stolen?.code == .attestationKeyMismatch)
        let moved = #expect(throws: SignCoreError.self) {
            try attestor.checkToken(token.text, keyThumbprint: AttestationScope.keyThumbprint(of: client), coveredHeaders: [],
                                    origin: origin, now: now, required: .level(0))
        }
        #expect(moved?.code == .headerNotCovered)
        let elsewhere = #expect(throws: SignCoreError.self) {
            try attestor.checkToken(token.text, keyThumbprint: AttestationScope.keyThumbprint(of: client), coveredHeaders: ["attest-token"],
                                    origin: "https://other.example.com", now: now, required: .level(0))
        }
        #expect(elsewhere?.code == .attestationScopeMismatch)
        let stronger = #expect(throws: SignCoreError.self) {
            try attestor.checkToken(token.text, keyThumbprint: AttestationScope.keyThumbprint(of: client), coveredHeaders: ["attest-token"],
                                    origin: origin, now: now, required: [.level(0), .level(1)])
        }
        #expect(stronger?.code == .attestationInsufficient)
        let late = #expect(throws: SignCoreError.self) {
            try attestor.checkToken(token.text, keyThumbprint: AttestationScope.keyThumbprint(of: client), coveredHeaders: ["attest-token"],
                                    origin: origin, now: token.expiresAt + 5000, required: .level(0))
        }
        #expect(late?.code == .attestationExpired)
    }

    @Test func everyAlteredByteOfAChallengeOrTokenIsRefused() async throws {
        let attestor = try attestor()
        let challenge = try challenge(attestor)
        let answer = ProofOfWork.smallestAnswer(for: challenge)
        let thumbprint = AttestationScope.keyThumbprint(of: client)
        for offset in challenge.bytes.indices {
            var bytes = challenge.bytes
            bytes[offset] ^= 0x01
            let body = Array("{\"challenge\":\"\(Base64URL.encode(bytes))\",\"answer\":\"\(Base64URL.encode(answer))\"}".utf8)
            let refused = await #expect(throws: SignCoreError.self) {
                _ = try await attestor.redeem(body, keyThumbprint: thumbprint, origin: origin, now: now)
            }
            #expect([.attestationMalformed, .challengeForged].contains(refused?.code), "byte \(offset)")
        }
        let token = try await attestor.redeem(AttestRequest(challenge: challenge, answer: answer).body, keyThumbprint: thumbprint,
                                              origin: origin, now: now)
        for offset in token.bytes.indices {
            var bytes = token.bytes
            bytes[offset] ^= 0x01
            let refused = #expect(throws: SignCoreError.self) {
                try attestor.checkToken(Base64URL.encode(bytes), keyThumbprint: thumbprint, coveredHeaders: ["attest-token"],
                                        origin: origin, now: now, required: .level(0))
            }
            #expect([.attestationMalformed, .attestationInvalid].contains(refused?.code), "byte \(offset)")
        }
    }

    @Test func aSpliceOfSubSolutionsIsAWrongAnswer() async throws {
        let attestor = try attestor()
        let challenge = try challenge(attestor, difficulty: 12, count: 2)
        let answer = ProofOfWork.smallestAnswer(for: challenge)
        let swapped = Array(answer[8...]) + Array(answer[..<8])
        let repeated = Array(answer[..<8]) + Array(answer[..<8])
        for candidate in [swapped, repeated] where candidate != answer {
            #expect(!ProofOfWork.isValid(candidate, for: challenge))
        }
        // The same answer under another challenge (another random) is wrong too.
        let other = try self.challenge(attestor, difficulty: 12, count: 2)
        #expect(!ProofOfWork.isValid(answer, for: other) || ProofOfWork.smallestAnswer(for: other) == answer)
    }

    @Test func theMinimumTimeIsTheServers() async throws {
        let attestor = try attestor()
        let challenge = try challenge(attestor, minElapsed: 2500)
        let body = AttestRequest(challenge: challenge, answer: ProofOfWork.smallestAnswer(for: challenge)).body
        let thumbprint = AttestationScope.keyThumbprint(of: client)
        let early = await #expect(throws: SignCoreError.self) {
            _ = try await attestor.redeem(body, keyThumbprint: thumbprint, origin: origin, now: now + 1000)
        }
        #expect(early?.code == .challengeTooEarly)
        #expect(challenge.secondsUntilRedeemable(now: now + 1000) == 2)
        #expect(challenge.secondsUntilRedeemable(now: now + 1500) == 1)
        _ = try await attestor.redeem(body, keyThumbprint: thumbprint, origin: origin, now: now + 2500)
    }

    @Test func theSolverGivesUpWithItsOwnError() async throws {
        let attestor = try attestor()
        // d = 26, k = 16: about a billion hashes, far beyond 50 ms.
        let challenge = try attestor.challenge(ChallengePolicy(difficulty: 26, count: 16, levels: .level(0)),
                                               keyThumbprint: AttestationScope.keyThumbprint(of: client), origin: origin, now: now)
        let timedOut = await #expect(throws: SignCoreError.self) {
            _ = try await ProofOfWorkSolver(workers: 2, timeLimit: .milliseconds(50)).solve(challenge)
        }
        #expect(timedOut?.code == .challengeAbandoned)
        let task = Task { try await ProofOfWorkSolver(workers: 1).solve(challenge) }
        try await Task.sleep(for: .milliseconds(20))
        task.cancel()
        let cancelled = await #expect(throws: SignCoreError.self) { _ = try await task.value }
        #expect(cancelled?.code == .challengeAbandoned)
    }

    @Test func theParallelSolverFindsValidAnswers() async throws {
        let attestor = try attestor()
        for (workers, count) in [(1, 1), (2, 1), (2, 3), (3, 8)] {
            let challenge = try challenge(attestor, difficulty: 14, count: count)
            let answer = try await ProofOfWorkSolver(workers: workers, chunk: 1 << 10).solve(challenge)
            #expect(ProofOfWork.isValid(answer, for: challenge), "\(workers) workers, k \(count)")
        }
    }

    @Test func configurationOutOfRangeIsRefused() throws {
        #expect(throws: SignCoreError.self) { try ChallengePolicy(difficulty: 11, levels: .level(0)) }
        #expect(throws: SignCoreError.self) { try ChallengePolicy(difficulty: 27, levels: .level(0)) }
        #expect(throws: SignCoreError.self) { try ChallengePolicy(levels: []) }
        #expect(throws: SignCoreError.self) { try ChallengePolicy(levels: .level(0), ttl: 10, minElapsed: 10_000) }
        #expect(throws: SignCoreError.self) { try Attestor(keys: server, redemptions: InMemoryRedemptionStore(), skew: 60_001) }
        #expect(throws: SignCoreError.self) { try Attestor(keys: server, redemptions: InMemoryRedemptionStore(), tokenTTL: 86_401) }
        // A set of one kind checks, and cannot issue the other kind.
        let tokensOnly = try Attestor(keys: AttestationKeys([SigningKey.generate(.ed25519)]), redemptions: InMemoryRedemptionStore())
        let noChallenges = #expect(throws: SignCoreError.self) {
            try tokensOnly.challenge(ChallengePolicy(levels: .level(0)), keyThumbprint: Array(repeating: 0, count: 32), origin: origin, now: now)
        }
        #expect(noChallenges?.code == .invalidConfiguration)
        #expect(throws: SignCoreError.self) { try AttestationKeys([SigningKey.hmac(secret: Array(repeating: 1, count: 32))]).issuingTokenKey() }
        let same = try SigningKey.generate(.ed25519, id: "same")
        #expect(throws: SignCoreError.self) { try AttestationKeys([same, SigningKey.hmac(secret: Array(repeating: 1, count: 32), id: "same")]) }
    }

    @Test func theRedemptionStoreIsBounded() async throws {
        let store = InMemoryRedemptionStore(capacity: 2)
        let ids = (0..<3).map { SHA256Hasher.hash([UInt8($0)]) }
        #expect(try await store.redeem(ids[0], expiresAt: 100, now: 0))
        #expect(try await store.redeem(ids[1], expiresAt: 200, now: 0))
        #expect(try await !store.redeem(ids[0], expiresAt: 100, now: 50))
        let full = await #expect(throws: SignCoreError.self) { _ = try await store.redeem(ids[2], expiresAt: 300, now: 50) }
        #expect(full?.code == .overloaded)
        // Once the first has expired, it is swept and the third fits.
        #expect(try await store.redeem(ids[2], expiresAt: 300, now: 150))
    }

    @Test func codesHaveTheirStatusAndAdvice() {
        let table: [(SignCoreError.Code, Int, String, Int)] = [
            (.attestationRequired, 80, "attest", 428), (.attestationMalformed, 81, "fixRequest", 400), (.challengeForged, 82, "fixRequest", 403),
            (.challengeExpired, 83, "attest", 428), (.challengeTooEarly, 84, "attest", 428), (.challengeScopeMismatch, 85, "fixRequest", 403),
            (.challengeKeyMismatch, 86, "fixRequest", 403), (.wrongAnswer, 87, "fixRequest", 403), (.challengeRedeemed, 88, "fixRequest", 409),
            (.attestationExpired, 89, "attest", 428), (.attestationInvalid, 90, "attest", 428), (.attestationScopeMismatch, 91, "fixRequest", 403),
            (.attestationKeyMismatch, 92, "fixRequest", 403), (.attestationInsufficient, 93, "attest", 428),
            (.challengeAbandoned, 94, "retryLater", 428),
        ]
        #expect(table.map(\.0) == SignCoreError.Code.attestationCodes)
        for (code, number, advice, status) in table {
            #expect(code.rawValue == number && code.advice.rawValue == advice && code.status == status, "\(code)")
        }
        #expect(SignCoreError.Advice.attest.isRetryable)
    }
}
