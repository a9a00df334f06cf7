import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import ServiceLifecycle
@_spi(SignCoreTools) import SignCore
import SignPostgres

/// Readiness, checked in the background every `interval` (so a flood of probes never reaches
/// the database or the upstream): keys loaded, the replay store answers within its timeout, the
/// upstream accepts a TCP connection. (A failed key reload is counted, not made unready: one bad
/// file pushed to a fleet must not take every instance out while the old keys still verify.) `readyPath` answers from
/// the last check; the metrics gauges follow it.
final class StatusMonitor: Service, Sendable {
    struct Status: Sendable {
        var checked = false
        var keys = 0
        var reloadOK = true
        var storeOK = false
        var upstreamOK = false
        var failing: [String] {
            guard checked else { return ["starting"] }
            // A failed reload keeps the keys in use, which still verify: it shows in the metrics and
            // the log, and makes signd unready only when no key is left.
            return (keys > 0 ? [] : ["keys"]) + (storeOK ? [] : ["store"]) + (upstreamOK ? [] : ["upstream"])
        }
    }

    let verifier: Verifier
    let store: PostgresReplayGuard?
    /// nil for a signd that answers forward auth alone.
    let upstream: (host: String, port: Int)?
    let interval: Duration
    let metrics: GatewayMetrics
    let state = Locked(Status())

    init(verifier: Verifier, store: PostgresReplayGuard?, upstream: UpstreamClient.Endpoint?, interval: Duration, metrics: GatewayMetrics) {
        self.verifier = verifier
        self.store = store
        self.upstream = upstream.map { ($0.host, $0.port) }
        self.interval = interval
        self.metrics = metrics
    }

    var status: Status { state.withLock { $0 } }

    /// Called by the key reloader after each attempt.
    func keysReloaded(ok: Bool) {
        state.withLock { $0.reloadOK = ok }
        if !ok { metrics.keyReloadFailures.increment() }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.check()
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    func check() async {
        let keys = verifier.keys.count
        var storeOK = true
        if let store {
            do { try await store.ping() } catch { storeOK = false }
        }
        var upstreamOK = true
        if let upstream { upstreamOK = await Self.connects(to: upstream, timeout: .seconds(1)) }
        let status = state.withLock { state in
            state.keys = keys
            state.storeOK = storeOK
            state.upstreamOK = upstreamOK
            state.checked = true
            return state
        }
        metrics.keys.set(to: Double(keys))
        metrics.storeUp.set(to: storeOK ? 1.0 : 0.0)
        metrics.upstreamUp.set(to: upstreamOK ? 1.0 : 0.0)
        metrics.ready.set(to: status.failing.isEmpty ? 1.0 : 0.0)
    }

    /// Whether a TCP connection to the upstream opens (then closed at once; nothing is sent).
    static func connects(to address: (host: String, port: Int), timeout: TimeAmount) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .connect(host: address.host, port: address.port).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }
}

/// Answers the health (liveness: signd serves requests) and readiness paths itself, before any
/// verification; never forwarded. Readiness is 200 when every check of the status monitor passed,
/// otherwise 503 naming the failing checks (`keys`, `store`, `upstream`, or `starting` before
/// the first check).
struct HealthEndpoints {
    let healthPath: String
    let readyPath: String
    let monitor: StatusMonitor

    /// The answer for a GET or HEAD of either path, or nil.
    func answer(_ request: Request) -> Response? {
        let path = request.uri.path
        guard path == healthPath || path == readyPath, request.method == .get || request.method == .head else { return nil }
        let headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        let status = monitor.status
        if path == healthPath {
            return Response(status: .ok, headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok","keys":\#(monitor.verifier.keys.count)}"#)))
        }
        let failing = status.failing
        let body = failing.isEmpty ? #"{"status":"ready"}"#
            : #"{"status":"unready","failing":[\#(failing.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        return Response(status: failing.isEmpty ? .ok : .serviceUnavailable, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
