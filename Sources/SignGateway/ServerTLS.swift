import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import NIOTLS
import ServiceLifecycle
@_spi(SignCoreTools) import SignCore

/// signd's certificate (docs/SIGND.md "TLS"): the chain and key of `tls`, checked to belong
/// together, and replaced without a restart when the files change. Every handshake takes the
/// current pair (NIOSSL's context callback), so connections open keep theirs and new ones get the
/// new one; a pair that fails to load is logged and the one in use stays.
final class ServerCertificate: Sendable {
    struct Pair: Sendable {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        /// Counted from 0, the pair the TLS configuration was made with.
        let generation: Int
    }

    let chainFile: String
    let keyFile: String
    private let current: Locked<Pair>

    init(chainFile: String, keyFile: String) throws(SignCoreError) {
        self.chainFile = chainFile
        self.keyFile = keyFile
        current = Locked(try Self.load(chainFile: chainFile, keyFile: keyFile, generation: 0))
    }

    /// Reads the pair; the key must be the leaf certificate's (the first in the chain).
    static func load(chainFile: String, keyFile: String, generation: Int) throws(SignCoreError) -> Pair {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(chainFile)
        } catch {
            throw SignCoreError(.invalidConfiguration, "configuration: tls.certificateChain is not a PEM file of certificates")
        }
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw SignCoreError(.invalidConfiguration, "configuration: tls.privateKey is not a PEM private key")
        }
        guard !chain.isEmpty else {
            throw SignCoreError(.invalidConfiguration, "configuration: tls.certificateChain holds no certificate")
        }
        // The two files are often replaced one after the other: a key of another certificate is
        // refused, never served (every handshake would fail). BoringSSL checks the pair as a
        // context is made with it.
        do {
            _ = try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)))
        } catch {
            throw SignCoreError(.invalidConfiguration, "configuration: tls.privateKey is not the key of the chain's first certificate")
        }
        return Pair(chain: chain, key: key, generation: generation)
    }

    /// TLS 1.2 and 1.3, the current pair at each handshake; ALPN `h2` and `http/1.1` with HTTP/2.
    func configuration(http2: Bool) -> TLSConfiguration {
        let first = pair
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: first.chain.map { .certificate($0) },
                                                                     privateKey: .privateKey(first.key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
        configuration.sslContextCallback = { [self] _, promise in
            let pair = self.pair
            guard pair.generation > 0 else { return promise.succeed(.noChanges) }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = pair.chain.map { .certificate($0) }
            override.privateKey = .privateKey(pair.key)
            promise.succeed(override)
        }
        return configuration
    }

    /// Loads the files again; the pair in use stays when they do not load.
    func reload() throws(SignCoreError) {
        let generation = pair.generation + 1
        let pair = try Self.load(chainFile: chainFile, keyFile: keyFile, generation: generation)
        current.withLock { $0 = pair }
    }

    /// The pair in use.
    var pair: Pair { current.withLock { $0 } }
}

/// Reloads signd's certificate when its files change, as `KeyReloader` does the keys.
struct CertificateReloader: Service {
    let certificate: ServerCertificate
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await KeyReloader.watch([certificate.chainFile, certificate.keyFile], every: interval) {
            do throws(SignCoreError) {
                try certificate.reload()
                logger.notice("certificate reloaded")
            } catch {
                logger.error("certificate not reloaded; the one in use stays", metadata: ["signd.reason": "\(error.detail)"])
            }
        }
    }
}

/// A TLS listener's connections must finish their handshake within `timeout`: until then no
/// HTTP handler (and no idle timer) is on the connection, which a client could hold open
/// forever by sending nothing.
struct HandshakeDeadlineChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let timeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(HandshakeDeadline(timeout: timeout), position: .after(try pipeline.handler(type: NIOSSLServerHandler.self)))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async { await base.handle(value: value, logger: logger) }
}

