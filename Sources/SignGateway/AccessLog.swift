import Foundation
import HTTPTypes
import Hummingbird
import Logging
import SignHTTP

/// One line per request when its response starts (`signd.access`, at `info`), and the request
/// metrics (`EntryMiddleware`, around every stage after the route and the client address). The
/// line has the method, the route pattern the policy chose (never the path or the query: URLs
/// carry secrets), the status, the refusal's code when there is one, the time to the response
/// head and the client's address. Nothing of the token, the body or other fields.
struct AccessLog {
    typealias Context = GatewayRequestContext
    let metrics: GatewayMetrics
    let enabled: Bool

    func answered(_ request: Request, with response: Response, context: Context, started: ContinuousClock.Instant) {
        // The refusal's code when signd refused; an upstream's own `signcore-error` is its business.
        let code = context.upstreamAnswered.withLockedValue { $0 } ? nil : response.headers[Refusal.errorField]
        finish(request, context: context, status: response.status.code, code: code, started: started)
    }

    /// A handler's error becomes its response further out; counted as Hummingbird answers it.
    func failed(_ request: Request, with error: any Error, context: Context, started: ContinuousClock.Instant) {
        finish(request, context: context, status: (error as? any HTTPResponseError)?.status.code ?? 500, code: nil, started: started)
    }

    private func finish(_ request: Request, context: Context, status: Int, code: String?, started: ContinuousClock.Instant) {
        // When the connection cut the request short, its own answer is what the client got (499: none).
        let (status, code) = context.cutShort.status.map { ($0, nil) } ?? (status, code)
        let elapsed = ContinuousClock.now - started
        metrics.request(status: status, elapsed: elapsed)
        guard enabled, context.logger.logLevel <= .info else { return }
        var metadata: Logger.Metadata = [
            "signd.method": .string(request.method.rawValue),
            "signd.route": .string(context.route),
            "signd.status": .stringConvertible(status),
            "signd.ms": .string(String(format: "%.3f", Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)),
        ]
        if let client = context.clientAddress { metadata["signd.client"] = .string(client.description) }
        // The refusal's name only (the field is `name;code=..;advice=..`).
        if let code { metadata["signd.code"] = .string(String(code.prefix { $0 != ";" })) }
        context.logger.info("request", metadata: metadata)
    }
}
