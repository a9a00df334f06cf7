import HTTPTypes
import SignAttest
import SignCore
import SignHTTP

/// The rate limits' rows (docs/ATTEST.md §10): what counting a request costs beside its
/// verification, the middleware's whole step (an address limit before the signature, a key
/// limit after, the decision and its `RateLimit` fields), and the limiter alone over many clients.
enum RateLimitBench {
    static func cases() throws -> [BenchCase] {
        let get = RequestFixture.all[0]
        let key = try SigningKey.hmac(secret: pattern(32), id: "k1")
        // Limits that never fire at the bench's rate: the cost of counting, not of refusing.
        let byAddress = try RateLimit(bucket: "ALL", quota: 1_000_000, window: 1, key: .address)
        let byKey = try RateLimit(bucket: "KEY", quota: 1_000_000, window: 1, key: .key)
        return [
            BenchCase(operation: "verify HS256 GET, 2 rate limits", size: get.size, target: nil, floorNote: "verify alone") {
                let replayGuard = try AlgorithmFixture.replayGuard()
                let limited = try Catalogue.keySetSide([key], get, replayGuard), plain = try Catalogue.keySetSide([key], get, replayGuard)
                try AlgorithmFixture.warmUp([limited, plain])
                return (try counted(limited, [byAddress, byKey]), try counted(plain, []))
            },
            BenchCase(operation: "rate limiter, 10,000 clients", size: "1 take", target: nil) { (take(byAddress, clients: 10_000), nil) },
        ]
    }

    /// Verifies each request (its identity in the HTTP layer's form), then counts it as
    /// `SignatureMiddleware` does: the address limits, the key limits, the decision (through,
    /// with its fields). With no limit, the floor: what the middleware does without limits.
    static func counted(_ side: AlgorithmFixture.Side, _ limits: [RateLimit]) throws -> Timed {
        let gate = try RateLimitGate()
        let head = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/items")
        return { iterations in
            let batch = (try? side.requests(iterations)) ?? []
            precondition(batch.count == iterations, "a token could not be signed")
            return await parallel(workers: 1) { _ in
                for index in batch.indices {
                    var count = RateLimitGate.Count()
                    if limits.isEmpty {
                        do throws(SignCoreError) { _ = try await side.verifier.verify(batch[index]).identity } catch { fatalError("verify failed: \(error)") }
                        continue
                    }
                    gate.countBeforeVerification(limits, address: "198.51.100.7", into: &count)
                    let identity: VerifiedIdentity
                    do throws(SignCoreError) { identity = try await side.verifier.verify(batch[index]).identity } catch { fatalError("verify failed: \(error)") }
                    gate.countAfterVerification(limits, identity: identity, address: "198.51.100.7", into: &count)
                    guard case .pass = await gate.decide(head, count: count, identity: identity, address: "198.51.100.7", origin: { "https://api.example.com" }) else {
                        fatalError("a limit fired")
                    }
                }
            }
        }
    }

    /// `RateLimiter.take` over `clients` clients in turn.
    static func take(_ limit: RateLimit, clients: Int) -> Timed {
        let limiter = RateLimiter()
        let names = (0..<clients).map { "a:198.51.\($0 >> 8).\($0 & 0xFF)" }
        return { iterations in
            await parallel(workers: 1) { _ in
                for index in 0..<iterations { precondition(limiter.take(limit, client: names[index % clients]).allowed) }
            }
        }
    }
}
