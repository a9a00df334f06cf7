import CBench
import Foundation
import SignCore

/// One measured operation.
struct Row: Codable {
    var operation: String
    var size: String
    var opsPerSecond: Stats
    var floorOpsPerSecond: Stats?
    /// What the floor is, when it is not the raw crypto work ("1 thread" for scaling rows).
    var floor: String?
    var ratio: Double?
    var target: Double?
    var met: Bool?
    /// Cores other processes kept busy during the row. A 2-thread row measures how much of the
    /// second core is free, so it is quotable only when this stays below `quietLoad`.
    var otherLoad: Double
    /// For a 2-thread row: its control (`Catalogue.control`) on two threads against one,
    /// measured before the row's first pair and after each (the median here). A hypervisor can
    /// take the second vCPU's core without any load showing in /proc/stat, so the row's ratio
    /// comes from the repetitions whose controls on both sides reached `quietScaling`
    /// (`quietPairs` of them), and the row is quotable only when at least half of its
    /// repetitions were quiet.
    var secondCore: Double?
    var quietPairs: Int?
    var repetitions: Int

    static let quietLoad = 0.1
    static let quietScaling = 1.9

    /// Whether a 2-thread row ran with a free second core.
    var isQuiet: Bool { otherLoad < Row.quietLoad && 2 * (quietPairs ?? 0) >= repetitions }

    init(_ benchCase: BenchCase, _ measurement: Measurement, repetitions: Int) {
        self.repetitions = repetitions
        secondCore = measurement.controlRatios.map { Stats($0).median }
        quietPairs = measurement.quietPairs
        otherLoad = measurement.otherLoad
        operation = benchCase.operation
        size = benchCase.size
        opsPerSecond = measurement.opsPerSecond
        floorOpsPerSecond = measurement.floorOpsPerSecond
        floor = benchCase.floorNote ?? (measurement.floorOpsPerSecond == nil ? nil : "crypto floor")
        ratio = measurement.ratio
        target = benchCase.target
        if let ratio, let target { met = ratio >= target }
    }

    static let header = pad("operation", operationWidth) + pad("size", 12) + pad("ops/s median", 14) + pad("min – max", 22)
        + pad("floor ops/s", 14) + pad("ratio", 8) + "target"

    var line: String {
        let floorText = floorOpsPerSecond.map { format($0.median) + (floor == "1 thread" ? " (1T)" : "") } ?? "–"
        var targetText = target.map { String(format: "≥ %.2f %@", $0, met == true ? "met" : "MISSED") } ?? ""
        if floor != nil, floor != "crypto floor", floor != "1 thread" {
            targetText += "  (against \(floor!))"
        }
        if floor == "1 thread" {
            targetText += String(format: "  other load %.2f, control 2T/1T %.2f, %d of %d pairs quiet: %@", otherLoad,
                                 secondCore ?? 0, quietPairs ?? 0, repetitions, isQuiet ? "quiet" : "second core not free, do not quote")
        }
        return Row.pad(operation, Row.operationWidth) + Row.pad(size, 12) + Row.pad(format(opsPerSecond.median), 14)
            + Row.pad(format(opsPerSecond.min) + " – " + format(opsPerSecond.max), 22)
            + Row.pad(floorText, 14) + Row.pad(ratio.map { String(format: "%.3f", $0) } ?? "–", 8) + targetText
    }

    /// Room for the longest operation name ("verify HS256 GET, 2 threads") and two spaces.
    static let operationWidth = 30

    /// `text` padded to `width`, always with at least two spaces after it: columns stay apart
    /// (and split on runs of spaces) even when a name fills its column.
    static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(2, width - text.count))
    }
}

/// Heap allocations per call of one operation.
struct AllocationRow: Codable {
    var operation: String
    var size: String
    var perCall: Double
    var limit: Double?
    var met: Bool?

    init(operation: String, size: String, perCall: Double, limit: Double?) {
        self.operation = operation
        self.size = size
        self.perCall = perCall
        self.limit = limit
        if let limit { met = perCall <= limit }
    }

