import CBench
import Dispatch
import Foundation

/// Runs an operation `iterations` times and returns the seconds the timed part took (set-up,
/// such as signing the tokens a verify run consumes, stays outside the clock).
typealias Timed = @Sendable (_ iterations: Int) async -> Double

/// Median, minimum and maximum of several samples.
struct Stats: Codable {
    var median: Double
    var min: Double
    var max: Double

    init(_ samples: [Double]) {
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        min = sorted.first ?? 0
        max = sorted.last ?? 0
    }
}

/// How long and how often to measure.
struct Settings {
    /// Target seconds per sample.
    var sampleSeconds: Double
    /// Samples per operation (and per floor, interleaved with them).
    var repetitions: Int

    static let full = Settings(sampleSeconds: 0.25, repetitions: 11)
    static let quick = Settings(sampleSeconds: 0.02, repetitions: 3)
}

/// The result of measuring one operation beside its floor.
struct Measurement {
    var opsPerSecond: Stats
    var floorOpsPerSecond: Stats?
    /// Median of the per-repetition ratios operation / floor: each pair ran back to back, so
    /// drift in the machine's speed cancels out.
    var ratio: Double?
    /// Cores that other processes (and the hypervisor, as steal) kept busy while this row ran.
    var otherLoad: Double
    /// With a control: its ratios (before the first repetition and after each), and how many
    /// repetitions they called quiet (`ratio` is then the median over those repetitions alone).
    var controlRatios: [Double]? = nil
    var quietPairs: Int? = nil
}

/// CPU time of the whole machine and of this process: their difference over an interval is
/// what other processes used, which decides whether a 2-thread row can be quoted.
struct CPUTime {
    var machineBusy: Double  // seconds, all cores: user, nice, system, irq, softirq, steal
    var own: Double          // seconds of this process
    var wall: Double

    static func now() -> CPUTime {
        var busy = 0.0
        if let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
           let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") {
            let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
            if ticks.count >= 8 { busy = (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]) / Double(sysconf(Int32(_SC_CLK_TCK))) }
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let own = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return CPUTime(machineBusy: busy, own: own, wall: Double(DispatchTime.now().uptimeNanoseconds) / 1e9)
    }

    /// Cores used by everything but this process since `start`.
    func otherLoad(since start: CPUTime) -> Double {
        max(0, ((machineBusy - start.machineBusy) - (own - start.own)) / max(wall - start.wall, 1e-9))
    }
}

func now() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
}

/// Times `body` run `iterations` times in a row.
func time(_ iterations: Int, _ body: () -> Void) -> Double {
    let start = now()
    for _ in 0..<iterations { body() }
    return now() - start
}

/// The iteration count that makes one sample last about `seconds` (the runs are the warm-up).
func calibrate(_ run: Timed, seconds: Double) async -> Int {
    var iterations = 1
    while true {
        let elapsed = await run(iterations)
        if elapsed >= seconds / 8 || iterations >= 1 << 30 {
            return max(1, Int(Double(iterations) * seconds / max(elapsed, 1e-9)))
        }
        iterations *= elapsed < seconds / 100 ? 8 : 2
    }
}

/// Work like the engine's on two threads against one, as a 2-thread row's control: whether
/// the second core is free (when the ratio reaches `Row.quietScaling`).
struct Control {
    var twoThreads: Timed, oneThread: Timed
}

/// Measures an operation and its floor in alternating samples of about equal length. With a
/// `control`, its pair is also measured before the first repetition and after each one, and the
/// ratio is the median over the repetitions whose controls on both sides read quiet: a
/// hypervisor that takes the second core for a moment disturbs those samples and no others (it
/// shows in no load figure), and a control measured once after the row would not see it.
func measure(_ operation: Timed, floor: Timed?, settings: Settings, control: Control? = nil) async -> Measurement {
    let start = CPUTime.now()
    let operationIterations = await calibrate(operation, seconds: settings.sampleSeconds)
    let floorIterations = floor == nil ? 0 : await calibrate(floor!, seconds: settings.sampleSeconds)
    let controlIterations = control == nil ? (0, 0)
        : (await calibrate(control!.twoThreads, seconds: settings.sampleSeconds), await calibrate(control!.oneThread, seconds: settings.sampleSeconds))
    var operationRates: [Double] = [], floorRates: [Double] = [], ratios: [Double] = [], controlRatios: [Double] = []
    func measureControl() async {
        guard let control else { return }
        let two = Double(controlIterations.0) / (await control.twoThreads(controlIterations.0))
        let one = Double(controlIterations.1) / (await control.oneThread(controlIterations.1))
        controlRatios.append(two / one)
    }
    await measureControl()
    for repetition in 0..<settings.repetitions {
        var operationRate = 0.0, floorRate = 0.0
        // Alternate which one goes first, so neither always runs on a warmer machine.
        for first in [repetition % 2 == 0, repetition % 2 != 0] {
            if first {
                operationRate = Double(operationIterations) / (await operation(operationIterations))
            } else if let floor {
                floorRate = Double(floorIterations) / (await floor(floorIterations))
            }
        }
        operationRates.append(operationRate)
        if floor != nil {
            floorRates.append(floorRate)
            ratios.append(operationRate / floorRate)
        }
        await measureControl()
    }
    var measurement = Measurement(opsPerSecond: Stats(operationRates),
                                  floorOpsPerSecond: floor == nil ? nil : Stats(floorRates),
                                  ratio: floor == nil ? nil : Stats(ratios).median, otherLoad: CPUTime.now().otherLoad(since: start))
    if control != nil {
        let quiet = ratios.indices.filter { min(controlRatios[$0], controlRatios[$0 + 1]) >= Row.quietScaling }.map { ratios[$0] }
        measurement.controlRatios = controlRatios
        measurement.quietPairs = quiet.count
        if !quiet.isEmpty { measurement.ratio = Stats(quiet).median }
    }
    return measurement
}

/// Runs `body(worker)` in `workers` concurrent tasks (the cooperative pool has a thread per
/// core) and returns the wall-clock seconds until all have finished. One worker runs in the
/// calling task, as its floor does, unless `onPool`: a 1-thread baseline for a 2-thread run
/// must run on a pool thread as the two workers do. (On the Zen 4 VM the same SHA-256 loop ran
/// 17 % faster in the main task than on a pool thread, a matter of where its stack buffers fell:
/// with the 1-thread run in the main task, a free second core read as 1.55-1.76 times one.)
func parallel(workers: Int, onPool: Bool = false, _ body: @escaping @Sendable (Int) async -> Void) async -> Double {
    let start = now()
    if workers == 1 && !onPool {
        await body(0)
    } else {
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<workers { group.addTask { await body(worker) } }
        }
    }
    return now() - start
}

/// Heap allocations per call of `body`, counted on this thread over `iterations` calls
/// (`body` must not suspend, or the count would follow another thread).
func allocationsPerCall(_ iterations: Int, _ body: () async -> Void) async -> Double {
    await body()  // first-use set-up (libraries, lazy tables) is not per-call cost
    let before = bench_thread_allocations()
    for _ in 0..<iterations { await body() }
    return Double(bench_thread_allocations() - before) / Double(iterations)
}
