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
    /// Executes `request` signed (SPEC §4) with a fresh nonce for every attempt: the URL, the
    /// method and the header fields the signer covers are signed as they are sent, with the
    /// body's whash. A 503 is retried as `retry` says, each attempt signed again; any other
    /// response is returned. The body goes in `body` (a request with its own body is refused
    /// `invalidInput`: it could be neither signed nor sent again).
    public func execute(_ request: HTTPClientRequest, body: SignableBody = .empty, signer: Signer, names: SignHeaderNames = .standard,
                        retry: RetryPolicy = RetryPolicy(), timeout: TimeAmount) async throws -> HTTPClientResponse {
        let method = try RequestMethod(token: request.method.rawValue)
        // A body set on the request could not be signed or sent again: it would go out unsigned
        // or be replaced. It belongs in `body`.
        guard request.body == nil else {
            throw SignCoreError(.invalidInput, "a signed request's body is given as the body parameter, not on the request")
        }
        return try await retry.run { _ in
            var signed = request
            signed.headers.remove(name: names.whash.rawName)
            signed.headers.remove(name: names.wtoken.rawName)
            let fields = signed.headers.map { HeaderField($0.name, $0.value) }
            let headers = try await signer.signAsync(method: method, url: signed.url, bodyWHash: body.whash, headers: fields)
            signed.headers.add(name: names.whash.rawName, value: headers.whash)
            signed.headers.add(name: names.wtoken.rawName, value: headers.wtoken)
            signed.body = body.make()
            let response = try await execute(signed, timeout: timeout)
            if response.status.code == 503 { _ = try? await response.body.collect(upTo: 64 * 1024) }  // free the connection
            return (response, Int(response.status.code), response.headers.first(name: "retry-after"))
        }
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
