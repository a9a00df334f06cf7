import Hummingbird
import NIOCore
@_spi(SignCoreTools) import SignCore

/// A client's request body on its way to the upstream. One task of its own is the only reader of
/// the server's request body, and hands the chunks one at a time (the client is read no faster
/// than the upstream takes them) to the upload (UpstreamConnection), which reads `chunks`.
///
/// The exchange may end before the body does: an upstream answers a 404, a 413 or its own 401
/// without reading it. Then `finish()` stops the reader and waits for it, and only after that
/// does the server read what is left of the request (to find the next one). Two readers of one
/// request stream at once trap in SwiftNIO, so the server is never handed a body that the
/// upload may still be reading.
final class UpstreamBody: Sendable {
    let chunks: ChunkHandoff
    private let reader: Task<Void, Never>

    /// - Parameters:
    ///   - limit: the most bytes read from the client; past it the upload fails with
    ///     `bodyTooLarge` (on every route, signed or not).
    ///   - completedAtEnd: the body's stated length, when the chunk that reaches it must wait for
    ///     the body's end (an HTTP/2 stream's END_STREAM, which may yet bring an error instead), so
    ///     that the upstream never has the whole body before the client's end. (A body of no
    ///     stated length is whole upstream only at its chunked end, written at the body's end.)
    init(_ body: RequestBody, limit: Int64, completedAtEnd length: Int64? = nil) {
        let chunks = ChunkHandoff()
        self.chunks = chunks
        reader = Task {
            var iterator = body.makeAsyncIterator()
            do {
                var count: Int64 = 0
                var held: ByteBuffer?
                while let chunk = try await iterator.next() {
                    count += Int64(chunk.readableBytes)
                    guard count <= limit else { throw SignCoreError(.bodyTooLarge, "the request body is larger than \(limit) bytes") }
                    guard let length, count >= length else {
                        try await chunks.send(chunk)
                        continue
                    }
                    if chunk.readableBytes == 0 { continue }
                    // Past the stated length (HTTP/2's codec refuses it first): never one chunk for another.
                    guard count == length, held == nil else { throw SignCoreError(.invalidInput, "the request body is longer than its stated length") }
                    held = chunk
                }
                if let held { try await chunks.send(held) }
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
}
