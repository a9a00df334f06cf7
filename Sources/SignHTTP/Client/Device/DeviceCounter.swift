#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(SignCoreTools) import SignCore
import SignAttest

/// A registered key's counter (docs/ATTEST.md §9.5): one up per request, from 1, never repeated
/// while its key lives. Kept in a file beside the key (mode 0600) when given one, written a block
/// ahead: the file holds the highest counter that may have been handed out, so a process that
/// stops (or crashes) resumes past every counter it sent, at the cost of a gap, which a server's
/// window accepts. Thread-safe.
public final class DeviceCounter: Sendable {
    /// Counters reserved per write of the file.
    public static let block: UInt64 = 1024

    private struct State {
        var next: UInt64
        var reserved: UInt64
    }

    public let path: String?
    private let state: Locked<State>

    /// A counter in memory only (from 1; a new process starts again, which a server refuses once
    /// the key has sent counters: keep it in a file for a key that outlives the process).
    public init() {
        path = nil
        state = Locked(State(next: 1, reserved: .max))
    }

    /// A counter kept in the file at `path` (created with mode 0600 when absent). Refuses
    /// (`invalidConfiguration`) a file that cannot be read or written, or does not hold a counter.
    public init(file path: String) throws(SignCoreError) {
        self.path = path
        let stored = try Self.load(path) ?? 0
        guard stored < CounterWindow.maximum - Self.block else { throw SignCoreError(.invalidConfiguration, "the device counter file is spent") }
        state = Locked(State(next: stored + 1, reserved: stored))
    }

    /// The next counter. Throws `invalidConfiguration` when the file cannot be written (a counter
    /// not kept could repeat after a restart) or the counter is spent (2^63 − 1).
    public func next() throws(SignCoreError) -> UInt64 {
        try state.withLock { (state) throws(SignCoreError) -> UInt64 in
            guard state.next <= CounterWindow.maximum else { throw SignCoreError(.invalidConfiguration, "the device counter is spent") }
            if state.next > state.reserved, let path {
                let reserved = min(CounterWindow.maximum, state.next - 1 + Self.block)
                try Self.save(reserved, to: path)
                state.reserved = reserved
            }
            defer { state.next += 1 }
            return state.next
        }
    }

    private static func load(_ path: String) throws(SignCoreError) -> UInt64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw SignCoreError(.invalidConfiguration, "cannot open the device counter file \(path)")
        }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0, count < bytes.count,
              let value = CounterWindow.counter(field: String(decoding: bytes[..<count].filter { $0 != 0x0A }, as: UTF8.self))
        else { throw SignCoreError(.invalidConfiguration, "the device counter file \(path) does not hold a counter") }
        return value
    }

    /// Writes `value` to a new file beside `path` (0600), synced, and renames it over `path`.
    private static func save(_ value: UInt64, to path: String) throws(SignCoreError) {
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw SignCoreError(.invalidConfiguration, "cannot write the device counter file \(path)") }
        let text = Array("\(value)\n".utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == text.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw SignCoreError(.invalidConfiguration, "cannot write the device counter file \(path)")
        }
        // The rename itself is durable once the folder is synced.
        let folder = open(path.contains("/") ? String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) : ".", O_RDONLY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }
}

