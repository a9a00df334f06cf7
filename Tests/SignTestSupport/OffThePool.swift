import Foundation

/// Runs blocking work (a child process waited for: initdb, pg_ctl, Python, openssl) on a thread of
/// its own. A test blocked on the cooperative pool holds one of its few threads (two on a 2-core
/// machine), which the servers under test in the same process need: two such waits at once
/// stalled every other test for seconds.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
