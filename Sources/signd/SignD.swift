import ArgumentParser
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SignCore
import SignGateway

/// signd's entry point. Swift's tasks run on SwiftNIO's event loops, not on a pool of their own:
/// a request's middleware then runs on the thread that read it and writes to the upstream
/// connection on that thread too, with no hop between two pools (docs/SIGND.md, "Speed").
@main
enum SignDMain {
    static func main() async {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        await SignD.main()
    }
}

/// signd: the verifying reverse proxy, run from one configuration file (README "signd").
struct SignD: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signd",
        abstract: "A verifying reverse proxy: requests signed with SignCore are verified, then forwarded upstream.")

    @Option(name: .shortAndLong, help: "The configuration file (JSON).")
    var config: String

    @Flag(help: "Check the configuration and the keys, then exit.")
    var check = false

    @Flag(help: "Create the PostgreSQL replay store's table and index, then exit.")
    var createSchema = false

    @Option(help: "Revoke this registered device key in the PostgreSQL registry, then exit.")
    var revokeDevice: String?

    /// A bad configuration: its one-line reason on standard error and exit 78 (EX_CONFIG), no
    /// usage text (the command line was right).
    static func refuse(_ error: SignCoreError) -> ExitCode {
        FileHandle.standardError.write(Data("signd: \(error.detail)\n".utf8))
        return ExitCode(78)
    }

    func run() async throws {
        let settings: GatewayConfiguration
        do {
            settings = try GatewayConfiguration.load(path: config)
        } catch {
            throw Self.refuse(error)
        }
        let level = Logger.Level(rawValue: settings.logLevel) ?? .info  // checked when parsed
        LoggingSystem.bootstrap { label in
            var handler = JSONLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "signd")
        let gateway: Gateway
        do {
            gateway = try Gateway(configuration: settings, logger: logger) { port in
                // The origin tokens are verified for: a client signing for another scheme, host or port
                // is refused whashMismatch (a first try over http:// against the https default).
                let origin = "\(settings.origin.scheme)://\(settings.origin.authority ?? "<the request's Host>")"
                logger.notice("listening", metadata: ["signd.port": "\(port)", "signd.upstream": "\(settings.upstream ?? "none: forward auth only")",
                                                      "signd.origin": "\(origin)"])
            }
        } catch {
            throw Self.refuse(error)
        }
        if check {
            print("signd: configuration OK, \(gateway.verifier.keys.count) keys, verifying for \(settings.origin.scheme)://\(settings.origin.authority ?? "<the request's Host>")")
            return
        }
        if createSchema {
            do {
                try await gateway.createSchema()
            } catch let error as SignCoreError {
                throw Self.refuse(error)
            }
            print("signd: the replay store's schema is in place")
            return
        }
        if let keyID = revokeDevice {
            do {
                let revoked = try await gateway.revokeDevice(keyID: keyID)
                print(revoked ? "signd: device key revoked" : "signd: no active device key has this id")
            } catch let error as SignCoreError {
                throw Self.refuse(error)
            }
            return
        }
        let group = ServiceGroup(configuration: .init(services: [gateway], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
