import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import ServiceLifecycle
import SignCore
import SignHTTP
import SignHTTPSignatures
import SignHummingbird
import SignAttest
import SignPostgres

/// signd: a verifying reverse proxy. Requests are answered at the health path, verified as the
/// route policy says (SignatureMiddleware), then forwarded upstream with the verified identity
/// (ProxyMiddleware). Runs as a Service: graceful shutdown stops accepting, lets requests in
/// flight finish, then closes the upstream and database connections.
public final class Gateway: Service {
    public let configuration: GatewayConfiguration
    public let verifier: Verifier
    let logger: Logger
    let postgres: PostgresClient?
    let postgresGuard: PostgresReplayGuard?
    let signature: SignatureMiddleware<GatewayRequestContext, SignatureFormatsVerifier>
    /// Web Bot Auth's directory fetcher, when configured.
    let directoryClient: KeyDirectoryClient?
    let redemptions: PostgresRedemptionStore?
    /// The device registry on PostgreSQL, whose notifications signd listens to (nil in memory).
    let deviceRegistry: PostgresDeviceRegistry?
    let routes: GatewayRoutes
    /// nil for a signd that answers forward auth alone.
    let upstream: UpstreamClient.Endpoint?
    /// The listener's certificate, when signd terminates TLS.
    let certificate: ServerCertificate?
    let origin: ServerOrigin
    let names: SignHeaderNames
    let identity: ProxyMiddleware.IdentityFields
    let trustedProxies: [IPNetwork]
    let metrics = GatewayMetrics()
    let monitor: StatusMonitor
    let onListening: @Sendable (Int) async -> Void
    let onMetricsListening: @Sendable (Int) async -> Void

