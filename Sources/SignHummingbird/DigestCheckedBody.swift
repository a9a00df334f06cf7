import Hummingbird
import SignCore
import SignHTTP

/// A streamed body checked against the digest its proof signed (the whash for a wtoken, SPEC
/// §3.3, §5 step 6; `RequestVerifier.Digest`): chunks pass through as they arrive, digested on
/// the way, but the latest chunk is held back until the next one arrives, and the last is
/// released only when the whole body's digest matches. Otherwise iteration throws the digest's
/// mismatch (`whashMismatch`, `contentDigestMismatch`), or `bodyTooLarge` past `limit`, and whoever reads
/// the body never holds all of it. While `enforce` says false (a `monitor` route whose token did
/// not verify) a mismatch is only reported and the body completes; once a token verified, its
/// body is held to it on every route, so no verified identity travels with a body it did not sign.
struct DigestCheckedBody<Base: AsyncSequence & Sendable, Digest: BodyDigest>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer

    let base: Base
    let expected: Digest.Value
    /// The digest, fresh, with the body's limit (`RequestVerifier.bodyDigest`).
    let digest: Digest
    let enforce: @Sendable () -> Bool
    let onMismatch: @Sendable (SignCoreError) -> Void

    init(_ base: Base, expected: Digest.Value, digest: Digest, enforce: @escaping @Sendable () -> Bool,
         onMismatch: @escaping @Sendable (SignCoreError) -> Void) {
        self.base = base
        self.expected = expected
        self.digest = digest
        self.enforce = enforce
        self.onMismatch = onMismatch
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), body: self, hasher: digest)
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let body: DigestCheckedBody
        var hasher: Digest
        var held: ByteBuffer?
        var finished = false
        /// Past the limit: reported once, no longer hashed (under monitor the body still flows).
        var overLimit = false

        mutating func next() async throws -> ByteBuffer? {
            // A read in a cancelled task after the body failed still reaches the base, so that its
            // cancellation ends the connection's inbound stream (the rest is never drained).
            if finished {
                if Task.isCancelled { _ = try? await base.next() }
                return nil
            }
            while let chunk = try await base.next() {
                if !overLimit {
                    do {
                        try chunk.withUnsafeReadableBytes { (bytes) throws(SignCoreError) in try hasher.append(bytes) }
                    } catch {
                        overLimit = true
                        body.onMismatch(error)
                        if body.enforce() {
                            finished = true
                            throw error
                        }
                    }
                }
                if chunk.readableBytes == 0 { continue }
                let previous = held
                held = chunk
                if let previous { return previous }
            }
            finished = true
            let mismatch = hasher.mismatch
            if !overLimit, hasher.finalize() != body.expected {
                let error = mismatch
                body.onMismatch(error)
                if body.enforce() { throw error }
            }
            defer { held = nil }
            return held
        }
    }
}
