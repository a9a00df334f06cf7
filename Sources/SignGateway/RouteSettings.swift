import Hummingbird
import NIOCore
import SignHTTP
import SignHummingbird

/// What a route decides beyond its signature requirement: how its body is read and how much of
/// it, and how long the upstream may take (a route's own settings, else the top-level ones).
struct RouteSettings: Sendable {
    let body: BodyHandling
    let upstreamTimeout: TimeAmount
}

/// The policy's rules with their settings, looked up once per request (`RouteMiddleware`).
struct GatewayRoutes: Sendable {
    let policy: RoutePolicy
    let defaults: RouteSettings
    /// By the rule's written form (`RoutePolicy.requirement`'s `route`): only routes with settings of their own.
    let byRoute: [String: RouteSettings]

    init(policy: RoutePolicy, configuration: GatewayConfiguration) {
        self.policy = policy
        defaults = RouteSettings(body: Self.handling(configuration.body), upstreamTimeout: .seconds(configuration.upstreamTimeout))
        var byRoute: [String: RouteSettings] = [:]
        var seen = Set<String>()
        for (rule, route) in zip(policy.rules, configuration.policy.routes) {
            // The first rule of a written form decides (RoutePolicy), so its settings do too; a
            // route's body members it does not set are the top-level ones.
            guard seen.insert(rule.description).inserted, route.body != nil || route.upstreamTimeout != nil else { continue }
            let body = GatewayConfiguration.Body(mode: route.body?.mode ?? configuration.body.mode,
                                                 limit: route.body?.limit ?? configuration.body.limit)
            byRoute[rule.description] = RouteSettings(body: Self.handling(body),
                                                      upstreamTimeout: route.upstreamTimeout.map { .seconds($0) } ?? defaults.upstreamTimeout)
        }
        self.byRoute = byRoute
    }

    static func handling(_ body: GatewayConfiguration.Body) -> BodyHandling {
        switch body.mode {
        case .buffered: .buffered(limit: body.limit)
        case .streamed: .streamed(limit: body.limit)
        }
    }

    func settings(for route: String) -> RouteSettings { byRoute.isEmpty ? defaults : byRoute[route] ?? defaults }
}

/// Finds the request's route once, first thing: the access log names it, the target check and
/// the proxy apply its body limit and upstream timeout.
struct RouteMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let routes: GatewayRoutes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let decision = routes.policy.decision(method: request.method, path: request.uri.path)
        context.route = decision.route
        context.routeDecision = decision
        // A path read under several rules gets no rule's own settings (SignatureMiddleware agrees).
        context.routeSettings = decision.ambiguous ? routes.defaults : routes.settings(for: decision.route)
        return try await next(request, context)
    }
}
