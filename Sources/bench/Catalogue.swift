import CBench
import SignCore

/// One row of the table: how to build the operation and its floor, and the target ratio.
struct BenchCase {
    var operation: String
    var size: String
    /// Least acceptable ratio to the floor (docs/PERFORMANCE.md, Targets), if the operation has one.
    var target: Double?
    /// What the floor column holds, when it is not the raw crypto work.
    var floorNote: String?
    var make: () throws -> (Timed, Timed?)
}

/// One allocation count.
struct AllocationCase {
    var operation: String
    var size: String
    var limit: Double?
    var count: () async -> Double
}

/// Every operation the bench measures.
enum Catalogue {
    static let whashSizes: [(String, Int, Double?)] = [
        ("64 B", 64, nil), ("1 KiB", 1 << 10, nil), ("64 KiB", 1 << 16, nil), ("1 MiB", 1 << 20, 0.97), ("16 MiB", 1 << 24, 0.97),
    ]

    static func cases() throws -> [BenchCase] {
        var cases: [BenchCase] = []
        for (size, count, target) in whashSizes {
            cases.append(BenchCase(operation: "whash", size: size, target: target) {
                let body = pattern(count)
                return (whash(body), sha256(body))
            })
        }
        for (name, url) in [("canonicalize plain", RequestFixture.getURL), ("canonicalize hostile", hostileURL)] {
            cases.append(BenchCase(operation: name, size: "\(url.utf8.count) B", target: nil) { (canonicalize(url), nil) })
        }
        let algorithms = try SignatureAlgorithm.allCases.map { try AlgorithmFixture($0) }
        for verb in ["sign", "verify"] {
            for algorithm in algorithms {
                for request in RequestFixture.all {
                    cases.append(BenchCase(operation: "\(verb) \(algorithm.name) \(request.name)", size: request.size,
                                         target: target(verb: verb, algorithm: algorithm.name, request: request)) {
                        verb == "sign"
                            ? (try sign(algorithm, request, workers: 1), try algorithm.floorSign(request))
                            : (try verify(algorithm, request, workers: 1), try algorithm.floorVerify(request))
                    })
                }
            }
        }
        let get = RequestFixture.all[0]
        for verb in ["sign", "verify"] {
            for algorithm in algorithms where algorithm.name != "ES256" {
                cases.append(BenchCase(operation: "\(verb) \(algorithm.name) GET, 2 threads", size: get.size, target: 1.8,
                                     floorNote: "1 thread") {
                    verb == "sign"
                        ? (try sign(algorithm, get, workers: 2), try sign(algorithm, get, workers: 1, onPool: true))
                        : (try verify(algorithm, get, workers: 2), try verify(algorithm, get, workers: 1, onPool: true))
                })
            }
        }
        // The replay guard's share of a verify: in a server's steady state its table holds a
        // token lifetime of nonces (here about 10 s × the verify rate), far beyond the caches.
        if let hmac = algorithms.first(where: { $0.name == "HS256" }) {
            cases.append(BenchCase(operation: "verify HS256 GET, no guard", size: get.size, target: nil) {
                (try verify(hmac, get, workers: 1, guardOff: true), try hmac.floorVerify(get))
            })
        }
        cases += try urlMixCases() + manyKeyCases() + attackCases() + AttestationBench.cases() + RateLimitBench.cases() + HTTPSignatureBench.cases()
        return cases
    }

    /// Realistic URLs: 10,000 distinct URLs of the bench's GET's shape, a third with lower-case
    /// escapes, a third with '+' in the query, all with their pairs out of order, against the
    /// one URL of the fast-path rows (at least 0.85 of it).
    static let mixedURLs: [String] = (0..<10_000).map { i in
        let q = ["caf%c3%a9", "caf%C3%A9+x", "red+shoes"][i % 3]
        return "https://api.example.com/v1/orders?id=\(i)&sort=desc&q=\(q)"
    }

