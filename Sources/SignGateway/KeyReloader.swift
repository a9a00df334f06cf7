import Foundation
import Logging
import ServiceLifecycle
import SignCore
import UnixSignals

/// Keeps the verifier's keys those of the key files: checked every `interval` seconds (and at
/// once on SIGHUP), reloaded when a file's content changed (a digest of its bytes: a file
/// rewritten in place at the same size and time is seen too) or it was replaced. A set that
/// fails to load is logged and the keys in use stay, so a half-written file never empties the set.
struct KeyReloader: Service {
    let files: [String]
    let allowPrivateKeys: Bool
    let interval: Duration
    let verifier: Verifier
    let logger: Logger
    /// Told the outcome of every reload (readiness and metrics).
    let reported: @Sendable (Bool) -> Void

    /// Loads the files' keys together (a key id in two files is refused).
    static func load(_ files: [String], allowPrivateKeys: Bool) throws(SignCoreError) -> KeySet {
        var set = KeySet()
        for file in files {
            let keys = try KeySet(jwksFile: file, allowPrivateKeys: allowPrivateKeys)
            for id in keys.ids { if let key = keys.key(id: id) { try set.add(key) } }
        }
        return set
    }

    /// What identifies a version of the files: the inode and a SHA-256 of the bytes (streamed
    /// from the file, never held: key files hold secrets). Files are at most 1 MiB.
    static func fingerprint(_ files: [String]) -> [String] {
        files.map { file in
            var info = stat()
            guard stat(file, &info) == 0, let content = try? WHash.ofFile(atPath: file) else { return "missing" }
            return "\(info.st_ino):\(content.whash)"
        }
    }

    func run() async throws {
        await Self.watch(files, every: interval) {
            do throws(SignCoreError) {
                let keys = try Self.load(files, allowPrivateKeys: allowPrivateKeys)
                verifier.replaceKeys(keys)
                reported(true)
                logger.notice("keys reloaded", metadata: ["signd.keys": "\(keys.count)"])
            } catch {
                reported(false)
                logger.error("keys not reloaded; the previous keys stay in use", metadata: ["signd.reason": "\(error.detail)"])
            }
        }
    }

    /// Calls `reload` when the files' content changed (checked every `interval`) and on every
    /// SIGHUP, until a graceful shutdown.
    static func watch(_ files: [String], every interval: Duration, _ reload: @escaping @Sendable () -> Void) async {
        var loaded = fingerprint(files)
        let (ticks, tick) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let listener = Task { for await _ in hangups { tick.yield(true) } }
        let timer = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                tick.yield(false)
            }
        }
        defer { listener.cancel(); timer.cancel() }
        await withGracefulShutdownHandler {
            for await forced in ticks {
                let now = fingerprint(files)
                guard forced || now != loaded else { continue }
                loaded = now
                reload()
            }
        } onGracefulShutdown: {
            tick.finish()
        }
    }
}
