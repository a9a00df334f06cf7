internal import CSignBytes
#if canImport(Darwin)
import Darwin
#endif

/// A 64-bit word shared between threads without a lock (CSignBytes' compiler atomics; the
/// Synchronization module's `Atomic` needs macOS 15 / iOS 18). Its memory is its own, so the
/// wrapper may move. Orderings as named; `relaxed` where the value is a count or a hint.
@_spi(SignCoreTools)
public struct AtomicWord: ~Copyable, @unchecked Sendable {
    private let word: UnsafeMutablePointer<Int64>

    public init(_ initial: Int64) {
        word = .allocate(capacity: 1)
        word.initialize(to: initial)
    }

    deinit { word.deallocate() }

    public func load() -> Int64 { sc_atomic_load_relaxed(word) }
    public func store(_ value: Int64) { sc_atomic_store_relaxed(word, value) }
    /// Acquiring and releasing.
    func exchange(_ value: Int64) -> Int64 { sc_atomic_exchange(word, value) }
    public func add(_ value: Int64) { _ = sc_atomic_fetch_add_relaxed(word, value) }

    /// Replaces `expected` with `desired`; otherwise returns what the word held instead.
    func compareExchange(expected: Int64, desired: Int64) -> (exchanged: Bool, original: Int64) {
        var original = expected
        let exchanged = sc_atomic_compare_exchange_relaxed(word, &original, desired) != 0
        return (exchanged, original)
    }
}