    static func urlMixCases() throws -> [BenchCase] {
        let hmac = try AlgorithmFixture(.hmacSHA256)
        let get = RequestFixture.all[0]
        let mix = RequestFixture(name: "GET", size: "10k URLs", method: .get, url: "", body: [])
        return [
            BenchCase(operation: "sign HS256 GET, URL mix", size: mix.size, target: 0.85, floorNote: "one URL") {
                let signer = try hmac.signer()
                let timed: Timed = { iterations in
                    await parallel(workers: 1) { _ in
                        for index in 0..<iterations {
                            do throws(SignCoreError) {
                                _ = try signer.sign(method: .get, url: mixedURLs[index % mixedURLs.count])
                            } catch { fatalError("sign failed: \(error)") }
                        }
                    }
                }
                return (timed, try sign(hmac, get, workers: 1))
            },
            BenchCase(operation: "verify HS256 GET, URL mix", size: mix.size, target: 0.85, floorNote: "one URL") {
                let signer = try hmac.signer()
                let timed: Timed = { iterations in
                    let batch: [ReceivedRequest] = (try? (0..<iterations).map { index in
                        var request = get
                        request.url = mixedURLs[index % mixedURLs.count]
                        return try signedRequests(signer, request, count: 1)[0]
                    }) ?? []
                    precondition(batch.count == iterations, "a token could not be signed")
                    return await parallel(workers: 1) { _ in
                        for index in batch.indices {
                            do throws(SignCoreError) { _ = try await hmac.verifier.verify(batch[index]) } catch { fatalError("verify failed: \(error)") }
                        }
                    }
                }
                return (timed, try verify(hmac, get, workers: 1))
            },
        ]
    }

    /// Many keys: a 1000-key set with short ids against one key with a short id (the
    /// per-key precomputation must hold for every key: at most 5 % slower), and a sign with a
    /// short id against its tight floor.
    static func manyKeyCases() throws -> [BenchCase] {
        let secrets = (0..<1000).map { i in pattern(32).map { $0 ^ UInt8(i & 0xFF) } + [UInt8(i >> 8)] }
        let keys = try secrets.indices.map { try SigningKey.hmac(secret: secrets[$0], id: "k\($0)") }
        let get = RequestFixture.all[0]
        let shortID = try AlgorithmFixture(.hmacSHA256, id: "k1")
        return [
            BenchCase(operation: "sign HS256 GET, short key id", size: get.size, target: nil) {
                (try sign(shortID, get, workers: 1), try shortID.floorSign(get))
            },
            BenchCase(operation: "verify HS256 GET, 1000 keys", size: get.size, target: 0.95, floorNote: "1 key") {
                // One replay guard for both sides, as a server has: the row compares the key
                // sets, not two guards each at its own moment of filling and dropping.
                let replayGuard = try AlgorithmFixture.replayGuard()
                let many = try keySetSide(keys, get, replayGuard), one = try keySetSide([keys[1]], get, replayGuard)
                try AlgorithmFixture.warmUp([many, one])  // in its steady state, as the HMAC rows' guard
                return (verify(many), verify(one))
            },
        ]
    }

