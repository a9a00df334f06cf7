import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOSSL
import SignCore
import SignHTTPSignatures

/// signd's transport for Web Bot Auth key directories (docs/HTTPSIG.md §7.3): one small pool of
/// its own upstream client per allowed origin, TLS verified against the system's roots (or the
/// configured ones), no redirect followed (the client follows none), the body read up to the
/// limit and the whole fetch bounded by the timeout.
final class KeyDirectoryClient: KeyDirectoryTransport {
    private let clients: [String: UpstreamClient]

    init(origins: Set<String>, trustRoots: [NIOSSLCertificate]?) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let trustRoots { tls.trustRoots = .certificates(trustRoots) }
        var clients: [String: UpstreamClient] = [:]
        for origin in origins {
            guard let endpoint = UpstreamClient.Endpoint(origin), endpoint.tls else {
                throw SignCoreError(.invalidConfiguration, "configuration: webBotAuth.directories are https origins")
            }
            clients[origin] = try UpstreamClient(endpoint: endpoint, maxConnections: 2, connectTimeout: .seconds(5), tlsConfiguration: tls)
        }
        self.clients = clients
    }

    func get(_ url: String, limit: Int, timeout: Duration) async throws -> (status: Int, fields: HTTPFields, body: [UInt8]) {
        guard let origin = SignatureAgent.origin(of: url), let client = clients[origin] else { throw UpstreamFailure.unreachable }
        let path = String(url.dropFirst(origin.count))
        return try await withThrowingTaskGroup(of: (status: Int, fields: HTTPFields, body: [UInt8])?.self) { group in
            group.addTask {
                var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path.isEmpty ? "/" : path)
                head.headers.add(name: "accept", value: KeyDirectory.contentType)
                let response = try await client.execute(head, body: nil, timeout: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000))
                var body: [UInt8] = []
                for try await chunk in response.body {
                    guard body.count + chunk.readableBytes <= limit else { throw SignCoreError(.bodyTooLarge, "a key directory over its limit") }
                    body += chunk.readableBytesView
                }
                var fields = HTTPFields()
                for header in response.head.headers {
                    if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
                }
                return (Int(response.head.status.code), fields, body)
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else { throw UpstreamFailure.timedOut }
            return answer
        }
    }

    func shutdown() { clients.values.forEach { $0.shutdown() } }
}
