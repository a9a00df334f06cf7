import Dispatch
import SignCore

/// What the replay guard adds to an HS256 GET verify, by how many nonces it holds (
/// why the guard-on verify stays under its target). In a steady state of `rate` tokens per
/// simulated second living `lifetime` seconds, batches of fresh requests are each checked
/// without the guard (`Verifier.check`) and verified with it (`verifySynchronously`), in
/// alternating order so that neither pass always finds the requests in cache; the guard's cost
/// is the difference of the two passes' times over the same requests.
///
/// The guard holds rate × lifetime nonces, but a record looks only in the tables of its
/// token's second of expiry, about `rate` × 1 s of them (`NonceTable`): the cost should depend
/// on the rate, not on the lifetime. Rows of one rate and lifetimes of 1 s and 10 s (or 60)
/// show whether it does. (With one table for every live nonce, the guard cost 270-370 ns at 6
/// and 15 million nonces on this Zen 4, against 120-210 ns at 0.2 and 1.5 million.)
struct GuardCost: Codable {
    var rate: Int
    var lifetime: Int
    var held: Int
    var tableMB: Double
    /// Nanoseconds per request: checked without the guard, verified with it, and the difference.
    var check: Double, verify: Double, guardShare: Double

    /// The populations measured (rate, lifetime): the WAF scale (`GuardAtScale`) beside the same
    /// rate of 1 s tokens, and the `verify HS256 GET` row's rate and lifetime beside 1 s tokens.
    static let populations = [(100_000, 1), (100_000, 60), (1_500_000, 1), (1_500_000, 10)]

    static func run(rate: Int, lifetime: Int, measuredSeconds: Int = 3) throws -> GuardCost {
        let node = try SimulatedNode(rate: rate, lifetime: lifetime)
        let (clock, guardian, verifier) = (node.clock, node.guardian, node.verifier)
        let warmUp = lifetime + 2  // past the first expiries: seconds are being dropped and their tables reused
        var checkNanoseconds = 0.0, verifyNanoseconds = 0.0, measured = 0
        var checkFirst = false
        for second in 0..<(warmUp + measuredSeconds) {
            var done = 0
            while done < rate {
                let count = min(20_000, rate - done)
                let requests = try node.requests(count)
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
        return GuardCost(rate: rate, lifetime: lifetime, held: guardian.count, tableMB: Double(guardian.tableBytes) / 1e6,
                         check: checkNanoseconds / n, verify: verifyNanoseconds / n,
                         guardShare: (verifyNanoseconds - checkNanoseconds) / n)
    }

    private static func nanoseconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start)
    }

    var line: String {
        "\(format(Double(rate)))/s × \(lifetime) s: \(format(Double(held))) nonces held, tables \(String(format: "%.0f", tableMB)) MB; "
            + "per request: check \(String(format: "%.0f", check)) ns, verify \(String(format: "%.0f", verify)) ns, "
            + "guard \(String(format: "%.0f", guardShare)) ns"
    }
}
