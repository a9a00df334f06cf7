import Foundation

/// How many times something happened (a handler served a request), counted from any task.
public final class CallCount: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var value = 0

    public init() {}

    public func add() {
        lock.lock()
        value += 1
        lock.unlock()
    }

    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