    /// Checks the configuration and loads the keys; nothing listens until `run`.
    /// - Parameters:
    ///   - onListening: called with the port once signd listens (a `listen` port of 0 picks a
    ///     free one).
    ///   - onMetricsListening: the same for the metrics listener.
    public init(configuration: GatewayConfiguration, logger: Logger, onListening: @escaping @Sendable (Int) async -> Void = { _ in },
                onMetricsListening: @escaping @Sendable (Int) async -> Void = { _ in }) throws(SignCoreError) {
        self.configuration = configuration
        self.logger = logger
        self.onListening = onListening
        self.onMetricsListening = onMetricsListening
        _ = try Self.address(configuration.listen, member: "listen")
        if let metrics = configuration.metrics { _ = try Self.address(metrics.listen, member: "metrics.listen") }
        if let text = configuration.upstream {
            guard let endpoint = UpstreamClient.Endpoint(text) else {
                throw SignCoreError(.invalidConfiguration, "configuration: upstream is http(s)://host[:port], without a path")
            }
            upstream = endpoint
        } else {
            upstream = nil
        }
        certificate = try configuration.tls.map { tls throws(SignCoreError) in
            try ServerCertificate(chainFile: tls.certificateChain, keyFile: tls.privateKey)
        }
        let keys = try KeyReloader.load(configuration.keys.files, allowPrivateKeys: configuration.keys.allowPrivateKeys)
        let replayGuard: any ReplayGuard
        switch configuration.replay.store {
        case .memory:
            replayGuard = try InMemoryReplayGuard(capacity: configuration.replay.capacity, maxShare: configuration.replay.maxShare)
            postgres = nil
            postgresGuard = nil
        case .postgres:
            guard let settings = configuration.replay.postgres else {
                throw SignCoreError(.invalidConfiguration, "configuration: replay.postgres is needed for the postgres store")
            }
            var pg = PostgresClient.Configuration(host: settings.host, port: settings.port, username: settings.username,
                                                  password: try settings.passwordFile.map(Self.readPassword), database: settings.database,
                                                  tls: .disable)
            pg.options.maximumConnections = max(1, settings.connections)
            pg.options.connectTimeout = .milliseconds(Int64(settings.timeout * 1000))
            let client = PostgresClient(configuration: pg, backgroundLogger: logger)
            var guardSettings = PostgresReplayGuard.Configuration()
            guardSettings.table = settings.table
            guardSettings.timeout = .milliseconds(Int64(settings.timeout * 1000))
            guardSettings.retention = max(guardSettings.retention, 2 * configuration.skew)
            let store = try PostgresReplayGuard(client: client, configuration: guardSettings, logger: logger)
            replayGuard = store
            postgres = client
            postgresGuard = store
        }
        // Registered device keys (docs/ATTEST.md §9): found by the verifier through a key cache that
        // forgets a key as soon as any node registers or revokes it.
        let devices = try Self.devices(configuration, postgres: postgres, timeout: postgresGuard?.configuration.timeout, logger: logger)
        deviceRegistry = devices?.registry as? PostgresDeviceRegistry
        var keyCache: KeyCache?
        if let devices, let settings = configuration.attestation?.devices {
            let cache = try KeyCache(source: devices.registry, capacity: settings.cacheCapacity)
            devices.registry.changes.invalidate(cache)
            keyCache = cache
        }
        verifier = try Verifier(keys: keys, keyCache: keyCache, replayGuard: replayGuard, skew: configuration.skew,
                                maxLifetime: configuration.maxLifetime)
        origin = try Self.origin(configuration)
        names = SignHeaderNames(whash: try Self.fieldName(configuration.headerNames.whash), wtoken: try Self.fieldName(configuration.headerNames.wtoken))
        let fields = configuration.identityHeaders
        identity = .init(keyID: try Self.fieldName(fields.keyID), account: try Self.fieldName(fields.account),
                         algorithm: try Self.fieldName(fields.algorithm), verdict: try Self.fieldName(fields.verdict),
                         attestation: try Self.fieldName(fields.attestation))
        trustedProxies = configuration.trustedProxies.compactMap(IPNetwork.init)  // each checked when parsed
        monitor = StatusMonitor(verifier: verifier, store: postgresGuard, upstream: upstream, interval: .seconds(2), metrics: metrics)
        routes = try GatewayRoutes(configuration: configuration)
        let attestation: AttestationGate?
        if let settings = configuration.attestation {
            let store: any RedemptionStore
            switch settings.store {
            case .memory:
                store = InMemoryRedemptionStore(capacity: settings.capacity)
                redemptions = nil
            case .postgres:
                guard let postgres else {
                    throw SignCoreError(.invalidConfiguration, "configuration: attestation.store postgres needs replay.store postgres (the same database)")
                }
                var storeSettings = PostgresRedemptionStore.Configuration()
                storeSettings.table = settings.table
                storeSettings.timeout = postgresGuard?.configuration.timeout ?? .seconds(2)
                let postgresStore = try PostgresRedemptionStore(client: postgres, configuration: storeSettings, logger: logger)
                store = postgresStore
                redemptions = postgresStore
            }
            let keys: AttestationKeys
            do { keys = try AttestationKeys(jwksFile: settings.keys) } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: attestation.keys: \(error.detail)")
            }
            var challenges: [ChallengePolicy] = []
            for (index, challenge) in settings.challenges.enumerated() {
                let member = "attestation.challenges[\(index)]"
                do {
                    let levels = try GatewayConfiguration.levels(challenge.levels, member: member + ".levels")
                    switch challenge.kind {
                    case .proofOfWork:
                        challenges.append(try ChallengePolicy(difficulty: challenge.difficulty, count: challenge.count, levels: levels,
                                                              ttl: challenge.ttl, minElapsed: challenge.minElapsed))
                    case .device:
                        challenges.append(try ChallengePolicy.device(levels: levels, ttl: challenge.ttl))
                    }
                } catch {
                    throw SignCoreError(.invalidConfiguration, "configuration: \(member): \(error.detail)")
                }
            }
            let gate = try AttestationGate(attestor: Attestor(keys: keys, redemptions: store, skew: settings.skew, tokenTTL: settings.tokenTTL,
                                                              devices: devices),
                                           challenges: challenges,
                                           names: AttestationFieldNames(challenge: try Self.fieldName(settings.challengeField),
                                                                        token: try Self.fieldName(settings.tokenField),
                                                                        counter: try Self.fieldName(settings.devices?.counterField ?? "signcore-counter")),
                                           endpoint: settings.endpoint,
                                           deviceEndpoint: settings.devices?.endpoint ?? AttestationGate.defaultDeviceEndpoint)
            attestation = gate
        } else {
            attestation = nil
            redemptions = nil
        }
        // Rate limits (docs/ATTEST.md §10): offers and passes under the attestation keys.
        var rateLimits: RateLimitGate?
        if let settings = configuration.rateLimits {
            let fields = settings.fields
            let gate = try RateLimitGate(limiter: RateLimiter(capacity: settings.capacity), attestor: attestation?.attestor,
                                         names: BypassFieldNames(type: try Self.fieldName(fields.type), response: try Self.fieldName(fields.response),
                                                                 siteKey: try Self.fieldName(fields.siteKey), keyID: try Self.fieldName(fields.keyId)))
            do { try gate.validate(routes.rateLimits) } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: rateLimits: \(error.detail) (offers need the attestation section, and a device's bypass its devices)")
            }
            rateLimits = gate
        }
        // Web Bot Auth's key directories (docs/HTTPSIG.md §7.3): fetched from the allowed origins alone.
        var directories: KeyDirectories?
        if let settings = configuration.webBotAuth {
            do {
                let roots = try settings.trustRoots.map { try NIOSSLCertificate.fromPEMFile($0) }
                let origins = Set(settings.directories.compactMap { SignatureAgent.origin(of: $0) })
                let client = try KeyDirectoryClient(origins: origins, trustRoots: roots)
                directories = try KeyDirectories(allowed: settings.directories, transport: client, timeout: .seconds(settings.fetchTimeout))
                directoryClient = client
            } catch let error as SignCoreError {
                throw SignCoreError(.invalidConfiguration, "configuration: webBotAuth: \(error.detail)")
            } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: webBotAuth.trustRoots is not a PEM file of certificates")
            }
        } else {
            directoryClient = nil
        }
        signature = SignatureMiddleware(verifier: SignatureFormatsVerifier(verifier, names: names, directories: directories), origin: origin, policy: routes.policy,
                                        body: routes.defaultBody, attestation: attestation, rateLimits: rateLimits, metricsFactory: metrics.factory)
    }

    /// Serves until a graceful shutdown: one Hummingbird application running signd's services
    /// (the PostgreSQL client, the key reloader, the status monitor, the metrics listener).
    public func run() async throws {
        let configuration = self.configuration
        let (host, port) = try Self.address(configuration.listen, member: "listen")
        let upstreamClient: UpstreamClient?
        do {
            upstreamClient = try upstream.map {
                try UpstreamClient(endpoint: $0, maxConnections: configuration.upstreamConnections,
                                   connectTimeout: .seconds(configuration.upstreamConnectTimeout))
            }
        } catch {
            throw SignCoreError(.invalidConfiguration, "configuration: upstream: TLS could not be set up (\(error))")
        }
        let router = Router(context: GatewayRequestContext.self)
        if let forwardAuth = configuration.forwardAuth {
            var own: Set<String> = [forwardAuth.path, configuration.healthPath, configuration.readyPath]
            if let attestation = signature.attestation { own.formUnion([attestation.endpoint, attestation.deviceEndpoint]) }
            router.add(middleware: ForwardAuthMiddleware(path: forwardAuth.path, style: forwardAuth.proxy == .nginx ? .nginx : .forwarded,
                                                         proxies: trustedProxies, origin: origin, routes: routes,
                                                         refusedFields: GatewayFields.overrides.union(identity.names.map(GatewayFields.spelling)),
                                                         ownPaths: own))
        }
        router.add(middleware: EntryMiddleware(routes: routes, proxies: TrustedProxies(trustedProxies, field: configuration.trustedProxyField),
                                               accessLog: AccessLog(metrics: metrics, enabled: configuration.accessLog),
                                               target: RequestTarget(routes: routes),
                                               health: HealthEndpoints(healthPath: configuration.healthPath, readyPath: configuration.readyPath,
                                                                       monitor: monitor)))
        router.add(middleware: signature)
        if configuration.forwardAuth != nil { router.add(middleware: ForwardAuthAnswer(identity: identity)) }
        if let upstreamClient {
            router.add(middleware: ProxyMiddleware(client: upstreamClient, origin: origin, names: names,
                                                   attestationToken: signature.attestation?.names.token,
                                                   identity: identity, routes: routes, metrics: metrics))
        }
        let limits = configuration.limits
        // The idle timer sits above the HTTP decoder: a head sent a byte at a time completes no
        // request part, so slow headers are closed as silent connections are.
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [AbsoluteFormGuard.Installer()],
            idleTimeout: .seconds(limits.idleTimeout),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes))
        // HTTP/1.1 is served by signd's own connection handler (`GatewayHTTP1Channel`); HTTP/2
        // streams by Hummingbird's, with the same responder.
        let responder = router.buildResponder()
        var app = Application(responder: responder,
                              server: Self.server(http1, responder: responder, tls: configuration.tls, certificate: certificate, limits: limits, logger: logger),
                              configuration: .init(address: .hostname(host, port: port), serverName: nil,
                                                   availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections)),
                              onServerRunning: { [onListening] channel in await onListening(channel.localAddress?.port ?? 0) },
                              logger: logger)
        if let postgresGuard {
            app.beforeServerStarts { [logger, redemptions, deviceRegistry] in
                try await Self.createSchema(logger: logger) { () throws(SignCoreError) in
                    try await postgresGuard.createSchema()
                    try await redemptions?.createSchema()
                    try await deviceRegistry?.createSchema()
                }
            }
        }
        if let postgres { app.addServices(postgres) }
        if let deviceRegistry { app.addServices(DeviceListener(registry: deviceRegistry)) }
        app.addServices(KeyReloader(files: configuration.keys.files, allowPrivateKeys: configuration.keys.allowPrivateKeys,
                                    interval: .seconds(configuration.keys.reloadInterval), verifier: verifier, logger: logger,
                                    reported: { [monitor] in monitor.keysReloaded(ok: $0) }),
                        monitor)
        if let settings = configuration.metrics { app.addServices(try metricsApplication(settings)) }
        if let certificate, let tls = configuration.tls {
            app.addServices(CertificateReloader(certificate: certificate, interval: .seconds(tls.reloadInterval), logger: logger))
        }
        defer {
            upstreamClient?.shutdown()
            directoryClient?.shutdown()
        }
        try await app.run()
    }

    /// The Prometheus text exposition of `metrics.path` on a listener of its own.
    func metricsApplication(_ settings: GatewayConfiguration.Metrics) throws(SignCoreError) -> some Service {
        let (host, port) = try Self.address(settings.listen, member: "metrics.listen")
        let router = Router()
        let registry = metrics.registry
        router.get(RouterPath(stringLiteral: settings.path)) { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: nil),
                           onServerRunning: { [onMetricsListening] channel in await onMetricsListening(channel.localAddress?.port ?? 0) },
                           logger: logger)
    }

    /// Creates the PostgreSQL replay store's table and index, then returns: `signd --create-schema`,
    /// for deployments where signd's own database role may not create tables (signd also does it
    /// on start, and a table already there is left as it is).
    public func createSchema() async throws {
        guard let postgres, let postgresGuard else {
            throw SignCoreError(.invalidConfiguration, "configuration: replay.store is not postgres; there is no schema to create")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await postgres.run() }
            defer { group.cancelAll() }
            try await postgresGuard.createSchema()
            try await redemptions?.createSchema()
            try await deviceRegistry?.createSchema()
        }
    }

    /// Revokes a registered device key in the fleet's PostgreSQL registry (`signd --revoke-device`):
    /// true when it was active. Every node refuses it at once (docs/ATTEST.md §9.1).
    public func revokeDevice(keyID: String) async throws -> Bool {
        guard let postgres, let deviceRegistry else {
            throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.store is not postgres; there is no registry to write")
        }
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { await postgres.run(); return false }
            defer { group.cancelAll() }
            return try await deviceRegistry.revoke(keyID: keyID)
        }
    }

    // MARK: - From the configuration

    static func origin(_ configuration: GatewayConfiguration) throws(SignCoreError) -> ServerOrigin {
        guard ["http", "https"].contains(configuration.origin.scheme) else {
            throw SignCoreError(.invalidConfiguration, "configuration: origin.scheme is http or https")
        }
        if let authority = configuration.origin.authority {
            do throws(SignCoreError) { try ServerOrigin.validate(authority: authority) } catch {
                throw SignCoreError(.invalidConfiguration, "configuration: origin.authority is host[:port]")
            }
        }
        return ServerOrigin(scheme: configuration.origin.scheme, authority: configuration.origin.authority)
    }

    static func fieldName(_ name: String) throws(SignCoreError) -> HTTPField.Name {
        guard let field = HTTPField.Name(name) else { throw SignCoreError(.invalidConfiguration, "configuration: \(name) is not a header field name") }
        return field
    }

    static func address(_ listen: String, member: String) throws(SignCoreError) -> (host: String, port: Int) {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw SignCoreError(.invalidConfiguration, "configuration: \(member) is host:port")
        }
        return (String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
    }

    static func readPassword(_ path: String) throws(SignCoreError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SignCoreError(.invalidConfiguration, "cannot read the password file \(path)")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
    }

    /// The schema, on start: the database may still be starting too, so it is tried for 30 s.
    static func createSchema(logger: Logger, _ create: () async throws(SignCoreError) -> Void) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let failure: SignCoreError
            do {
                try await create()
                return
            } catch {
                failure = error
            }
            guard ContinuousClock.now < deadline else { throw failure }
            logger.warning("replay store not reachable yet; retrying", metadata: ["signd.reason": "\(failure.detail)"])
            try await Task.sleep(for: .seconds(1))
        }
    }
}

