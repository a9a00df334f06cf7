import AsyncHTTPClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import NIOCore
import NIOHTTP1
import SignCore
import SignHTTP

/// A request body that can be signed before it is sent: its whash must be known when the headers
/// go out, and it must be readable again for a retry.
public struct SignableBody: Sendable {
    let whash: SHA256Digest
    let length: Int64
    let make: @Sendable () -> HTTPClientRequest.Body?

    /// No body (GET, HEAD, OPTIONS, DELETE, or an empty POST).
    public static let empty = SignableBody(whash: WHash.ofEmptyBody, length: 0) { nil }

    /// Bytes in memory, hashed in place and sent without a copy.
    public static func bytes(_ buffer: ByteBuffer) -> SignableBody {
        SignableBody(whash: buffer.withUnsafeReadableBytes { WHash.ofBody($0) }, length: Int64(buffer.readableBytes)) { .bytes(buffer) }
    }

    /// A file, hashed once in constant memory and then streamed from disk on every attempt.
    public static func file(atPath path: String) throws(SignCoreError) -> SignableBody {
        let (whash, count) = try WHash.ofFile(atPath: path)
        return SignableBody(whash: whash, length: Int64(count)) { .stream(FileChunks(path: path), length: .known(Int64(count))) }
    }

    /// A stream whose whash the caller computed (`WHash.BodyHasher`) and that `make` produces
    /// afresh for each attempt.
    public static func stream<Chunks: AsyncSequence & Sendable>(whash: SHA256Digest, length: Int64,
                                                                 _ make: @escaping @Sendable () -> Chunks) -> SignableBody
        where Chunks.Element == ByteBuffer {
        SignableBody(whash: whash, length: length) { .stream(make(), length: .known(length)) }
    }
}

extension HTTPClient {
    /// Executes `request` through `client` (`SigningClient`): signed (SPEC §4) with a fresh
    /// nonce for every attempt, the URL, the method and the header fields the signer covers as
    /// they are sent, with the body's whash. The client's policies decide after each response
    /// (by default a 503 is retried after a short `Retry-After`); the response they deliver is
    /// returned. The body goes in `body` (a request with its own body is refused `invalidInput`:
    /// it could be neither signed nor sent again).
    public func execute(_ request: HTTPClientRequest, body: SignableBody = .empty, client: SigningClient,
                        timeout: TimeAmount) async throws -> HTTPClientResponse {
        // A body set on the request could not be signed or sent again: it would go out unsigned
        // or be replaced. It belongs in `body`.
        guard request.body == nil else {
            throw SignCoreError(.invalidInput, "a signed request's body is given as the body parameter, not on the request")
        }
        let transport = ClientTransport(http: self, request: request, body: body, timeout: timeout)
        return try await client.send(try Self.httpRequest(request), bodyWHash: body.whash, bodyLength: body.length, through: transport).1
    }

    /// `request` as swift-http-types has it, to be signed: the URL as it is written, its
    /// method and header fields in order.
    static func httpRequest(_ request: HTTPClientRequest) throws(SignCoreError) -> HTTPRequest {
        var fields = HTTPFields()
        for header in request.headers {
            guard let name = HTTPField.Name(header.name) else {
                throw SignCoreError(.invalidInput, "a header field's name is not a token")
            }
            fields.append(HTTPField(name: name, value: header.value))
        }
        guard let method = HTTPRequest.Method(request.method.rawValue) else {
            throw SignCoreError(.invalidInput, "the request's method is not a token")
        }
        return try HTTPRequest(method: method, urlString: request.url, headerFields: fields)
    }
}

/// AsyncHTTPClient as a `SignedTransport`: the request sent with the signed request's header
/// fields and a new body for every attempt; the response body streamed.
private struct ClientTransport: SignedTransport {
    let http: HTTPClient
    let request: HTTPClientRequest
    let body: SignableBody
    let timeout: TimeAmount

    var direct: any DirectTransport { HTTPClientTransport(http: http, timeout: timeout) }
    var detached: (any DirectTransport)? { HTTPClientTransport(http: http, timeout: timeout) }