    var line: String {
        Row.pad(operation, Row.operationWidth) + Row.pad(size, 12) + Row.pad(String(format: "%.2f", perCall), 10)
            + (limit.map { String(format: "≤ %.0f %@", $0, met == true ? "met" : "EXCEEDED") } ?? "")
    }
}

/// Where the numbers came from.
struct Machine: Codable {
    var cpu: String
    /// The x86 family and model numbers: AMD Zen 3 is family 25, Zen 5 family 26.
    var family: String
    var cores: Int
    var kernel: String
    /// The engine's crypto backend (SignCoreVersion.cryptoBackend); the floors are always raw
    /// libsodium and OpenSSL.
    var backend: String
    var openssl: String
    var libsodium: String
    /// How SHA-256 finishes messages of up to 512 bytes here, as the shim chose at start-up.
    var shortSHA256: String
    /// The 1-minute load average before the run (each row also reports what other processes
    /// used while it ran).
    var loadAtStart: String

    static func current() -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        func field(_ name: String) -> String? {
            cpuinfo.split(separator: "\n").first { $0.hasPrefix(name) }
                .flatMap { $0.split(separator: ":", maxSplits: 1).last }.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let kernel = ((try? String(contentsOfFile: "/proc/sys/kernel/osrelease", encoding: .utf8)) ?? "unknown")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return Machine(cpu: field("model name") ?? "unknown CPU",
                       family: "family \(field("cpu family") ?? "?") model \(field("model\t") ?? "?")",
                       cores: ProcessInfo.processInfo.activeProcessorCount, kernel: "Linux " + kernel,
                       backend: SignCoreVersion.cryptoBackend, openssl: String(cString: bench_openssl_version()), libsodium: String(cString: bench_sodium_version()),
                       shortSHA256: (bench_sha256_short_path() != 0 ? "padded in place, block function" : "SHA256_Update/SHA256_Final")
                           + (bench_sha256_short_path_measured_faster() != 0 ? " (the shim's padding measured faster here)"
                               : " (the library's padding measured faster here)"),
                       loadAtStart: loadAverage())
    }

    /// The 1-minute load average (/proc/loadavg).
    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").first.map(String.init) ?? "?"
    }

    var summary: String {
        "\(cpu) (\(family)), \(cores) cores, \(kernel), \(openssl), libsodium \(libsodium)\n"
            + "Engine backend: \(backend) (floors: raw libsodium and OpenSSL)\n"
            + "Short SHA-256: \(shortSHA256); load average \(loadAtStart) at start"
    }
}

/// The whole run, as written by `--json`.
struct Report: Codable {
    var mode: String
    var machine: Machine
    var rows: [Row]
    var guardAtScale: [GuardAtScale]
    var guardCost: [GuardCost]
    var allocations: [AllocationRow]
    var proofOfWorkSolveTimes: [AttestationBench.SolveRow]

    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }

    static func summary(rows: [Row], allocations: [AllocationRow]) -> String {
        var text = "\nHeap allocations per call\n"
        text += allocations.map(\.line).joined(separator: "\n")
        // A 2-thread row without a free second core says nothing about the engine: not counted.
        let judged = rows.filter { $0.secondCore == nil || $0.isQuiet }
        let targets = judged.compactMap(\.met) + allocations.compactMap(\.met)
        text += "\n\nTargets met: \(targets.filter { $0 }.count) of \(targets.count)"
        let missed = judged.filter { $0.met == false }.map { "\($0.operation) \($0.size)" }
            + allocations.filter { $0.met == false }.map { "allocations of \($0.operation) \($0.size)" }
        if !missed.isEmpty { text += "; missed: " + missed.joined(separator: ", ") }
        let unjudged = rows.filter { $0.secondCore != nil && !$0.isQuiet }.map(\.operation)
        if !unjudged.isEmpty { text += "; not judged (second core not free): " + unjudged.joined(separator: ", ") }
        return text
    }
}

/// 1234567 → "1.23 M".
func format(_ rate: Double) -> String {
    switch rate {
    case 1e6...: String(format: "%.2f M", rate / 1e6)
    case 1e3...: String(format: "%.1f k", rate / 1e3)
    default: String(format: "%.1f", rate)
    }
}
