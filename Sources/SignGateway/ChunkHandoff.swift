import NIOCore
@_spi(SignCoreTools) import SignCore

/// One chunk at a time from a producer to a consumer: `send` returns when the consumer has
/// taken the chunk; either side's cancellation ends the other's wait. It carries a client's body
/// to the upstream (UpstreamBody), read by the upload (UpstreamConnection):
/// the producer is never faster than the consumer, so a body passes in constant memory.
final class ChunkHandoff: Sendable {
    private struct State {
        var chunk: ByteBuffer?
        /// Set once: nil while the body lasts, `.success` at its end, `.failure` when reading it failed.
        var end: Result<Void, any Error>?
        var waitingConsumer: CheckedContinuation<ByteBuffer?, any Error>?
        var waitingProducer: CheckedContinuation<Void, any Error>?
        var discarding = false
    }

    private let state = Locked(State())

    var isComplete: Bool { state.withLock { if case .success = $0.end { $0.chunk == nil } else { false } } }

    /// Why the body ended early, once it has ended.
    var endError: (any Error)? { state.withLock { if case .failure(let error) = $0.end { error } else { nil } } }

    /// The consumer is told that the body will not reach it whole (`Discarded`), so that it never
    /// mistakes what it got for the whole body.
    struct Discarded: Error {}

    /// From now on every chunk is dropped as it is sent (the producer reads on, to its end) and
    /// the consumer gets `Discarded`; both sides waiting are released.
    func discard() {
        let (producer, consumer) = state.withLock { state in
            state.discarding = true
            state.chunk = nil
            defer { state.waitingProducer = nil; state.waitingConsumer = nil }
            return (state.waitingProducer, state.waitingConsumer)
        }
        producer?.resume()
        consumer?.resume(throwing: Discarded())
    }

    /// Hands `chunk` to the consumer and waits until it is taken.
    func send(_ chunk: ByteBuffer) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Step { case handed(CheckedContinuation<ByteBuffer?, any Error>), cancelled, dropped, waiting }
                let step: Step = state.withLock { state in
                    if Task.isCancelled { return .cancelled }
                    if state.discarding { return .dropped }
                    if let consumer = state.waitingConsumer {
                        state.waitingConsumer = nil
                        return .handed(consumer)
                    }
                    state.chunk = chunk
                    state.waitingProducer = continuation
                    return .waiting
                }
                switch step {
                case .handed(let consumer):
                    consumer.resume(returning: chunk)
                    continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .dropped: continuation.resume()
                case .waiting: break
                }
            }
        } onCancel: {
            let producer = state.withLock { state in
                defer { state.waitingProducer = nil; state.chunk = nil }
                return state.waitingProducer
            }
            producer?.resume(throwing: CancellationError())
        }
    }

    /// The body's end, or why it failed (a streamed body's `whashMismatch`, a peer gone).
    func end(_ error: (any Error)?) {
        let consumer = state.withLock { state in
            if state.end == nil { state.end = error.map { .failure($0) } ?? .success(()) }
            defer { state.waitingConsumer = nil }
            return state.waitingConsumer
        }
        switch error {
        case nil: consumer?.resume(returning: nil)
        case let error?: consumer?.resume(throwing: error)
        }
    }

    /// The consumer's side: the next chunk, nil at the end, or the producer's error.
    func next() async throws -> ByteBuffer? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer?, any Error>) in
                enum Step { case chunk(ByteBuffer, CheckedContinuation<Void, any Error>?), end(Result<Void, any Error>), wait }
                let step: Step = state.withLock { state in
                    if state.discarding { return .end(.failure(Discarded())) }
                    if let chunk = state.chunk {
                        state.chunk = nil
                        defer { state.waitingProducer = nil }
                        return .chunk(chunk, state.waitingProducer)
                    }
                    if let end = state.end { return .end(end) }
                    if Task.isCancelled { return .end(.failure(CancellationError())) }
                    state.waitingConsumer = continuation
                    return .wait
                }
                switch step {
                case .chunk(let chunk, let producer):
                    producer?.resume()
                    continuation.resume(returning: chunk)
                case .end(.success): continuation.resume(returning: nil)
                case .end(.failure(let error)): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            let consumer = state.withLock { state in
                defer { state.waitingConsumer = nil }
                return state.waitingConsumer
            }
            consumer?.resume(throwing: CancellationError())
        }
    }
}
