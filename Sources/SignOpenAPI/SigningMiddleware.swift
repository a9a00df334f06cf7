import Foundation
import HTTPTypes
import OpenAPIRuntime
import SignCore
import SignHTTP

/// Signs every request a generated OpenAPI client sends (SPEC §4) through a `SigningClient`: a
/// fresh nonce for every attempt, and the client's policies after each response (by default a
/// 503 is retried after a short `Retry-After`, signed again). Put it last in the client's
/// middlewares (nearest the transport).
///
/// The URL signed is the one the transports send: the base URL's scheme, authority and path
/// followed by the operation's path and query. A body that can be read more than once is hashed
/// by reading it once and sent as it is; a single-pass body (a stream) is collected, up to
/// `maxBufferedBody` bytes, so it can be hashed and still sent (and resent).
public struct SigningMiddleware: ClientMiddleware {
    public let client: SigningClient
    public let maxBufferedBody: Int
    /// The transport the client's policies send their own requests through after a request has
    /// ended (a token renewed in the background); without one they do it within a request.
    public let detached: (any ClientTransport)?

    public init(client: SigningClient, maxBufferedBody: Int = 16 << 20, detached: (any ClientTransport)? = nil) {
        self.client = client
        self.maxBufferedBody = maxBufferedBody
        self.detached = detached
    }

    public func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                          next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        var body = body
        var hasher = WHash.BodyHasher()
        if let single = body, single.iterationBehavior == .single {
            body = HTTPBody(try await [UInt8](collecting: single, upTo: maxBufferedBody))
        }
        if let body {
            // (An unbounded hasher: `append` cannot throw here. A typed-throws closure passed to
            // withUnsafeBytes crashes Swift 6.3's IR generation.)
            for try await chunk in body { chunk.withUnsafeBytes { try? hasher.append($0) } }
        }
        // The request as signed: the URL the transport will send, as it is written.
        let signing = try HTTPRequest(method: request.method, urlString: Self.url(of: request, baseURL: baseURL),
                                      headerFields: request.headerFields)
        let whash = hasher.finalize()
        let detached = self.detached.map { OpenAPIDirectTransport(transport: $0, operationID: operationID) }
        let length: Int64? = if case .known(let count)? = body?.length { count } else { nil }
        return try await withoutActuallyEscaping(next) { next in  // the transport lives only for this call
            try await client.send(signing, bodyWHash: whash, bodyLength: length,
                                  through: NextTransport(request: request, body: body, baseURL: baseURL, next: next, detachedTransport: detached))
        }
    }

    /// The base URL with the request's path appended and its query in place of the base's, as
    /// the URLSession and AsyncHTTPClient transports build it.
    static func url(of request: HTTPRequest, baseURL: URL) throws(SignCoreError) -> String {
        guard var base = URLComponents(string: baseURL.absoluteString), let target = URLComponents(string: request.path ?? "") else {
            throw SignCoreError(.invalidURL, "the base URL and the operation's path do not make a URL")
        }
        base.percentEncodedPath += target.percentEncodedPath
        base.percentEncodedQuery = target.percentEncodedQuery
        guard let url = base.url else { throw SignCoreError(.invalidURL, "the base URL and the operation's path do not make a URL") }
        return url.absoluteString
    }
}

/// The rest of the middleware chain as a `SignedTransport`: the operation's request with the
/// signed header fields, and its body (readable again) for every attempt.
private struct NextTransport: SignedTransport {
    let request: HTTPRequest
    let body: HTTPBody?
    let baseURL: URL
    let next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    let detachedTransport: OpenAPIDirectTransport?

    /// The rest of the chain, for the policies' requests on the origin during this one.
    var direct: any DirectTransport { NextDirectTransport(next: next) }
    var detached: (any DirectTransport)? { detachedTransport }

    func send(_ signed: HTTPRequest) async throws -> (HTTPResponse, HTTPBody?) {
        var sent = request
        sent.headerFields = signed.headerFields
        return try await next(sent, body, baseURL)
    }

    func peek(_ body: HTTPBody?, upTo limit: Int) async throws -> (bytes: [UInt8], isComplete: Bool, body: HTTPBody?) {
        guard let body else { return ([], true, nil) }
        let (bytes, isComplete, chunks) = try await PeekedChunks.peek(body, upTo: limit, count: { $0.count }, bytes: { Array($0.prefix($1)) })
        return (bytes, isComplete, HTTPBody(chunks, length: body.length, iterationBehavior: .single))
    }

    func discard(_ body: HTTPBody?) async {
        guard let body else { return }
        _ = try? await [UInt8](collecting: body, upTo: SigningClient.maxBodyLimit)
    }
}

/// A policy's request down the rest of the chain, during the call it belongs to: the origin as
/// the base URL, the request's path as the operation's.
private struct NextDirectTransport: DirectTransport {
    let next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)

    func send(_ request: HTTPRequest, body: [UInt8]) async throws -> (HTTPResponse, [UInt8]) {
        let (base, operation) = try OpenAPIDirectTransport.split(request)
        let (response, responseBody) = try await next(operation, body.isEmpty ? nil : HTTPBody(body), base)
        return (response, try await OpenAPIDirectTransport.collect(responseBody))
    }
}

/// A policy's request through an OpenAPI `ClientTransport`, usable after any call.
struct OpenAPIDirectTransport: DirectTransport {
    let transport: any ClientTransport
    let operationID: String

    func send(_ request: HTTPRequest, body: [UInt8]) async throws -> (HTTPResponse, [UInt8]) {
        let (base, operation) = try Self.split(request)
        let (response, responseBody) = try await transport.send(operation, body: body.isEmpty ? nil : HTTPBody(body), baseURL: base,
                                                                operationID: operationID)
        return (response, try await Self.collect(responseBody))
    }

    /// The origin as a base URL, and the request with its path alone.
    static func split(_ request: HTTPRequest) throws -> (URL, HTTPRequest) {
        guard let scheme = request.scheme, let authority = request.authority, let base = URL(string: scheme + "://" + authority) else {
            throw SignCoreError(.invalidURL, "the request needs a scheme and an authority")
        }
        var operation = request
        operation.scheme = nil
        operation.authority = nil
        return (base, operation)
    }

    static func collect(_ body: HTTPBody?) async throws -> [UInt8] {
        guard let body else { return [] }
        return try await [UInt8](collecting: body, upTo: SigningClient.maxBodyLimit)
    }
}
