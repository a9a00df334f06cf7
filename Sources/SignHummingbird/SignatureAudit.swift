import Logging
import Metrics
import SignCore
import SignHTTP

/// The verdicts, as audit lines and metrics. Lines carry the verdict, the code, the key id, the
/// account and the route pattern: never a token, a body, a URL or a header value. Accepted
/// requests log at `debug` (one line per request at WAF rates is the operator's choice), refusals
/// and monitored failures at `info`.
///
/// Metrics: `signcore_verifications_total` with dimensions `verdict` (accepted, refused,
/// monitored) and `code` (the error's name, `none` when accepted); `signcore_verify_duration`
/// (nanoseconds, every verdict but a streamed body's late mismatch).
struct SignatureAudit: Sendable {
    let counters: [String: Counter]
    let latency: Metrics.Timer
    let factory: any MetricsFactory

    static let label = "signcore_verifications_total"
    static let timerLabel = "signcore_verify_duration"

    init(factory: any MetricsFactory) {
        var counters = [String: Counter]()
        for verdict in ["refused", "monitored"] {
            for code in SignCoreError.Code.allCases {
                counters[verdict + code.name] = Counter(label: Self.label, dimensions: [("verdict", verdict), ("code", code.name)], factory: factory)
            }
        }
        counters["accepted"] = Counter(label: Self.label, dimensions: [("verdict", "accepted"), ("code", "none")], factory: factory)
        self.counters = counters
        latency = Metrics.Timer(label: Self.timerLabel, factory: factory)
        self.factory = factory
    }

    func accepted(_ verified: VerifiedIdentity, requirement: SignatureRequirement, route: String, logger: Logger, elapsed: Duration) {
        latency.record(duration: elapsed)
        counters["accepted"]?.increment()
        logger.debug("signature verified", metadata: [
            "signcore.verdict": "accepted", "signcore.route": .string(route), "signcore.policy": .string(requirement.rawValue),
            "signcore.key_id": .string(verified.keyID), "signcore.account": .string(verified.account),
            "signcore.algorithm": .string(verified.algorithm.rawValue),
        ])
    }

    /// A failed verification: refused under `require`, let through under `monitor`. `elapsed` is
    /// nil for a streamed body found not to match after the handler started.
    func refused(_ error: SignCoreError, requirement: SignatureRequirement, route: String, logger: Logger, elapsed: Duration?) {
        if let elapsed { latency.record(duration: elapsed) }
        let verdict = requirement == .require ? "refused" : "monitored"
        // A flow's own code has no counter made in advance: one is made (the factory keeps one per label and dimensions).
        (counters[verdict + error.code.name]
            ?? Counter(label: Self.label, dimensions: [("verdict", verdict), ("code", error.code.name)], factory: factory)).increment()
        var metadata: Logger.Metadata = [
            "signcore.verdict": .string(verdict), "signcore.route": .string(route), "signcore.policy": .string(requirement.rawValue),
            "signcore.code": .string(error.code.name), "signcore.reason": .string(error.detail),
        ]
        if error.code == .unknownKey, let keyID = error.keyID { metadata["signcore.key_id"] = .string(keyID) }
        logger.info(requirement == .require ? "request refused" : "request let through unverified (monitor)", metadata: metadata)
    }
}
