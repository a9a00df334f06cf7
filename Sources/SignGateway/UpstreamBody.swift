import Hummingbird
import NIOCore
@_spi(SignCoreTools) import SignCore

/// A client's request body on its way to the upstream. One task of its own is the only reader of
/// the server's request body, and hands the chunks one at a time (the client is read no faster
/// than the upstream takes them) to the HTTP client's upload, which reads `chunks`.
///
/// The exchange may end before the body does: an upstream answers a 404, a 413 or its own 401
/// without reading it. Then `finish()` stops the reader and waits for it, and only after that
/// does the server read what is left of the request (to find the next one). Two readers of one
/// request stream at once trap in SwiftNIO, so the server is never handed a body that the
/// upload may still be reading.
final class UpstreamBody: Sendable {
    let chunks: Chunks
    private let reader: Task<Void, Never>

    /// - Parameter limit: the most bytes read from the client; past it the upload fails with
    ///   `bodyTooLarge` (on every route, signed or not).
    init(_ body: RequestBody, limit: Int64) {
        let chunks = Chunks()
        self.chunks = chunks
        reader = Task {
            var iterator = body.makeAsyncIterator()
            do {
                var count: Int64 = 0
                while let chunk = try await iterator.next() {
                    count += Int64(chunk.readableBytes)
                    guard count <= limit else { throw SignCoreError(.bodyTooLarge, "the request body is larger than \(limit) bytes") }
                    try await chunks.send(chunk)
                }
                chunks.end(nil)
            } catch {
                chunks.end(error)
                // Stopped before the body's end (the upstream answered early, or past the limit): one
                // more read, in this task cancelled, ends the client's inbound stream (SwiftNIO
                // finishes a sequence whose read is cancelled), so the server closes the connection
                // instead of reading (draining) the rest.
                withUnsafeCurrentTask { $0?.cancel() }
                _ = try? await iterator.next()
            }
        }
    }

    /// A response whose body closure never ran (the client went away before its head was
    /// written) drops this object: the reader must not wait for an upload that is over.
    deinit { reader.cancel() }

    /// Whether the whole body has been read from the client.
    var isComplete: Bool { chunks.isComplete }

    /// Reads the rest of the body without sending it (the upload is over: the upstream answered
    /// early), for a signed request whose body must still be held to its whash before the
    /// upstream's answer is relayed. Returns the error that ended the body (`whashMismatch`,
    /// `bodyTooLarge`, a client gone), or nil when it ended well; `finish()` stops it sooner.
    func readRest() async -> (any Error)? {
        chunks.discard()
        await reader.value
        return chunks.endError
    }

    /// Stops the reader without waiting for it.
    func stopReading() { reader.cancel() }

    /// Stops reading the client's body if the upload has not read it all, and waits until the
    /// reader has returned. Returns whether the body had been read to its end (if not, the
    /// connection is closed after the response: the rest of the request was never read).
    @discardableResult
    func finish() async -> Bool {
        if !chunks.isComplete { reader.cancel() }
        await reader.value
        return chunks.isComplete
    }

    /// One chunk at a time from the reader to the upload: `send` returns when the upload has
    /// taken the chunk; either side's cancellation ends the other's wait.
    final class Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer

        private struct State {
            var chunk: ByteBuffer?
            /// Set once: nil while the body lasts, `.success` at its end, `.failure` when reading it failed.
            var end: Result<Void, any Error>?
            var waitingConsumer: CheckedContinuation<ByteBuffer?, any Error>?
            var waitingProducer: CheckedContinuation<Void, any Error>?
            var iterated = false
            var abandoned = false
            var discarding = false
        }

        private let state = Locked(State())

        var isComplete: Bool { state.withLock { if case .success = $0.end { $0.chunk == nil } else { false } } }

        /// Why the body ended early, once it has ended.
        var endError: (any Error)? { state.withLock { if case .failure(let error) = $0.end { error } else { nil } } }

        /// From now on every chunk is dropped as it is sent; a reader waiting is released.
        func discard() {
            let producer = state.withLock { state in
                state.discarding = true
                state.chunk = nil
                defer { state.waitingProducer = nil }
                return state.waitingProducer
            }
            producer?.resume()
        }

        /// Hands `chunk` to the upload and waits until it is taken.
        func send(_ chunk: ByteBuffer) async throws {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    enum Step { case handed(CheckedContinuation<ByteBuffer?, any Error>), cancelled, dropped, waiting }
                    let step: Step = state.withLock { state in
                        if Task.isCancelled || state.abandoned { return .cancelled }
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

        /// The body's end, or why it failed (a streamed body's `whashMismatch`, a client gone).
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

        /// The upload's side: the next chunk, nil at the end, or the reader's error.
        func next() async throws -> ByteBuffer? {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer?, any Error>) in
                    enum Step { case chunk(ByteBuffer, CheckedContinuation<Void, any Error>?), end(Result<Void, any Error>), wait }
                    let step: Step = state.withLock { state in
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

        /// The upload's one iterator: when the HTTP client drops it (the exchange is over), a
        /// reader waiting to hand it a chunk is released.
        final class AsyncIterator: AsyncIteratorProtocol {
            let chunks: Chunks
            init(chunks: Chunks) { self.chunks = chunks }
            func next() async throws -> ByteBuffer? { try await chunks.next() }
            deinit { chunks.abandon() }
        }

        func makeAsyncIterator() -> AsyncIterator {
            precondition(state.withLock { state in defer { state.iterated = true }; return !state.iterated }, "one upload reads a body")
            return AsyncIterator(chunks: self)
        }

        /// No chunk will be taken any more: the waiting reader, and any later `send`, fail.
        func abandon() {
            let producer = state.withLock { state in
                state.abandoned = true
                state.chunk = nil
                defer { state.waitingProducer = nil }
                return state.waitingProducer
            }
            producer?.resume(throwing: CancellationError())
        }
    }
}