    /// Attacks: what refusing an attack costs, per refusal: forged HS256 and EdDSA tokens
    /// (a valid token with its signature altered: the whole check runs), replays of accepted
    /// tokens (the signature is checked before the guard), and tokens of an unknown key id.
    static func attackCases() throws -> [BenchCase] {
        let get = RequestFixture.all[0]
        var cases: [BenchCase] = []
        for algorithm in [SignatureAlgorithm.hmacSHA256, .ed25519] {
            let fixture = try AlgorithmFixture(algorithm)
            cases.append(BenchCase(operation: "refuse forged \(fixture.name) GET", size: get.size, target: nil) {
                let forged = try signedRequests(fixture.signer(), get, count: 1000).map { request in
                    var request = request
                    var token = Array(request.wtoken!.utf8)
                    token[token.count - 2] = token[token.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                    request.wtoken = String(decoding: token, as: UTF8.self)
                    return request
                }
                return (refusals(fixture.verifier, forged, .badSignature), nil)
            })
        }
        let hmac = try AlgorithmFixture(.hmacSHA256)
        cases.append(BenchCase(operation: "refuse replayed HS256 GET", size: get.size, target: nil) {
            let accepted = try signedRequests(hmac.signer(), get, count: 1000)
            for request in accepted { _ = try hmac.verifier.verifySynchronously(request) }
            return (refusals(hmac.verifier, accepted, .replayed), nil)
        })
        cases.append(BenchCase(operation: "refuse unknown key id", size: get.size, target: nil) {
            let stranger = try Signer(key: .generate(.hmacSHA256), lifetime: 10)
            return (refusals(hmac.verifier, try signedRequests(stranger, get, count: 1000), .unknownKey), nil)
        })
        return cases
    }

    /// The targets (docs/PERFORMANCE.md), 0.45 for an HS256 GET verify with the replay guard on.
    static func target(verb: String, algorithm: String, request: RequestFixture) -> Double? {
        if request.size == "1 MiB" { return 0.95 }
        if algorithm == "HS256" { return request.name == "GET" ? (verb == "sign" ? 0.5 : 0.45) : nil }
        return 0.9
    }

    static func allocationCases(iterations: Int) throws -> [AllocationCase] {
        var cases: [AllocationCase] = []
        for algorithm in try SignatureAlgorithm.allCases.map({ try AlgorithmFixture($0) }) {
            for request in RequestFixture.all {
                // The limit is the default backend's: swift-crypto's digests allocate a context per
                // copy (SHA-256 states are classes there), which the report shows without a limit.
                #if SwiftCryptoBackend
                let limit: Double? = nil
                #else
                let limit: Double? = algorithm.name == "HS256" && request.name == "GET" ? 4 : nil
                #endif
                let count = request.body.count > 4096 ? max(10, iterations / 20) : iterations
                let signer = try algorithm.signer()
                cases.append(AllocationCase(operation: "sign \(algorithm.name) \(request.name)", size: request.size, limit: limit) {
                    await allocationsPerCall(count) { _ = try? signer.sign(method: request.method, url: request.url, body: request.body) }
                })
                cases.append(AllocationCase(operation: "verify \(algorithm.name) \(request.name)", size: request.size, limit: limit) {
                    let requests = (try? signedRequests(signer, request, count: count + 1)) ?? []
                    var next = 0
                    var failures = 0
                    let perCall = await allocationsPerCall(count) {
                        do { _ = try await algorithm.verifier.verify(requests[next]) } catch { failures += 1 }
                        next += 1
                    }
                    precondition(failures == 0 && requests.count == count + 1, "verify failed while counting allocations")
                    return perCall
                })
            }
        }
        return cases
    }

    // MARK: Operations

    /// The incremental whash of `body`, fed in 64 KiB chunks as a server would.
    static func whash(_ body: [UInt8]) -> Timed {
        { iterations in
            body.withUnsafeBytes { bytes in
                time(iterations) {
                    var hasher = WHash.BodyHasher()
                    var offset = 0
                    repeat {
                        let end = min(offset + (1 << 16), bytes.count)
                        try? hasher.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                        offset = end
                    } while offset < bytes.count
                    _ = hasher.finalize()
                }
            }
        }
    }

    static func sha256(_ body: [UInt8]) -> Timed {
        { iterations in
            body.withUnsafeBytes { bytes in
                withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { out in
                    time(iterations) { bench_sha256(bytes.baseAddress, bytes.count, out.baseAddress) }
                }
            }
        }
    }

    /// The bench GET's URL canonicalised and hashed in C (`bench_control`) on `workers` threads:
    /// two against one says how much of a second core the machine gives right now (a control for
    /// the 2-thread rows, which no load average shows when a hypervisor runs another guest on
    /// the sibling of our vCPU). Branchy work like the engine's, not SHA-256 alone, which such
    /// contention slows far less.
    static func control(workers: Int) -> Timed {
        let url = Array(RequestFixture.getURL.utf8)
        return { iterations in
            await parallel(workers: workers, onPool: true) { _ in
                url.withUnsafeBytes { bytes in
                    withUnsafeTemporaryAllocation(byteCount: 4096 + 32, alignment: 16) { scratch in
                        guard let base = scratch.baseAddress else { return }
                        var failures = 0
                        for _ in 0..<(iterations / workers) {
                            failures += bench_control(bytes.baseAddress, bytes.count, base, base + 4096) == 0 ? 0 : 1
                        }
                        precondition(failures == 0, "the control's URL is not common")
                    }
                }
            }
        }
    }

    /// Canonicalisation into a reused buffer (the public `CanonicalURL.write`).
    static func canonicalize(_ url: String) -> Timed {
        let input = Array(url.utf8)
        return { iterations in
            var out = [UInt8]()
            out.reserveCapacity(3 * input.count + 8)
            var failures = 0
            let seconds = input.withUnsafeBytes { raw in
                time(iterations) {
                    out.removeAll(keepingCapacity: true)
                    do { try CanonicalURL.write(raw, into: &out) } catch { failures += 1 }
                }
            }
            precondition(failures == 0, "canonicalisation failed")
            return seconds
        }
    }

    /// `Signer.sign` of the request, spread over `workers` concurrent tasks (`onPool`: see
    /// `parallel`).
    static func sign(_ algorithm: AlgorithmFixture, _ request: RequestFixture, workers: Int, onPool: Bool = false) throws -> Timed {
        let signer = try algorithm.signer()
        return { iterations in
            await parallel(workers: workers, onPool: onPool) { _ in
                var failure: SignCoreError?
                for _ in 0..<(iterations / workers) {
                    do throws(SignCoreError) { _ = try signer.sign(method: request.method, url: request.url, body: request.body) } catch { failure = error }
                }
                if let failure { fatalError("sign failed: \(failure)") }
            }
        }
    }

    /// `Verifier.verify` (replay guard on) of freshly signed requests, spread over `workers`
    /// concurrent tasks; the signing happens before the clock starts. `guardOff` runs
    /// `Verifier.check` instead: every check but the replay guard, to show what the guard costs.
    static func verify(_ algorithm: AlgorithmFixture, _ request: RequestFixture, workers: Int, onPool: Bool = false,
                       guardOff: Bool = false) throws -> Timed {
        let signer = try algorithm.signer()
        let verifier = algorithm.verifier
        if !guardOff { try algorithm.warmUpGuard(request) }
        return { iterations in
            let batches = (0..<workers).map { _ in (try? signedRequests(signer, request, count: iterations / workers)) ?? [] }
            return await parallel(workers: workers, onPool: onPool) { worker in
                var failure: SignCoreError?
                let batch = batches[worker]
                for index in batch.indices {  // each request lent to verify, not copied out first
                    do throws(SignCoreError) {
                        _ = guardOff ? try verifier.check(batch[index]) : try await verifier.verify(batch[index])
                    } catch { failure = error }
                }
                if let failure { fatalError("verify failed: \(failure)") }
                precondition(batches[worker].count == iterations / workers, "a token could not be signed")
            }
        }
    }

    /// A verifier of `keys` (HMAC, short ids) recording in `replayGuard`, and fresh tokens
    /// spread over the keys.
    static func keySetSide(_ keys: [SigningKey], _ request: RequestFixture, _ replayGuard: InMemoryReplayGuard) throws -> AlgorithmFixture.Side {
        let signers = try keys.map { try Signer(key: $0, lifetime: 10) }
        let verifier = try Verifier(keys: try KeySet(keys.map { try $0.publicOnly() }), replayGuard: replayGuard)
        return (verifier, { count in
            try (0..<count).map { index in try signedRequests(signers[index % signers.count], request, count: 1)[0] }
        })
    }

    /// `Verifier.verify` of a side's fresh tokens, one thread.
    static func verify(_ side: AlgorithmFixture.Side) -> Timed {
        { iterations in
            let batch = (try? side.requests(iterations)) ?? []
            precondition(batch.count == iterations, "a token could not be signed")
            return await parallel(workers: 1) { _ in
                for index in batch.indices {
                    do throws(SignCoreError) { _ = try await side.verifier.verify(batch[index]) } catch { fatalError("verify failed: \(error)") }
                }
            }
        }
    }

    /// Verifies `requests` over and over, each refused with `expected`.
    static func refusals(_ verifier: Verifier, _ requests: [ReceivedRequest], _ expected: SignCoreError.Code) -> Timed {
        { iterations in
            await parallel(workers: 1) { _ in
                var wrong = 0
                for index in 0..<iterations {
                    do throws(SignCoreError) {
                        _ = try await verifier.verify(requests[index % requests.count])
                        wrong += 1
                    } catch {
                        if error.code != expected { wrong += 1 }
                    }
                }
                precondition(wrong == 0, "an attack was not refused with \(expected)")
            }
        }
    }

    /// `count` requests as a server receives them, each with its own fresh token and, as each
    /// request a server parses has, its own URL string (one string shared by every request
    /// would have its reference count passed between the verifying threads).
    static func signedRequests(_ signer: Signer, _ request: RequestFixture, count: Int) throws -> [ReceivedRequest] {
        try (0..<count).map { _ in
            let headers = try signer.sign(method: request.method, url: request.url, body: request.body)
            return ReceivedRequest(method: request.method.rawValue, url: String(decoding: Array(request.url.utf8), as: UTF8.self),
                                   body: .bytes(request.body), whash: headers.whash, wtoken: headers.wtoken)
        }
    }
}