extension Gateway {
    /// The device keys of `attestation.devices` (docs/ATTEST.md §9), in memory or on the replay
    /// store's PostgreSQL; nil when none are configured.
    static func devices(_ configuration: GatewayConfiguration, postgres: PostgresClient?, timeout: Duration?,
                        logger: Logger) throws(SignCoreError) -> Devices? {
        guard let settings = configuration.attestation?.devices else { return nil }
        let registry: any DeviceRegistry
        switch settings.store {
        case .memory:
            // One node's registry in a fleet would give each node its own counter window (no
            // clone detection) and keys only the node that registered them knows.
            guard postgres == nil else {
                throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.store is postgres when replay.store is (a fleet shares one registry)")
            }
            registry = InMemoryDeviceRegistry(capacity: settings.capacity)
        case .postgres:
            guard let postgres else {
                throw SignCoreError(.invalidConfiguration, "configuration: attestation.devices.store postgres needs replay.store postgres (the same database)")
            }
            var registrySettings = PostgresDeviceRegistry.Configuration()
            registrySettings.table = settings.table
            registrySettings.timeout = timeout ?? .seconds(2)
            registry = try PostgresDeviceRegistry(client: postgres, configuration: registrySettings, logger: logger)
        }
        return Devices(registry: registry, policy: try settings.policy())
    }
}

/// Listens for the fleet's registrations and revocations (`PostgresDeviceRegistry.run`) while
/// signd serves.
struct DeviceListener: Service {
    let registry: PostgresDeviceRegistry

    func run() async throws {
        try await cancelWhenGracefulShutdown { await registry.run() }
    }
}
