import NIOConcurrencyHelpers
import Prometheus

/// signd's metrics, in one Prometheus registry of its own (no process-wide bootstrap, so several
/// gateways in one process keep theirs apart), exposed on `metrics.listen` + `metrics.path`.
///
/// - `signcore_verifications_total{verdict,code}`, `signcore_verify_duration_seconds`: the
///   signature middleware's (SignatureAudit), through `factory`.
/// - `signd_requests_total{status}`, `signd_request_duration_seconds`: every request answered.
/// - `signd_upstream_responses_total{status}` (`status` is the upstream's, or `failed`,
///   `timeout`, `busy`, and `cancelled` when the client's connection gave up first),
///   `signd_upstream_duration_seconds`: until the upstream's response started.
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
    let requests: CounterFamily<Int>
    let upstreamResponses: CounterFamily<String>

    /// Latency buckets from 100 µs to 30 s.
    static let buckets: [Duration] = [.microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
                                      .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                                      .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30)]

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.buckets
        self.factory = factory
        requestDuration = registry.makeDurationHistogram(descriptor: Self.named("signd_request_duration_seconds",
                                                                                             "Time from a request's head to its response's head"),
                                                         buckets: Self.buckets)
        upstreamDuration = registry.makeDurationHistogram(descriptor: Self.named("signd_upstream_duration_seconds",
                                                                                              "Time from forwarding a request to the upstream's response head"),
                                                          buckets: Self.buckets)
        ready = registry.makeGauge(descriptor: Self.named("signd_ready", "1 when every readiness check passed at the last check"))
        keys = registry.makeGauge(descriptor: Self.named("signd_keys", "Keys in the verifier's set"))
        storeUp = registry.makeGauge(descriptor: Self.named("signd_store_up", "1 when the replay store answered at the last check"))
        upstreamUp = registry.makeGauge(descriptor: Self.named("signd_upstream_up", "1 when the upstream accepted a connection at the last check"))
        keyReloadFailures = registry.makeCounter(descriptor: Self.named("signd_key_reload_failures_total", "Key file changes that failed to load"))
        requests = CounterFamily { [registry] status in
            registry.makeCounter(descriptor: Self.named("signd_requests_total", "Requests answered, by status"), labels: [("status", String(status))])
        }
        upstreamResponses = CounterFamily { [registry] status in
            registry.makeCounter(descriptor: Self.named("signd_upstream_responses_total", "Upstream answers, by status, or failed and timeout"),
                                 labels: [("status", status)])
        }
    }

    /// A metric's full name and help text (no unit appended: the names carry theirs).
    static func named(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    func request(status: Int, elapsed: Duration) {
        requests.increment(status)
        requestDuration.record(elapsed)
    }

    /// `status` is the upstream's status code, `failed` or `timeout`.
    func upstream(_ status: String, elapsed: Duration) {
        upstreamResponses.increment(status)
        upstreamDuration.record(elapsed)
    }
}

/// The counters of one labelled family, each made on its label's first use and kept: the
/// registry's own lookup checks the name and help text again on every call, a few microseconds
/// a request (the label values are status codes and a few words, so the family stays small).
final class CounterFamily<Label: Hashable & Sendable>: Sendable {
    private let counters = NIOLockedValueBox<[Label: Prometheus.Counter]>([:])
    private let make: @Sendable (Label) -> Prometheus.Counter

    init(make: @escaping @Sendable (Label) -> Prometheus.Counter) {
        self.make = make
    }

    func increment(_ label: Label) {
        counters.withLockedValue { counters in
            if let counter = counters[label] { return counter }
            let counter = make(label)
            counters[label] = counter
            return counter
        }.increment()
    }
}