/// Closes the connection when the TLS handshake has not completed in time. On an HTTP/2
/// connection it stays, to close it in time after signd's GOAWAY too: Hummingbird sends GOAWAY
/// and a PING to an idle connection and closes it only when the PING is answered, so a client
/// that never answers would hold its place for ever. It reads the frame headers of what signd
/// writes (RFC 9113 §4.1), nothing else.
final class HandshakeDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = IOData
    let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// Frame reading, once HTTP/2 is negotiated: the header bytes of the frame being written, and
    /// the payload bytes still to pass.
    private var http2 = false
    private var header: [UInt8] = []
    private var payloadLeft = 0

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { timer?.cancel() }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent {
            timer?.cancel()
            timer = nil
            if negotiated == "h2" { http2 = true } else { context.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if http2, timer == nil, case .byteBuffer(let buffer) = unwrapOutboundIn(data) { read(buffer, context: context) }
        context.write(data, promise: promise)
    }

    /// Follows the frames written; at the first GOAWAY (type 7), the connection has `timeout` left.
    private func read(_ buffer: ByteBuffer, context: ChannelHandlerContext) {
        var bytes = buffer.readableBytesView[...]
        while !bytes.isEmpty {
            if payloadLeft > 0 {
                let skipped = min(payloadLeft, bytes.count)
                payloadLeft -= skipped
                bytes = bytes.dropFirst(skipped)
                continue
            }
            let taken = bytes.prefix(9 - header.count)
            header += taken
            bytes = bytes.dropFirst(taken.count)
            guard header.count == 9 else { return }
            payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
            let type = header[3]
            header.removeAll(keepingCapacity: true)
            if type == 7 {
                let channel = context.channel
                timer = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
                return
            }
        }
    }
}

extension Gateway {
    /// The server: plain HTTP/1.1, or TLS with HTTP/1.1 and (by ALPN) HTTP/2.
    static func server(_ http1: HTTP1Channel.Configuration, responder: RouterResponder<GatewayRequestContext>,
                       tls: GatewayConfiguration.TLS?, certificate: ServerCertificate?,
                       limits: GatewayConfiguration.Limits, logger: Logger) -> HTTPServerBuilder {
        let bodyRate = BodyRate(minimum: limits.minBodyRate, window: .seconds(limits.bodyRateWindow))
        let plain = GatewayHTTP1Channel(responder: responder, configuration: http1, bodyRate: bodyRate)
        guard let tls, let certificate else { return HTTPServerBuilder { _ in plain } }
        let handshake = TimeAmount.seconds(limits.idleTimeout)
        return HTTPServerBuilder { responder in
            var http2: HTTP2Channel?
            if tls.http2 {
                // A connection with no open stream is sent GOAWAY after the idle timeout, and closed
                // one timeout later whether or not the client answers (`HandshakeDeadline`).
                var stream = http1
                stream.additionalChannelHandlers = { [additional = http1.additionalChannelHandlers] in
                    additional() + [HTTP2StreamLimits(rate: bodyRate, sendTimeout: handshake, logger: logger)]
                }
                var configuration = HTTP2ChannelConfiguration(idleTimeout: .seconds(limits.idleTimeout), streamConfiguration: stream)
                configuration.gracefulCloseTimeout = .seconds(limits.idleTimeout)
                http2 = HTTP2Channel(responder: responder, configuration: configuration)
            }
            let context = try NIOSSLContext(configuration: certificate.configuration(http2: tls.http2))
            return HandshakeDeadlineChannel(base: GatewayTLSChannel(context: context, http1: plain, http2: http2, sendTimeout: handshake),
                                            timeout: handshake)
        }
    }

}

/// A TLS connection: HTTP/1.1 (negotiated by ALPN, or none negotiated) served by signd's own
/// connection handler, as on a plain listener; HTTP/2, when offered, by Hummingbird's, the
/// connection held to its own send timeout (`ConnectionSendTimeout`).
struct GatewayTLSChannel: ServerChildChannel {
    enum Negotiated: Sendable {
        case http1(GatewayHTTP1Channel.Value)
        case http2(HTTP2Channel.Value)
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let context: NIOSSLContext
    let http1: GatewayHTTP1Channel
    /// nil when `tls.http2` is off: the context offers `http/1.1` alone.
    let http2: HTTP2Channel?
    let sendTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(NIOSSLServerHandler(context: context))
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { [http1, http2, sendTimeout] result in
                switch (result, http2) {
                case (.negotiated("h2"), let http2?):
                    do {
                        try channel.pipeline.syncOperations.addHandler(ConnectionSendTimeout(timeout: sendTimeout, logger: logger))
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                    return http2.setup(channel: channel, logger: logger).map(Negotiated.http2)
                case (.negotiated("http/1.1"), _), (.fallback, _):
                    return http1.setup(channel: channel, logger: logger).map(Negotiated.http1)
                case (.negotiated, _):
                    // A protocol the context never offered.
                    return channel.close().flatMapThrowing { throw ChannelError.inappropriateOperationForState }
                }
            }
            try pipeline.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1(let connection): await http1.handle(value: connection, logger: logger)
            case .http2(let connection): await http2?.handle(value: connection, logger: logger)
            }
        } catch {
            logger.debug("TLS connection ended before its protocol was settled", metadata: ["error.type": "\(type(of: error))"])
        }
    }
}
