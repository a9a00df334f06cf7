import Logging
import PostgresNIO
@_spi(SignCoreTools) import SignCore

/// What every SignCore store on PostgreSQL shares (the replay guard today; device keys,
/// challenges and rate limits next): statements that fail closed within a timeout, group commit
/// of concurrent records (`BatchQueue`), and schema versions with migrations.
///
/// **Fail closed**: a statement that fails or does not answer within `timeout` throws
/// `unavailable` (HTTP 503, retry later), with what went wrong and nothing of its values; a store
/// then refuses, never lets a request through. The client's pool reconnects by itself.
public struct PostgresStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger
    /// How long one statement may take before it is refused `unavailable`.
    public let timeout: Duration

    /// - Parameter client: a `PostgresClient` that the caller runs (`await client.run()`, or in a
    ///   `ServiceGroup`); the store only sends statements through it.
    public init(client: PostgresClient, logger: Logger, timeout: Duration = .seconds(2)) {
        self.client = client
        self.logger = logger
        self.timeout = timeout
    }

    /// Runs `query` within the timeout and decodes each row with `decode`; `what` names the
    /// statement in the error (`"record the nonces"`).
    public func rows<Row: Sendable>(_ query: PostgresQuery, _ what: String,
                                    decode: @escaping @Sendable (PostgresRow) throws -> Row) async throws(SignCoreError) -> [Row] {
        do {
            return try await withTimeout(timeout) { [client, logger] in
                var rows: [Row] = []
                for try await row in try await client.query(query, logger: logger) { rows.append(try decode(row)) }
                return rows
            }
        } catch {
            throw SignCoreError(.unavailable, "the store could not \(what) (\(Self.describe(error)))")
        }
    }

    /// Runs `query` within the timeout; the first column of its first row as an integer (0
    /// when it returns none).
    @discardableResult
    public func run(_ query: PostgresQuery, _ what: String) async throws(SignCoreError) -> Int {
        try await rows(query, what) { row in (try? row.decode(Int.self)) ?? 0 }.first ?? 0
    }

    /// What went wrong, without anything of the query's values (PSQLError's description can
    /// carry the statement's text but not its bind parameters).
    public static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return "server: \(message)" }
            return "\(error.code)"
        }
        if error is TimeoutError { return "no answer in time" }
        if let error = error as? SignCoreError { return error.detail }
        return String(describing: type(of: error))
    }

    /// Whether `name` is a plain lower-case SQL identifier, optionally schema-qualified: the one
    /// kind of name a store writes into a statement (values always travel as bind parameters).
    public static func isPlainIdentifier(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count) && parts.allSatisfy { part in
            (1...63).contains(part.utf8.count) && part.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) }
                && !(part.utf8.first.map { $0 >= 0x30 && $0 <= 0x39 } ?? true)
        }
    }
}

struct TimeoutError: Error {}

/// Runs `body`, and throws `TimeoutError` once `timeout` has passed, whether or not `body` has
/// returned: a statement to a server that has stopped answering (stalled, not gone) may not end
/// on cancellation, so the caller is never made to wait for it. `body` is cancelled and left to
/// end in the background (its connection is then the pool's to close or reuse).
func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = FirstOutcome<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            outcome.await(continuation)
            let work = Task {
                do { outcome.resume(.success(try await body())) } catch { outcome.resume(.failure(error)) }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                work.cancel()
                outcome.resume(.failure(TimeoutError()))
            }
            outcome.onResume { work.cancel(); timer.cancel() }
        }
    } onCancel: {
        outcome.resume(.failure(CancellationError()))
    }
}

/// The first of several outcomes, delivered once to one waiting continuation.
final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var done = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Locked(State())

    func await(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            if let early = state.early { state.done = true; return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// What to stop once an outcome is delivered (runs at once if one already was).
    func onResume(_ cleanup: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if now { cleanup() }
    }

    func resume(_ result: Result<T, any Error>) {
        let (continuation, cleanup): (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) = state.withLock { state in
            guard !state.done else { return (nil, nil) }
            guard let continuation = state.continuation else {
                if state.early == nil { state.early = result }  // before the continuation was handed over
                return (nil, nil)
            }
            state.done = true
            state.continuation = nil
            defer { state.cleanup = nil }
            return (continuation, state.cleanup)
        }
        continuation?.resume(with: result)
        cleanup?()
    }
}
