import Hummingbird
import SignHTTP

/// signd's first stages, in the order they run, as one middleware: the route is decided
/// (`GatewayRoutes.decide`), the client placed (`TrustedProxies.placeClient`), then, inside the
/// access log (`AccessLog`), the host and target checked (`RequestTarget`) and the health paths
/// answered (`HealthEndpoints`), before the signature middleware and the proxy. One middleware
/// rather than five: each of Hummingbird's middlewares is an `async` layer, and each such layer
/// costs a request a few executor hops (docs/SIGND.md, "The gateway benchmark").
struct EntryMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let routes: GatewayRoutes
    let proxies: TrustedProxies
    let accessLog: AccessLog
    let target: RequestTarget
    let health: HealthEndpoints

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        routes.decide(request, into: &context)
        proxies.placeClient(of: request, into: &context)
        let started = ContinuousClock.now
        let announcesBody = RequestTarget.announcesBody(request)
        if let refusal = target.refusal(of: request, announcesBody: announcesBody, context: context) {
            if announcesBody { await RequestTarget.stopReading(request.body) }
            accessLog.answered(request, with: refusal, context: context, started: started)
            return refusal
        }
        if let answer = health.answer(request) {
            accessLog.answered(request, with: answer, context: context, started: started)
            return answer
        }
        let response: Response
        do {
            response = RequestTarget.closingAfterRefusal(try await next(request, context), announcesBody: announcesBody)
        } catch {
            accessLog.failed(request, with: error, context: context, started: started)
            throw error
        }
        accessLog.answered(request, with: response, context: context, started: started)
        return response
    }
}
