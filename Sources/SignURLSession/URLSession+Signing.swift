import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import SignCore
import SignHTTP

extension URLSession {
    /// Sends `request` with `body`, signed (SPEC §4) with a fresh nonce for every attempt: the
    /// body is hashed in place (not copied) once, and sent as it is. `request` needs its scheme,
    /// authority and path (`HTTPRequest(method:url:)` sets them). A 503 is retried as `retry`
    /// says; any other response is returned as it is.
    public func signedData(for request: HTTPRequest, body: Data = Data(), signer: Signer, names: SignHeaderNames = .standard,
                           retry: RetryPolicy = RetryPolicy()) async throws -> (Data, HTTPResponse) {
        let whash = body.withUnsafeBytes { WHash.ofBody($0) }
        return try await send(request, whash: whash, signer: signer, names: names, retry: retry) { signed in
            try await body.isEmpty && RequestMethod(token: signed.method.rawValue).contentClass == .url
                ? data(for: signed) : upload(for: signed, from: body)
        }
    }

    /// Uploads a file as the body of `request`, signed: the file is hashed once in constant
    /// memory, then URLSession streams it from disk on every attempt.
    public func signedUpload(for request: HTTPRequest, fromFile file: URL, signer: Signer, names: SignHeaderNames = .standard,
                             retry: RetryPolicy = RetryPolicy()) async throws -> (Data, HTTPResponse) {
        let (whash, _) = try WHash.ofFile(atPath: file.path)
        return try await send(request, whash: whash, signer: signer, names: names, retry: retry) { signed in
            try await upload(for: signed, fromFile: file)
        }
    }

    private func send(_ request: HTTPRequest, whash: SHA256Digest, signer: Signer, names: SignHeaderNames, retry: RetryPolicy,
                      _ transfer: (HTTPRequest) async throws -> (Data, HTTPResponse)) async throws -> (Data, HTTPResponse) {
        try await retry.run { _ in
            var signed = request
            try await signer.signAsync(&signed, bodyWHash: whash, names: names)
            let (data, response) = try await transfer(signed)
            return ((data, response), response.status.code, response.headerFields[.retryAfter])
        }
    }
}
