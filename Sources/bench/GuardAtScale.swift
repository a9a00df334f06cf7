import Dispatch
import Foundation
import Synchronization
import SignCore

/// The replay guard in the steady state of a WAF node: HS256 GETs verified at a
/// stated rate with tokens of a stated lifetime, so that rate × lifetime nonces are live while
/// expiry runs continuously, each verify timed on its own.
///
/// Time is simulated: the signer's and verifier's clock advance one second per `rate`
/// tokens, so 60 s of a 100,000/s node run in as long as the verifies take. The verifies
/// themselves run for real and are timed one by one (signing happens in batches outside the
/// timers); the engine sustains the rate when the measured throughput is above it.
struct GuardAtScale: Codable {
    var rate: Int
    var lifetime: Int
    /// Nonces the guard held at the end (live ones plus those of seconds passed since their shard's last record).
    var held: Int
    var verifiesPerSecond: Double
    var p50: Double, p99: Double, p999: Double, max: Double  // microseconds
    /// While the guard fills from empty (the warm-up, its tables growing): p99.9 and max.
    var fillingP999: Double, fillingMax: Double
    var tablesAllocatedWhileFilling: Int
    var tableMB: Double
    /// The process's resident memory at the end (the bench's other rows included: run
    /// `--filter "replay guard at scale"` alone to see the guard's part).
    var residentMB: Double
    var tablesAllocatedWhileMeasured: Int

    /// Runs `warmUp` simulated seconds to fill the guard, then measures `measured` seconds.
    static func run(rate: Int, lifetime: Int, warmUp: Int, measured: Int) throws -> GuardAtScale {
        let node = try SimulatedNode(rate: rate, lifetime: lifetime)
        let (clock, guardian, verifier) = (node.clock, node.guardian, node.verifier)
        var latencies: [UInt32] = []
        latencies.reserveCapacity(rate * warmUp)
        var verifySeconds = 0.0
        var allocationsAtStart = 0, fillingP999 = 0.0, fillingMax = 0.0
        let batch = 10_000
        for second in 0..<(warmUp + measured) {
            let measuring = second >= warmUp
            if second == warmUp {
                // The warm-up's latencies (the guard filling from empty), summed up and dropped,
                // so that the measured seconds' resident memory does not hold them.
                allocationsAtStart = guardian.allocations
                latencies.sort()
                (fillingP999, fillingMax) = (percentile(0.999, of: latencies), Double(latencies.last ?? 0) / 1000)
                latencies = []
                latencies.reserveCapacity(rate * measured)
            }
            var done = 0
            while done < rate {
                let count = min(batch, rate - done)
                let requests = try node.requests(count)
                for index in requests.indices {
                    let start = DispatchTime.now().uptimeNanoseconds
                    _ = try verifier.verifySynchronously(requests[index])
                    let elapsed = DispatchTime.now().uptimeNanoseconds - start
                    latencies.append(UInt32(clamping: elapsed))
                    if measuring { verifySeconds += Double(elapsed) / 1e9 }
                }
                done += count
            }
            clock.advance()
        }
        latencies.sort()
        return GuardAtScale(rate: rate, lifetime: lifetime, held: guardian.count,
                            verifiesPerSecond: Double(latencies.count) / verifySeconds,
                            p50: percentile(0.5, of: latencies), p99: percentile(0.99, of: latencies),
                            p999: percentile(0.999, of: latencies), max: Double(latencies.last ?? 0) / 1000,
                            fillingP999: fillingP999, fillingMax: fillingMax, tablesAllocatedWhileFilling: allocationsAtStart,
                            tableMB: Double(guardian.tableBytes) / 1e6, residentMB: residentMB(),
                            tablesAllocatedWhileMeasured: guardian.allocations - allocationsAtStart)
    }

    /// The latency at fraction `p` of sorted nanoseconds, in microseconds.
    private static func percentile(_ p: Double, of sorted: [UInt32]) -> Double {
        sorted.isEmpty ? 0 : Double(sorted[Swift.min(sorted.count - 1, Int(p * Double(sorted.count)))]) / 1000
    }

    var lines: String {
        let target = rate >= 100_000 && lifetime >= 60
            ? (verifiesPerSecond >= 100_000 && tableMB <= 256 ? "  (≥ 100 k/s in ≤ 256 MB: met)" : "  (≥ 100 k/s in ≤ 256 MB: MISSED)") : ""
        return """
        \(format(Double(rate)))/s of \(lifetime) s tokens: \(format(Double(held))) nonces held, \
        verifies at \(format(verifiesPerSecond))/s\(target)
          latency p50 \(String(format: "%.2f", p50)) µs, p99 \(String(format: "%.2f", p99)) µs, \
        p99.9 \(String(format: "%.2f", p999)) µs, max \(String(format: "%.0f", max)) µs; \
        tables \(String(format: "%.0f", tableMB)) MB, process resident \(String(format: "%.0f", residentMB)) MB; \
        tables allocated while measured: \(tablesAllocatedWhileMeasured)
          while filling from empty (\(tablesAllocatedWhileFilling) tables allocated): p99.9 \(String(format: "%.2f", fillingP999)) µs, \
        max \(String(format: "%.0f", fillingMax)) µs
        """
    }

    /// Resident memory of this process (/proc/self/statm), in MB.
    static func residentMB() -> Double {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1e6
    }
}

/// An HS256 signer and verifier on one simulated clock, with an in-memory guard sized for
/// rate × lifetime nonces.
struct SimulatedNode {
    let clock = SimulatedClock(1_790_000_000)
    let signer: Signer
    let guardian: InMemoryReplayGuard
    let verifier: Verifier

    init(rate: Int, lifetime: Int) throws {
        let key = try SigningKey.hmac(secret: pattern(32))
        signer = try Signer(key: key, lifetime: Int64(lifetime), clock: clock.seconds)
        guardian = try InMemoryReplayGuard(capacity: rate * lifetime * 5 / 4, maxShare: 1)
        verifier = try Verifier(keys: try KeySet([key.publicOnly()]), replayGuard: guardian, maxLifetime: Int64(lifetime),
                                clock: clock.seconds)
    }

    /// `count` GETs of the bench URL signed now, each with its own URL string.
    func requests(_ count: Int) throws -> [ReceivedRequest] {
        let url = RequestFixture.getURL
        return try (0..<count).map { _ in
            let headers = try signer.sign(method: .get, url: url)
            return ReceivedRequest(method: "GET", url: String(decoding: Array(url.utf8), as: UTF8.self),
                                   whash: headers.whash, wtoken: headers.wtoken)
        }
    }
}

/// A clock the bench moves by hand.
final class SimulatedClock: Sendable {
    private let current: Atomic<Int64>
    init(_ start: Int64) { current = Atomic(start) }
    var seconds: @Sendable () -> Int64 { { [self] in current.load(ordering: .relaxed) } }
    func advance() { current.add(1, ordering: .relaxed) }
}
