import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

/// The `next` of an OpenAPI client middleware, sending through AsyncHTTPClient as the AHC
/// transport does (the body collected, up to 1 MiB each way).
public func openAPITransport(_ http: HTTPClient) -> @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?) {
    { request, body, baseURL in
        var outgoing = HTTPClientRequest(url: baseURL.absoluteString + (request.path ?? ""))
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields { outgoing.headers.add(name: field.name.rawName, value: field.value) }
        if let body { outgoing.body = .bytes(ByteBuffer(bytes: try await [UInt8](collecting: body, upTo: 1 << 20))) }
        let response = try await http.execute(outgoing, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        var fields = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        return (HTTPResponse(status: .init(code: Int(response.status.code)), headerFields: fields), HTTPBody(Array(buffer: bytes)))
    }
}
