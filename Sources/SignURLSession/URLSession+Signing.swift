import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import SignCore
import SignHTTP

extension URLSession {
    /// Sends `request` with `body` through `client` (`SigningClient`): signed (SPEC §4) with a
    /// fresh nonce for every attempt, the body hashed in place (not copied) once and sent as it
    /// is. `request` needs its scheme, authority and path (`HTTPRequest(method:url:)` sets
    /// them). The client's policies decide after each response (by default a 503 is retried
    /// after a short `Retry-After`); the response they deliver is returned.
    public func signedData(for request: HTTPRequest, body: Data = Data(), client: SigningClient) async throws -> (Data, HTTPResponse) {
        let whash = body.withUnsafeBytes { WHash.ofBody($0) }
        let sendsBody = try !body.isEmpty || RequestMethod(token: request.method.rawValue).contentClass == .body
        return try await exchange(request, whash: whash, length: Int64(body.count), client: client) { signed in
            try await sendsBody ? self.upload(for: signed, from: body) : self.data(for: signed)
        }
    }

    /// Uploads a file as the body of `request` through `client`: the file is hashed once in
    /// constant memory, then URLSession streams it from disk on every attempt.
    public func signedUpload(for request: HTTPRequest, fromFile file: URL, client: SigningClient) async throws -> (Data, HTTPResponse) {
        let (whash, length) = try WHash.ofFile(atPath: file.path)
        return try await exchange(request, whash: whash, length: Int64(length), client: client) { signed in
            try await self.upload(for: signed, fromFile: file)
        }
    }

    private func exchange(_ request: HTTPRequest, whash: SHA256Digest, length: Int64, client: SigningClient,
                          _ transfer: @escaping (HTTPRequest) async throws -> (Data, HTTPResponse)) async throws -> (Data, HTTPResponse) {
        let (response, data) = try await client.send(request, bodyWHash: whash, bodyLength: length,
                                                     through: DataTransport(transfer: transfer, session: SessionTransport(session: self)))
        return (data, response)
    }
}

/// URLSession for a policy's own requests (a client's attestation), during a request or after it.
public struct SessionTransport: DirectTransport {
    public let session: URLSession

    public init(session: URLSession) { self.session = session }

    public func send(_ request: HTTPRequest, body: [UInt8]) async throws -> (HTTPResponse, [UInt8]) {
        let (data, response) = body.isEmpty && request.method != .post ? try await session.data(for: request)
                                                                       : try await session.upload(for: request, from: Data(body))
        return (response, Array(data.prefix(SigningClient.maxBodyLimit)))
    }
}

/// URLSession as a `SignedTransport`: the response body arrives whole, as `Data`.
private struct DataTransport: SignedTransport {
    let transfer: (HTTPRequest) async throws -> (Data, HTTPResponse)
    let session: SessionTransport

    var direct: any DirectTransport { session }
    var detached: (any DirectTransport)? { session }

    func send(_ request: HTTPRequest) async throws -> (HTTPResponse, Data) {
        let (data, response) = try await transfer(request)
        return (response, data)
    }

    func peek(_ body: Data, upTo limit: Int) async throws -> (bytes: [UInt8], isComplete: Bool, body: Data) {
        (Array(body.prefix(limit)), body.count <= limit, body)
    }

    func discard(_ body: Data) async {}
}
