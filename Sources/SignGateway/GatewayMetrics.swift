
import Prometheus

/// signd's metrics, in one Prometheus registry of its own (no process-wide bootstrap, so several
/// gateways in one process keep theirs apart), exposed on `metrics.listen` + `metrics.path`.
///
/// - `signcore_verifications_total{verdict,code}`, `signcore_verify_duration_seconds`: the
///   signature middleware's (SignatureAudit), through `factory`.
/// - `signd_requests_total{status}`, `signd_request_duration_seconds`: every request answered.
/// - `signd_upstream_responses_total{status}` (`status` is the upstream's, or `failed` and
///   `timeout`), `signd_upstream_duration_seconds`: until the upstream's response started.
/// - `signd_ready`, `signd_keys`, `signd_store_up`, `signd_upstream_up`: the status monitor's
///   last check; `signd_key_reload_failures_total`.
final class GatewayMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory
    let requestDuration: DurationHistogram
    let upstreamDuration: DurationHistogram
    let ready: Prometheus.Gauge
    let keys: Prometheus.Gauge
    let storeUp: Prometheus.Gauge
    let upstreamUp: Prometheus.Gauge
    let keyReloadFailures: Prometheus.Counter

    /// Latency buckets from 100 µs to 30 s.
    static let buckets: [Duration] = [.microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
                                      .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                                      .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30)]

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.buckets
        self.factory = factory
        requestDuration = registry.makeDurationHistogram(name: "signd_request_duration_seconds", buckets: Self.buckets,
                                                         help: "Time from a request's head to its response's head")
        upstreamDuration = registry.makeDurationHistogram(name: "signd_upstream_duration_seconds", buckets: Self.buckets,
                                                          help: "Time from forwarding a request to the upstream's response head")
        ready = registry.makeGauge(name: "signd_ready", help: "1 when every readiness check passed at the last check")
        keys = registry.makeGauge(name: "signd_keys", help: "Keys in the verifier's set")
        storeUp = registry.makeGauge(name: "signd_store_up", help: "1 when the replay store answered at the last check")
        upstreamUp = registry.makeGauge(name: "signd_upstream_up", help: "1 when the upstream accepted a connection at the last check")
        keyReloadFailures = registry.makeCounter(name: "signd_key_reload_failures_total", help: "Key file changes that failed to load")
    }

    func request(status: Int, elapsed: Duration) {
        registry.makeCounter(name: "signd_requests_total", labels: [("status", String(status))], help: "Requests answered, by status").increment()
        requestDuration.record(elapsed)
    }

    /// `status` is the upstream's status code, `failed` or `timeout`.
    func upstream(_ status: String, elapsed: Duration) {
        registry.makeCounter(name: "signd_upstream_responses_total", labels: [("status", status)],
                             help: "Upstream answers, by status, or failed and timeout").increment()
        upstreamDuration.record(elapsed)
    }
}
