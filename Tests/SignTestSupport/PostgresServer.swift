import Foundation
import Logging
import PostgresNIO

/// A real PostgreSQL server for one test, from Debian's `postgresql` package (scripts/setup
/// installs it): initdb in a temporary folder, a free loopback port, stopped and removed by
/// `stop()`. As root (CI) the server runs as the `postgres` user, which PostgreSQL requires.
public final class PostgresServer: Sendable {
    public let port: Int
    public let directory: String
    public let binaries: String
    public let user = "signcore"

    public enum Failure: Error, CustomStringConvertible {
        case notInstalled, command(String, Int32, String)
        public var description: String {
            switch self {
            case .notInstalled: "PostgreSQL's server is not installed (scripts/setup installs Debian's postgresql)"
            case .command(let what, let status, let output): "\(what) exited \(status): \(output)"
            }
        }
    }

    public static func start() async throws -> PostgresServer {
        try await offThePool { try startBlocking() }
    }

    private static func startBlocking() throws -> PostgresServer {
        let root = "/usr/lib/postgresql"
        guard let version = try? FileManager.default.contentsOfDirectory(atPath: root).sorted().last else { throw Failure.notInstalled }
        let server = PostgresServer(port: try freePort(), directory: NSTemporaryDirectory() + "signcore-pg-\(UUID().uuidString)",
                                    binaries: "\(root)/\(version)/bin")
        try FileManager.default.createDirectory(atPath: server.directory, withIntermediateDirectories: true)
        if getuid() == 0 { try run("/bin/chown", ["postgres:postgres", server.directory]) }
        try server.asOwner("initdb", ["-D", server.directory + "/data", "-U", server.user, "-A", "trust", "--no-sync", "-E", "UTF8"])
        try server.startAgainBlocking()
        return server
    }

    private init(port: Int, directory: String, binaries: String) {
        self.port = port
        self.directory = directory
        self.binaries = binaries
    }

    /// Starts the server (again, after `kill()`), on the same port, and waits until it accepts connections.
    public func startAgain() async throws {
        try await offThePool { try self.startAgainBlocking() }
    }

    private func startAgainBlocking() throws {
        let options = "-p \(port) -c listen_addresses=127.0.0.1 -c unix_socket_directories=\(directory) -c fsync=off -c max_connections=100"
        try asOwner("pg_ctl", ["-D", directory + "/data", "-l", directory + "/log", "-o", options, "-w", "-t", "30", "start"])
    }

    /// Stops the server at once, as a crash would (connections cut, no checkpoint).
    public func kill() async throws {
        try await offThePool { try self.asOwner("pg_ctl", ["-D", self.directory + "/data", "-m", "immediate", "-w", "stop"]) }
    }

    /// Stops every process of the server (SIGSTOP: the postmaster and each backend) or lets
    /// them go on (SIGCONT): a server that is there but answers nothing, as a stalled disk or a
    /// frozen VM looks to its clients.
    public func stall(_ stalled: Bool) throws {
        let pidFile = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
        guard let postmaster = pidFile.split(separator: "\n").first.flatMap({ Int32($0) }) else { throw Failure.notInstalled }
        // The postmaster first, so it forks no backend while its children are found; then its
        // children, scanned until a scan finds no new one.
        _ = Foundation.kill(postmaster, stalled ? SIGSTOP : SIGCONT)
        var signalled: Set<Int32> = [postmaster]
        while true {
            let children = Self.children(of: postmaster).subtracting(signalled)
            if children.isEmpty { break }
            for pid in children { _ = Foundation.kill(pid, stalled ? SIGSTOP : SIGCONT) }
            signalled.formUnion(children)
        }
    }

    /// The processes whose parent is `parent` (from /proc).
    private static func children(of parent: Int32) -> Set<Int32> {
        var children: Set<Int32> = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            // "pid (name) state ppid ...": the parent is the second field after the name.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == parent { children.insert(pid) }
        }
        return children
    }

    public func stop() {
        try? asOwner("pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    public var configuration: PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(host: "127.0.0.1", port: port, username: user, password: nil,
                                                         database: "postgres", tls: .disable)
        configuration.options.connectTimeout = .seconds(2)
        return configuration
    }

    private func asOwner(_ tool: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(binaries)/\(tool)"] + arguments)
        } else {
            try Self.run("\(binaries)/\(tool)", arguments)
        }
    }

    /// Runs a tool to its end with posix_spawn and waitpid (Foundation's Process waits on a run
    /// loop that test threads do not run). Its output goes to a file, not a pipe: `pg_ctl start`
    /// leaves the server holding the descriptors it was given.
    private static func run(_ executable: String, _ arguments: [String]) throws {
        let outputPath = NSTemporaryDirectory() + "signcore-pg-output-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?  // an opaque pointer there, a struct in glibc
        let environment = _NSGetEnviron().pointee
        #else
        var actions = posix_spawn_file_actions_t()
        let environment = environ
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environment)
        guard spawned == 0 else { throw Failure.command(executable, spawned, "could not start") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard exitStatus == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failure.command(URL(fileURLWithPath: executable).lastPathComponent + " " + (arguments.first ?? ""), exitStatus, text)
        }
    }
}

/// A loopback TCP port nothing listens on now (the kernel's pick for port 0).
public func freePort() throws -> Int {
    #if canImport(Darwin)
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #else
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)  // an enum in glibc
    #endif
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Runs `body` with a PostgresClient for `server`, running while `body` does.
public func withPostgresClient<T: Sendable>(_ server: PostgresServer, _ body: @Sendable (PostgresClient) async throws -> T) async throws -> T {
    let client = PostgresClient(configuration: server.configuration, backgroundLogger: Logger(label: "pg", factory: { _ in SwiftLogNoOpLogHandler() }))
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { await client.run(); return nil }
        defer { group.cancelAll() }
        return try await body(client)
    }
}
