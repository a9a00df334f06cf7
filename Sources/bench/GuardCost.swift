import Dispatch
import SignCore

/// What the replay guard adds to an HS256 GET verify, by how many nonces it holds (issue 11 §3:
/// why the guard-on verify stays under its target). In a steady state of `rate` tokens per
/// simulated second living `lifetime` seconds, batches of fresh requests are each checked
/// without the guard (`Verifier.check`) and verified with it (`verifySynchronously`), in
/// alternating order so that neither pass always finds the requests in cache; the guard's cost
/// is the difference of the two passes' times over the same requests.
///
/// The table holds rate × lifetime nonces; its slot for a fresh nonce is random, so once the
/// table is far beyond the caches a record waits on memory however early its slot is
/// prefetched. The smaller populations show what a record costs when its table fits in cache
/// (`rate` × 1 s is what one second of expiries holds at that rate). With 8 shards instead of
/// the default (one per 16,384 nonces of capacity, at most 256) the same nonces lie in tables
/// of several MiB, which come in huge pages (`sc_pages_zeroed`), so a record's slot costs one
/// cache miss but rarely a page walk.
struct GuardCost: Codable {
    var rate: Int
    var lifetime: Int
    /// The guard's shards: nil for the default count.
    var shards: Int?
    var held: Int
    var tableMB: Double
    /// Nanoseconds per request: checked without the guard, verified with it, and the difference.
    var check: Double, verify: Double, guardShare: Double

    /// The populations measured (rate, lifetime, shards): in cache, one second of the bench's
    /// verify rate, the WAF scale of issue 11 §5, and what the `verify HS256 GET` row's table
    /// holds in a full run; the last two also in 8 shards.
    static let populations: [(Int, Int, Int?)] = [(200_000, 1, nil), (1_500_000, 1, nil), (1_500_000, 1, 8),
                                                  (100_000, 60, nil), (1_500_000, 10, nil), (1_500_000, 10, 8)]

    static func run(rate: Int, lifetime: Int, shards: Int?, measuredSeconds: Int = 3) throws -> GuardCost {
        let clock = SimulatedClock(1_790_000_000)
        let key = try SigningKey.hmac(secret: pattern(32))
        let signer = try Signer(key: key, lifetime: Int64(lifetime), clock: clock.seconds)
        let guardian = try InMemoryReplayGuard(capacity: rate * lifetime * 5 / 4, maxShare: 1, shardCount: shards)
        let verifier = try Verifier(keys: try KeySet([key.publicOnly()]), replayGuard: guardian, maxLifetime: Int64(lifetime),
                                    clock: clock.seconds)
        let url = RequestFixture.getURL
        let warmUp = lifetime + 2  // past the first expiries: the sweep is deleting as it goes
        var checkNanoseconds = 0.0, verifyNanoseconds = 0.0, measured = 0
        var checkFirst = false
        for second in 0..<(warmUp + measuredSeconds) {
            var done = 0
            while done < rate {
                let count = min(20_000, rate - done)
                let requests = try (0..<count).map { _ in
                    let headers = try signer.sign(method: .get, url: url)
                    return ReceivedRequest(method: "GET", url: String(decoding: Array(url.utf8), as: UTF8.self),
                                           whash: headers.whash, wtoken: headers.wtoken)
                }
                done += count
                guard second >= warmUp else {
                    for index in requests.indices { _ = try verifier.verifySynchronously(requests[index]) }
                    continue
                }
                checkFirst.toggle()
                let checking = {
                    try Self.nanoseconds { for index in requests.indices { _ = try verifier.check(requests[index]) } }
                }
                if checkFirst { checkNanoseconds += try checking() }
                verifyNanoseconds += try Self.nanoseconds {
                    for index in requests.indices { _ = try verifier.verifySynchronously(requests[index]) }
                }
                if !checkFirst { checkNanoseconds += try checking() }
                measured += count
            }
            clock.advance()
        }
        let n = Double(measured)
        return GuardCost(rate: rate, lifetime: lifetime, shards: shards, held: guardian.count, tableMB: Double(guardian.tableBytes) / 1e6,
                         check: checkNanoseconds / n, verify: verifyNanoseconds / n,
                         guardShare: (verifyNanoseconds - checkNanoseconds) / n)
    }

    private static func nanoseconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start)
    }

    var line: String {
        "\(format(Double(rate)))/s × \(lifetime) s\(shards.map { ", \($0) shards" } ?? ""): \(format(Double(held))) nonces held, tables \(String(format: "%.0f", tableMB)) MB; "
            + "per request: check \(String(format: "%.0f", check)) ns, verify \(String(format: "%.0f", verify)) ns, "
            + "guard \(String(format: "%.0f", guardShare)) ns"
    }
}
