import HTTPTypes
@_spi(SignCoreTools) import SignCore

/// How a `SigningClient` reaches the network: one attempt of a request, already signed, sent as
/// it is, and its response. The adapters (URLSession, AsyncHTTPClient, the OpenAPI middleware)
/// are transports over their library, made afresh for each request with the request's body, so
/// that every attempt sends the body again. The model is swift-openapi-runtime's
/// `ClientTransport`: the transport moves bytes, the client decides.
public protocol SignedTransport {
    /// A response body as the library delivers it.
    associatedtype ResponseBody

    /// Sends `request` (signed; its header fields are all to be sent, in order) with the body
    /// this transport was made with, and returns the response head and body.
    func send(_ request: HTTPRequest) async throws -> (HTTPResponse, ResponseBody)

    /// Reads up to `limit` bytes of `body` for the policies to see, and returns them, whether
    /// they are the whole body, and a body that delivers every byte again from the start.
    func peek(_ body: ResponseBody, upTo limit: Int) async throws -> (bytes: [UInt8], isComplete: Bool, body: ResponseBody)

    /// Lets go of the body of a response that is not delivered (an attempt that is retried), so
    /// its connection can serve the next one.
    func discard(_ body: ResponseBody) async

    /// The policies' own requests while this request is under way (the attest endpoint's, for a
    /// challenge this request met), sent through the same library.
    var direct: any DirectTransport { get }

    /// The same, usable after this request has ended (a token renewed in the background); nil
    /// when the library's path is bound to the request (an OpenAPI middleware's `next`): then
    /// work that would run in the background does not run, and a token is renewed by the 428
    /// that meets it at its expiry.
    var detached: (any DirectTransport)? { get }
}

extension SignedTransport {
    public var detached: (any DirectTransport)? { nil }
}

/// A small request of the policies' own, its body in memory, and the whole response, up to
/// `SigningClient.maxBodyLimit` bytes of it: what a policy sends besides the caller's requests.
/// The request is already signed.
public protocol DirectTransport: Sendable {
    func send(_ request: HTTPRequest, body: [UInt8]) async throws -> (HTTPResponse, [UInt8])
}

/// A body's chunks read so far by a peek, then the rest of the same iteration: what a streamed
/// response body becomes after the policies have seen its start. It is iterated once, by the
/// one caller the body is delivered to, as the body it stands for would have been; a second
/// iteration throws at once rather than share the chunks.
public struct PeekedChunks<Base: AsyncIteratorProtocol>: AsyncSequence, @unchecked Sendable {
    public typealias Element = Base.Element
    private let state: State

    /// Reads chunks of `body` until more than `limit` bytes or its end; `count` gives a
    /// chunk's size and `bytes` its first bytes. Returns at most `limit` bytes, whether the
    /// body ended within them, and the chunks again followed by the rest. A failure while
    /// reading is thrown (the body is then lost, as a failed transfer is).
    public static func peek<Body: AsyncSequence>(_ body: Body, upTo limit: Int, count: (Element) -> Int,
                                                 bytes: (Element, Int) -> [UInt8]) async throws
        -> (bytes: [UInt8], isComplete: Bool, chunks: PeekedChunks<Body.AsyncIterator>) where Body.AsyncIterator == Base {
        var iterator = body.makeAsyncIterator()
        var read: [Element] = []
        var seen: [UInt8] = []
        var total = 0
        var ended = false
        while total <= limit {
            guard let chunk = try await iterator.next() else { ended = true; break }
            let size = count(chunk)
            if seen.count < limit { seen += bytes(chunk, Swift.min(size, limit - seen.count)) }
            total += size
            read.append(chunk)
        }
        return (seen, ended, PeekedChunks(state: State(read: read, rest: ended ? nil : iterator)))
    }

    private init(state: State) { self.state = state }

    public func makeAsyncIterator() -> Iterator { Iterator(state: state.claim() ? state : nil) }

    public struct Iterator: AsyncIteratorProtocol {
        fileprivate let state: State?
        public mutating func next() async throws -> Element? {
            guard let state else { throw SignCoreError(.invalidInput, "a response body is read once") }
            return try await state.next()
        }
    }

    /// Shared by reference so the sequence can be `Sendable` as the libraries' body types must
    /// be; only the one iterator that claimed it reads it, one `next` at a time.
    fileprivate final class State {
        private let claimed = Locked(false)
        private var read: [Element]
        private var position = 0
        private var rest: Base?

        init(read: [Element], rest: Base?) {
            self.read = read
            self.rest = rest
        }

        /// True for the first iterator only.
        func claim() -> Bool { claimed.withLock { claimed in defer { claimed = true }; return !claimed } }

        func next() async throws -> Element? {
            if position < read.count {
                defer { position += 1 }
                return read[position]
            }
            read = []
            // Taken out while it runs: a failed read leaves nothing to read again.
            guard var iterator = rest else { return nil }
            rest = nil
            let chunk = try await iterator.next()
            if chunk != nil { rest = iterator }
            return chunk
        }
    }
}
