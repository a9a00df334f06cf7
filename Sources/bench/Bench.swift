import ArgumentParser
import CBench
import Foundation
import SignCore
import SignAttest

/// `swift run -c release bench`: every engine operation beside its crypto floor.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measures SignCore's operations beside the raw libsodium/OpenSSL work they cannot avoid.",
        discussion: "Ratios compare samples taken back to back in one run; absolute figures drift between runs. Exits 1 when an allocation limit is exceeded; timing targets are reported, never enforced.")

    @Flag(help: "Short samples (finishes in under a minute); for CI, not for quoting.")
    var quick = false

    @Option(help: "Also write the results as JSON to this file.")
    var json: String?

    @Option(help: "Only operations whose name contains this text (case-insensitive; repeatable).")
    var filter: [String] = []

    @Flag(help: "Skip the floors, so a profiler (perf record) sees only the engine.")
    var engineOnly = false

    @Option(help: "A PostgreSQL server (host:port, user signcore, database postgres) for the device counter window's row (scripts/device-bench).")
    var postgres: String?

    /// The device keys' rows, when the server modules are built (docs/ATTEST.md §9).
    func deviceCases() throws -> [BenchCase] {
        #if SIGNCORE_DEVICE_BENCH
        try DeviceBench.cases(postgres: postgres)
        #else
        []
        #endif
    }

    func run() async throws {
        let settings = quick ? Settings.quick : .full
        if quick { AlgorithmFixture.warmUpSeconds = 0 }
        let machine = Machine.current()
        print("SignCore bench, \(quick ? "quick" : "full") run: \(settings.repetitions) samples of \(settings.sampleSeconds) s per operation and per floor, interleaved")
        print("Machine: \(machine.summary)\n")

        print(Row.header)
        var rows: [Row] = []
        for benchCase in try Catalogue.cases() + deviceCases() where selected(benchCase.operation) {
            let (operation, floor) = try benchCase.make()
            // A 2-thread row's control: the URL pass and SHA-256 on two threads against one, around every repetition.
            let control = benchCase.floorNote == "1 thread"
                ? Control(twoThreads: Catalogue.control(workers: 2), oneThread: Catalogue.control(workers: 1)) : nil
            let measurement = await measure(operation, floor: engineOnly ? nil : floor, settings: settings, control: control)
            let row = Row(benchCase, measurement, repetitions: settings.repetitions)
            print(row.line)
            rows.append(row)
        }


        var guardRows: [GuardAtScale] = []
        if selected("replay guard at scale") {
            print("\nReplay guard at scale (HS256 GET verifies, simulated clock, each verify timed)")
            // Warm-up past the first expiries, until the tables have settled (see GuardAtScale).
            let runs = quick ? [(10_000, 60, 61, 5)] : [(100_000, 60, 100, 20), (20_000, 300, 400, 20)]
            for (rate, lifetime, warmUp, measured) in runs {
                let row = try GuardAtScale.run(rate: rate, lifetime: lifetime, warmUp: warmUp, measured: measured)
                print(row.lines)
                guardRows.append(row)
            }
        }

        var guardCosts: [GuardCost] = []
        if !quick, selected("replay guard cost") {
            print("\nReplay guard cost by nonces held (HS256 GET, simulated clock; check and verify of the same requests)")
            for (rate, lifetime) in GuardCost.populations {
                let row = try GuardCost.run(rate: rate, lifetime: lifetime)
                print(row.line)
                guardCosts.append(row)
            }
        }

        var solveTimes: [AttestationBench.SolveRow] = []
        if selected("proof of work solve") {
            print("\nProof of work solve times (docs/ATTEST.md §3; the solver on every core, fresh challenges)")
            print(AttestationBench.SolveRow.header)
            solveTimes = try await AttestationBench.solveTable(quick: quick)
        }

        var allocations: [AllocationRow] = []
        for benchCase in try Catalogue.allocationCases(iterations: quick ? 200 : 2000) where selected(benchCase.operation) {
            allocations.append(AllocationRow(operation: benchCase.operation, size: benchCase.size,
                                             perCall: await benchCase.count(), limit: benchCase.limit))
        }

        print(Report.summary(rows: rows, allocations: allocations))
        if let json {
            let report = Report(mode: quick ? "quick" : "full", machine: machine, rows: rows, guardAtScale: guardRows,
                                guardCost: guardCosts, allocations: allocations, proofOfWorkSolveTimes: solveTimes)
            try report.write(to: json)
            print("JSON written to \(json)")
        }
        if allocations.contains(where: { $0.met == false }) {
            print("FAILED: an operation allocates more than its limit")
            throw ExitCode(1)
        }
    }

    private func selected(_ operation: String) -> Bool {
        filter.isEmpty || filter.contains { operation.lowercased().contains($0.lowercased()) }
    }
}