    func send(_ signed: HTTPRequest) async throws -> (HTTPResponse, HTTPClientResponse) {
        var sent = request
        sent.headers = HTTPHeaders(signed.headerFields.map { ($0.name.rawName, $0.value) })
        sent.body = body.make()
        let response = try await http.execute(sent, timeout: timeout)
        var fields = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        return (HTTPResponse(status: .init(code: Int(response.status.code)), headerFields: fields), response)
    }

    func peek(_ response: HTTPClientResponse, upTo limit: Int) async throws -> (bytes: [UInt8], isComplete: Bool, body: HTTPClientResponse) {
        let (bytes, isComplete, chunks) = try await PeekedChunks.peek(response.body, upTo: limit, count: { $0.readableBytes },
                                                                       bytes: { $0.getBytes(at: $0.readerIndex, length: $1) ?? [] })
        var response = response
        response.body = .stream(chunks)
        return (bytes, isComplete, response)
    }

    func discard(_ response: HTTPClientResponse) async {
        _ = try? await response.body.collect(upTo: SigningClient.maxBodyLimit)  // read to its end, or the connection closes
    }
}

/// AsyncHTTPClient for a policy's own requests (a client's attestation), during a request or
/// after it.
public struct HTTPClientTransport: DirectTransport {
    public let http: HTTPClient
    public let timeout: TimeAmount

    public init(http: HTTPClient, timeout: TimeAmount = .seconds(30)) {
        self.http = http
        self.timeout = timeout
    }

    public func send(_ request: HTTPRequest, body: [UInt8]) async throws -> (HTTPResponse, [UInt8]) {
        guard let scheme = request.scheme, let authority = request.authority, let path = request.path else {
            throw SignCoreError(.invalidURL, "the request needs a scheme, an authority and a path")
        }
        var sent = HTTPClientRequest(url: scheme + "://" + authority + path)
        sent.method = NIOHTTP1.HTTPMethod(rawValue: request.method.rawValue)
        sent.headers = HTTPHeaders(request.headerFields.map { ($0.name.rawName, $0.value) })
        if !body.isEmpty { sent.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await http.execute(sent, timeout: timeout)
        var fields = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        let bytes = try await response.body.collect(upTo: SigningClient.maxBodyLimit)
        return (HTTPResponse(status: .init(code: Int(response.status.code)), headerFields: fields), Array(buffer: bytes))
    }
}

/// A file's bytes in 64 KiB chunks, read as they are needed; the file is closed when the
/// iteration ends or is abandoned.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let path: String

    func makeAsyncIterator() -> Iterator { Iterator(file: OpenFile(path: path)) }

    struct Iterator: AsyncIteratorProtocol {
        let file: OpenFile
        mutating func next() async throws -> ByteBuffer? { try file.read() }
    }

    final class OpenFile {
        let path: String
        var descriptor: CInt = -1
        var done = false

        init(path: String) { self.path = path }
        deinit { if descriptor >= 0 { close(descriptor) } }

        func read() throws(SignCoreError) -> ByteBuffer? {
            if done { return nil }
            if descriptor < 0 {
                descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw SignCoreError(.invalidInput, "cannot open the body file \(path)") }
            }
            var buffer = ByteBufferAllocator().buffer(capacity: 1 << 16)
            var count = 0
            repeat {
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 1 << 16) { bytes in
                    count = readDescriptor(descriptor, bytes)
                    return Swift.max(0, count)
                }
            } while count < 0 && errno == EINTR
            guard count > 0 else {
                done = true
                if count < 0 { throw SignCoreError(.invalidInput, "cannot read the body file \(path)") }
                return nil
            }
            return buffer
        }
    }
}

/// read(2) into `bytes` (at file scope: inside the reader, `read` names its own method).
private func readDescriptor(_ descriptor: Int32, _ bytes: UnsafeMutableRawBufferPointer) -> Int {
    read(descriptor, bytes.baseAddress, bytes.count)
}
