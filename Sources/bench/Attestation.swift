import CBench
import SignAttest
import SignCore

/// The attestation flow's rows (docs/ATTEST.md): the proof-of-work solver against raw
/// single-block SHA-256 and on two cores against one, the solution and token checks against
/// their crypto floors, issuing a challenge, and the solve-time table.
enum AttestationBench {
    static let origin = "https://api.example.com"
    static let hmacSecret = [UInt8](repeating: 0x5c, count: 32)

    static func cases() throws -> [BenchCase] {
        let keys = try AttestationKeys([SigningKey.hmac(secret: hmacSecret, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")])
        let attestor = try Attestor(keys: keys, redemptions: InMemoryRedemptionStore())
        let client = try SigningKey.generate(.ed25519)
        let thumbprint = AttestationScope.keyThumbprint(of: client)
        let now = UInt64(SystemClock.milliseconds())
        let policy = try ChallengePolicy(difficulty: 18, count: 4, levels: .level(0))
        let challenge = try attestor.challenge(policy, keyThumbprint: thumbprint, origin: origin, now: now)
        let answer = ProofOfWork.smallestAnswer(for: challenge)
        let token = try AttestationToken(levels: .level(0), issuedAt: now, ttl: 900, keyThumbprint: thumbprint,
                                         originDigest: AttestationScope.originDigest(origin), key: try keys.issuingTokenKey())
        return [
            BenchCase(operation: "proof of work hashes", size: "41 B", target: 0.9) { (search(workers: 1), singleBlockSHA256()) },
            BenchCase(operation: "proof of work hashes, 2 threads", size: "41 B", target: 1.8, floorNote: "1 thread") {
                (search(workers: 2), search(workers: 1, onPool: true))
            },
            BenchCase(operation: "proof of work check d18 k4", size: "\(challenge.bytes.count) B", target: 0.5) {
                (checkSolution(challenge, answer), solutionFloor(challenge))
            },
            BenchCase(operation: "attestation token check EdDSA", size: "\(token.bytes.count) B", target: 0.5) {
                (checkToken(attestor, token, thumbprint), try tokenFloor(token, try keys.issuingTokenKey()))
            },
            BenchCase(operation: "challenge issue", size: "\(challenge.bytes.count) B", target: nil) {
                (issue(attestor, policy, thumbprint), try issueFloor(challenge, try keys.issuingChallengeKey()))
            },
        ]
    }

    /// `iterations` tries of the solver's inner loop (d = 32, so it runs through), spread over
    /// `workers` threads, each on a head of its own.
    static func search(workers: Int, onPool: Bool = false) -> Timed {
        { iterations in
            await parallel(workers: workers, onPool: onPool) { worker in
                let head = [UInt8](repeating: UInt8(worker), count: 33)
                var start: UInt64 = 0
                let end = UInt64(iterations / workers)
                while start < end {
                    let found = SHA256CounterSearch.firstCounter(head: head, in: start..<end, leadingZeroBits: 32)
                    start = found.map { $0 + 1 } ?? end
                }
            }
        }
    }

    /// Raw single-block SHA-256 of 41 bytes (the bench's `bench_sha256`), the counter changed
    /// every time as the solver changes it.
    static func singleBlockSHA256() -> Timed {
        { iterations in
            var input = [UInt8](repeating: 0, count: 41)
            return input.withUnsafeMutableBytes { bytes in
                withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { out in
                    var counter: UInt64 = 0
                    return time(iterations) {
                        counter &+= 1
                        bytes.storeBytes(of: counter.bigEndian, toByteOffset: 33, as: UInt64.self)
                        bench_sha256(bytes.baseAddress, 41, out.baseAddress)
                    }
                }
            }
        }
    }

    static func checkSolution(_ challenge: Challenge, _ answer: [UInt8]) -> Timed {
        { iterations in
            var failures = 0
            let seconds = time(iterations) { if !ProofOfWork.isValid(answer, for: challenge) { failures += 1 } }
            precondition(failures == 0, "the solution check failed")
            return seconds
        }
    }

    /// The hashes a check cannot avoid: the prefix over the challenge, and k single blocks.
    static func solutionFloor(_ challenge: Challenge) -> Timed {
        let prefixed = Array("SignCore/3 pow\n".utf8) + challenge.bytes
        return { iterations in
            var block = [UInt8](repeating: 0, count: 41)
            return prefixed.withUnsafeBytes { prefixed in
                block.withUnsafeMutableBytes { block in
                    withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { out in
                        time(iterations) {
                            bench_sha256(prefixed.baseAddress, prefixed.count, out.baseAddress)
                            for index in 0..<challenge.count {
                                block[32] = UInt8(index)
                                bench_sha256(block.baseAddress, 41, out.baseAddress)
                            }
                        }
                    }
                }
            }
        }
    }

    static func checkToken(_ attestor: Attestor, _ token: AttestationToken, _ thumbprint: [UInt8]) -> Timed {
        let text = token.text
        return { iterations in
            var failures = 0
            let now = token.issuedAt + 1000
            let seconds = time(iterations) {
                if (try? attestor.checkToken(text, keyThumbprint: thumbprint, coveredHeaders: ["attest-token"], origin: origin, now: now,
                                             required: .level(0))) == nil { failures += 1 }
            }
            precondition(failures == 0, "the token check failed")
            return seconds
        }
    }

    /// Ed25519 verify of the token's SPEC §10 signing input, after SHA-256 of the origin.
    static func tokenFloor(_ token: AttestationToken, _ key: SigningKey) throws -> Timed {
        let input = try key.messageSigningInput(Array(token.body), context: AttestationToken.signatureContext)
        let signature = Array(token.signature), origin = Array(origin.utf8), publicKey = key.publicKey
        return { iterations in
            var failures = 0
            let seconds = publicKey.withUnsafeBytes { p in
                origin.withUnsafeBytes { o in
                    input.withUnsafeBytes { i in
                        signature.withUnsafeBytes { s in
                            time(iterations) {
                                if bench_floor_verify_ed25519(p.baseAddress, o.baseAddress, o.count, i.baseAddress, i.count, s.baseAddress) != 0 {
                                    failures += 1
                                }
                            }
                        }
                    }
                }
            }
            precondition(failures == 0, "the floor does not accept the token's signature")
            return seconds
        }
    }

    static func issue(_ attestor: Attestor, _ policy: ChallengePolicy, _ thumbprint: [UInt8]) -> Timed {
        { iterations in
            let now = UInt64(SystemClock.milliseconds())
            return time(iterations) { _ = try? attestor.challenge(policy, keyThumbprint: thumbprint, origin: origin, now: now) }
        }
    }

    /// HMAC-SHA256 of the challenge's SPEC §10 signing input, after SHA-256 of the origin.
    static func issueFloor(_ challenge: Challenge, _ key: SigningKey) throws -> Timed {
        let input = try key.messageSigningInput(Array(challenge.body), context: Challenge.tagContext)
        let origin = Array(origin.utf8)
        return { iterations in
            guard let prepared = hmacSecret.withUnsafeBytes({ bench_hmac_key_new($0.baseAddress, $0.count, nil, 0) }) else { return 0 }
            defer { bench_hmac_key_free(prepared) }
            return origin.withUnsafeBytes { o in
                input.withUnsafeBytes { i in
                    withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { out in
                        time(iterations) { _ = bench_floor_sign_hmac(prepared, o.baseAddress, o.count, i.baseAddress, i.count, out.baseAddress) }
                    }
                }
            }
        }
    }

    /// Solve times of the real solver on every core, by difficulty and sub-solutions.
    struct SolveRow: Codable {
        var difficulty: Int
        var count: Int
        var samples: Int
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var meanMilliseconds: Double

        var line: String {
            Row.pad("d \(difficulty), k \(count)", 16) + Row.pad("\(samples)", 9) + Row.pad(String(format: "%.1f", p50Milliseconds), 11)
                + Row.pad(String(format: "%.1f", p99Milliseconds), 11) + String(format: "%.1f", meanMilliseconds)
        }
        static let header = Row.pad("challenge", 16) + Row.pad("samples", 9) + Row.pad("p50 ms", 11) + Row.pad("p99 ms", 11) + "mean ms"
    }

    static func solveTable(quick: Bool) async throws -> [SolveRow] {
        let keys = try AttestationKeys([SigningKey.hmac(secret: hmacSecret, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")])
        let attestor = try Attestor(keys: keys, redemptions: InMemoryRedemptionStore())
        let thumbprint = AttestationScope.keyThumbprint(of: try SigningKey.generate(.ed25519))
        let solver = ProofOfWorkSolver(timeLimit: .seconds(120))
        var rows: [SolveRow] = []
        for difficulty in quick ? [12, 14] : [12, 14, 16, 18, 20] {
            for count in [1, 4, 8] {
                let policy = try ChallengePolicy(difficulty: difficulty, count: count, levels: .level(0))
                let samples = quick ? 11 : (difficulty >= 20 ? 41 : 101)
                var times: [Double] = []
                for _ in 0..<samples {
                    let challenge = try attestor.challenge(policy, keyThumbprint: thumbprint, origin: origin, now: UInt64(SystemClock.milliseconds()))
                    let start = now()
                    _ = try await solver.solve(challenge)
                    times.append((now() - start) * 1000)
                }
                times.sort()
                let p99 = times[min(times.count - 1, Int((Double(times.count) * 0.99).rounded(.up)) - 1)]
                rows.append(SolveRow(difficulty: difficulty, count: count, samples: samples, p50Milliseconds: times[times.count / 2],
                                     p99Milliseconds: p99, meanMilliseconds: times.reduce(0, +) / Double(times.count)))
                print(rows[rows.count - 1].line)
            }
        }
        return rows
    }
}
