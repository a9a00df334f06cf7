internal import CSignBytes
#if canImport(Darwin)
import Darwin
#endif

/// A value reached only under a lock: the `Mutex` of the Synchronization module, which needs
/// macOS 15 / iOS 18, for every platform SignCore declares (Package.swift). `os_unfair_lock` on
/// Apple platforms, elsewhere a futex word (`sc_lock`: a free lock is taken and released inline,
/// without the calls of a `pthread_mutex_t`); lock and value live in memory of their own, so the
/// wrapper may move. The tools and tests of this package use it too (`@_spi`).
@_spi(SignCoreTools)
public struct Locked<Value: ~Copyable>: ~Copyable {
    #if canImport(Darwin)
    private typealias Primitive = os_unfair_lock
    #else
    private typealias Primitive = UInt32
    #endif

    private let lock: UnsafeMutablePointer<Primitive>
    private let value: UnsafeMutablePointer<Value>

    public init(_ initial: consuming Value) {
        lock = .allocate(capacity: 1)
        #if canImport(Darwin)
        lock.initialize(to: os_unfair_lock())
        #else
        lock.initialize(to: 0)  // free
        #endif
        value = .allocate(capacity: 1)
        value.initialize(to: initial)
    }

    deinit {
        lock.deinitialize(count: 1)
        lock.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    public borrowing func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        #if canImport(Darwin)
        os_unfair_lock_lock(lock)
        defer { os_unfair_lock_unlock(lock) }
        #else
        sc_lock(lock)
        defer { sc_unlock(lock) }
        #endif
        return try body(&value.pointee)
    }
}

/// Sendable when its value is: the lock makes the access safe, not the value's own type.
extension Locked: @unchecked Sendable where Value: ~Copyable & Sendable {}
