@_spi(SignCoreTools) import SignCore

/// Group commit for a store's records: records that arrive while a statement is in flight wait
/// for it and go together in the next, up to `maxBatch` a statement and `maxConcurrentBatches`
/// statements at once. Bigger batches cost the database less per record. `send` answers every
/// record of a batch, in order; when it throws (a failed or timed-out statement) every record of
/// the batch gets that error: the store fails closed.
public final class BatchQueue<Record: Sendable, Answer: Sendable>: Sendable {
    public let maxBatch: Int
    public let maxConcurrentBatches: Int
    private let send: @Sendable ([Record]) async throws(SignCoreError) -> [Result<Answer, SignCoreError>]

    private struct Waiting {
        let record: Record
        let continuation: CheckedContinuation<Result<Answer, SignCoreError>, Never>
    }

    private struct State {
        var waiting: [Waiting] = []
        var batchesInFlight = 0
        var statements = 0
        var records = 0
    }

    private let state = Locked(State())

    /// Throws `invalidConfiguration` for a batch size or concurrency below 1.
    public init(maxBatch: Int, maxConcurrentBatches: Int,
                send: @escaping @Sendable ([Record]) async throws(SignCoreError) -> [Result<Answer, SignCoreError>]) throws(SignCoreError) {
        guard maxBatch >= 1, maxConcurrentBatches >= 1 else {
            throw SignCoreError(.invalidConfiguration, "a batch queue needs a batch size and a concurrency of at least 1")
        }
        self.maxBatch = maxBatch
        self.maxConcurrentBatches = maxConcurrentBatches
        self.send = send
    }

    /// Statements sent and records they carried, since the queue was made: how well concurrent
    /// records are batched (records / statements).
    public var batching: (statements: Int, records: Int) { state.withLock { ($0.statements, $0.records) } }

    /// Queues `record` and waits for its answer.
    public func submit(_ record: Record) async throws(SignCoreError) -> Answer {
        let result = await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiting.append(Waiting(record: record, continuation: continuation))
                guard state.batchesInFlight < maxConcurrentBatches else { return false }
                state.batchesInFlight += 1
                return true
            }
            if start { Task { await self.sendBatches() } }
        }
        return try result.get()
    }

    /// Sends what is waiting, a batch at a time, until nothing is left.
    private func sendBatches() async {
        while true {
            let batch = state.withLock { state -> [Waiting] in
                let batch = Array(state.waiting.prefix(maxBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.batchesInFlight -= 1 } else { state.statements += 1; state.records += batch.count }
                return batch
            }
            if batch.isEmpty { return }
            var answers: [Result<Answer, SignCoreError>]
            do {
                answers = try await send(batch.map(\.record))
            } catch {
                answers = Array(repeating: .failure(error), count: batch.count)
            }
            if answers.count != batch.count {  // a store's bug: refuse rather than guess
                answers = Array(repeating: .failure(SignCoreError(.unavailable, "the store answered a batch incompletely")), count: batch.count)
            }
            for (waiting, answer) in zip(batch, answers) { waiting.continuation.resume(returning: answer) }
        }
    }
}
