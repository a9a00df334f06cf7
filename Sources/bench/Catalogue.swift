import CBench
import SignCore

/// One row of the table: how to build the operation and its floor, and the target ratio.
struct BenchCase {
    var operation: String
    var size: String
    /// Least acceptable ratio to the floor (issue 3), if the operation has one.
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
                        ? (try sign(algorithm, get, workers: 2), try sign(algorithm, get, workers: 1))
                        : (try verify(algorithm, get, workers: 2), try verify(algorithm, get, workers: 1))
                })
            }
        }
        return cases
    }

    /// Issue 3's targets, with issue 11's 0.45 for an HS256 GET verify.
    static func target(verb: String, algorithm: String, request: RequestFixture) -> Double? {
        if request.size == "1 MiB" { return 0.95 }
        if algorithm == "HS256" { return request.name == "GET" ? (verb == "sign" ? 0.5 : 0.45) : nil }
        return 0.9
    }

    static func allocationCases(iterations: Int) throws -> [AllocationCase] {
        var cases: [AllocationCase] = []
        for algorithm in try SignatureAlgorithm.allCases.map({ try AlgorithmFixture($0) }) {
            for request in RequestFixture.all {
                let limit: Double? = algorithm.name == "HS256" && request.name == "GET" ? 4 : nil
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

    /// `Signer.sign` of the request, spread over `workers` concurrent tasks.
    static func sign(_ algorithm: AlgorithmFixture, _ request: RequestFixture, workers: Int) throws -> Timed {
        let signer = try algorithm.signer()
        return { iterations in
            await parallel(workers: workers) { _ in
                var failure: SignCoreError?
                for _ in 0..<(iterations / workers) {
                    do throws(SignCoreError) { _ = try signer.sign(method: request.method, url: request.url, body: request.body) } catch { failure = error }
                }
                if let failure { fatalError("sign failed: \(failure)") }
            }
        }
    }

    /// `Verifier.verify` (replay guard on) of freshly signed requests, spread over `workers`
    /// concurrent tasks; the signing happens before the clock starts.
    static func verify(_ algorithm: AlgorithmFixture, _ request: RequestFixture, workers: Int) throws -> Timed {
        let signer = try algorithm.signer()
        let verifier = algorithm.verifier
        return { iterations in
            let batches = (0..<workers).map { _ in (try? signedRequests(signer, request, count: iterations / workers)) ?? [] }
            return await parallel(workers: workers) { worker in
                var failure: SignCoreError?
                let batch = batches[worker]
                for index in batch.indices {  // each request lent to verify, not copied out first
                    do throws(SignCoreError) { _ = try await verifier.verify(batch[index]) } catch { failure = error }
                }
                if let failure { fatalError("verify failed: \(failure)") }
                precondition(batches[worker].count == iterations / workers, "a token could not be signed")
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
