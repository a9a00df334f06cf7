import Foundation
import HTTPTypes
import OpenAPIRuntime
import SignCore
import SignHTTP

/// Signs every request a generated OpenAPI client sends (SPEC §4), with a fresh nonce each time
/// it is called. Put it last in the client's middlewares (nearest the transport): a retry
/// middleware before it then gets a new signature for every attempt.
///
/// The URL signed is the one the transports send: the base URL's scheme, authority and path
/// followed by the operation's path and query. A body that can be read more than once is hashed
/// by reading it once and sent as it is; a single-pass body (a stream) is collected, up to
/// `maxBufferedBody` bytes, so it can be hashed and still sent (and resent).
public struct SigningMiddleware: ClientMiddleware {
    public let signer: Signer
    public let names: SignHeaderNames
    public let maxBufferedBody: Int

    public init(signer: Signer, names: SignHeaderNames = .standard, maxBufferedBody: Int = 16 << 20) {
        self.signer = signer
        self.names = names
        self.maxBufferedBody = maxBufferedBody
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
        let headers = try await signer.signAsync(method: try RequestMethod(token: request.method.rawValue),
                                                 url: try Self.url(of: request, baseURL: baseURL), bodyWHash: hasher.finalize(),
                                                 headers: request.headerFields.map { HeaderField($0.name.rawName, $0.value) })
        var signed = request
        signed.headerFields[names.whash] = headers.whash
        signed.headerFields[names.wtoken] = headers.wtoken
        return try await next(signed, body, baseURL)
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
