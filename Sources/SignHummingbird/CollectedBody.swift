import Hummingbird
import NIOCore
import SignCore

extension RequestBody {
    /// The body collected up to `limit` bytes, or `bodyTooLarge` past it (`invalidInput` when it
    /// does not arrive whole). Past the limit the rest is never read: the read that would take it
    /// is cancelled, which ends the connection's inbound stream (SwiftNIO), so the server closes
    /// the connection after the refusal instead of reading (draining) what a client keeps sending.
    /// The reading runs in a task of its own, so that only it is cancelled.
    func collectStoppingPastLimit(_ limit: Int64) async throws(SignCoreError) -> ByteBuffer {
        let result = await Task { () async -> Result<ByteBuffer, SignCoreError> in
            var iterator = makeAsyncIterator()
            var collected = ByteBuffer()
            let failure: SignCoreError
            do {
                while let chunk = try await iterator.next() {
                    guard Int64(collected.readableBytes) + Int64(chunk.readableBytes) <= limit else {
                        throw SignCoreError(.bodyTooLarge, "the request body is larger than \(limit) bytes")
                    }
                    collected.writeImmutableBuffer(chunk)
                }
                return .success(collected)
            } catch let error as SignCoreError {
                failure = error
            } catch {
                failure = SignCoreError(.invalidInput, "the request body did not arrive whole")
            }
            withUnsafeCurrentTask { $0?.cancel() }
            _ = try? await iterator.next()
            return .failure(failure)
        }.value
        return try result.get()
    }
}
