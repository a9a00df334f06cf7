#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(SignCoreTools) import SignCore

/// Solves a challenge's proof of work (ATTEST.md §3) on a bounded number of cores, in the
/// background: each worker takes a chunk of counters of an unsolved sub-solution at a time, so
/// k sub-solutions spread over the workers and one sub-solution over all of them, and between
/// chunks (a few milliseconds each) it gives way to other tasks, notices cancellation and the
/// time limit. Giving up is `challengeAbandoned`, never a wrong answer.
public struct ProofOfWorkSolver: Sendable {
    /// Concurrent workers (at least 1).
    public var workers: Int
    /// How long a solve may take before it is abandoned.
    public var timeLimit: Duration
    /// Counters per chunk: the granularity of cancellation and of sharing a sub-solution.
    public var chunk: UInt64

    /// The cores this process may run on.
    public static var onlineCores: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    public init(workers: Int = ProofOfWorkSolver.onlineCores, timeLimit: Duration = .seconds(30), chunk: UInt64 = 1 << 15) {
        self.workers = max(1, workers)
        self.timeLimit = timeLimit
        self.chunk = max(1, chunk)
    }

    /// The answer to `challenge` (ATTEST.md §3.3). Throws `challengeAbandoned` when the time
    /// limit passes or the calling task is cancelled first.
    public func solve(_ challenge: Challenge) async throws(SignCoreError) -> [UInt8] {
        let prefix = ProofOfWork.prefix(of: challenge)
        let heads = (0..<challenge.count).map { ProofOfWork.head(prefix: prefix, index: $0) }
        let search = Search(count: challenge.count, chunk: chunk)
        let deadline = ContinuousClock.now.advanced(by: timeLimit)
        let difficulty = challenge.difficulty
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<workers {
                    group.addTask {
                        while let (index, start) = search.nextChunk() {
                            guard !Task.isCancelled, ContinuousClock.now < deadline else { throw SignCoreError(.challengeAbandoned, "the proof of work was stopped") }
                            let end = start.addingReportingOverflow(search.chunk)
                            let range = start..<(end.overflow ? UInt64.max : end.partialValue)
                            if let counter = SHA256CounterSearch.firstCounter(head: heads[index], in: range, leadingZeroBits: difficulty) {
                                search.found(counter, for: index)
                            }
                            await Task.yield()
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            throw SignCoreError(.challengeAbandoned, Task.isCancelled ? "the proof of work was cancelled"
                                                                        : "the proof of work took longer than its time limit")
        }
        return ProofOfWork.answer(search.counters)
    }

    /// The sub-solutions' progress, shared by the workers.
    private final class Search: Sendable {
        let chunk: UInt64
        private let progress: Locked<Progress>

        struct Progress {
            var next: [UInt64]
            var found: [UInt64?]
            var turn = 0
        }

        init(count: Int, chunk: UInt64) {
            self.chunk = chunk
            progress = Locked(Progress(next: Array(repeating: 0, count: count), found: Array(repeating: nil, count: count)))
        }

        /// The next chunk of an unsolved sub-solution, taken in turn; nil once all are solved.
        func nextChunk() -> (Int, UInt64)? {
            progress.withLock { progress in
                let count = progress.found.count
                for step in 0..<count {
                    let index = (progress.turn + step) % count
                    guard progress.found[index] == nil else { continue }
                    let start = progress.next[index]
                    progress.next[index] = start &+ chunk
                    progress.turn = (index + 1) % count
                    return (index, start)
                }
                return nil
            }
        }

        func found(_ counter: UInt64, for index: Int) {
            progress.withLock { progress in
                if progress.found[index] == nil { progress.found[index] = counter }
            }
        }

        var counters: [UInt64] { progress.withLock { $0.found.map { $0 ?? 0 } } }
    }
}
