import Synchronization

/// The key set a verifier reads, replaceable atomically while it serves (key rotation without
/// a new `Verifier`; the replay guard stays as it is).
///
/// Readers take no lock and no reference count: a verify loads the current set's address and
/// uses it for the few microseconds its synchronous checks take. A replaced set therefore
/// stays alive for a grace period (`retiredLifetime`) before it is released, on a later
/// replacement or when the store goes away.
final class KeyStore: @unchecked Sendable {
    final class Box: Sendable {
        let keys: KeySet
        init(_ keys: KeySet) { self.keys = keys }
    }

    /// How long a replaced key set stays alive after its replacement.
    static let retiredLifetime: Duration = .seconds(60)

    private let current: Atomic<UnsafeMutableRawPointer>
    private let retired = Mutex<[(box: Box, since: ContinuousClock.Instant)]>([])

    init(_ keys: KeySet) {
        current = Atomic(Unmanaged.passRetained(Box(keys)).toOpaque())
    }

    deinit {
        Unmanaged<Box>.fromOpaque(current.load(ordering: .acquiring)).release()
    }

    /// The current set, unretained: valid for at least `retiredLifetime` after a replacement.
    var unretained: Unmanaged<Box> { Unmanaged.fromOpaque(current.load(ordering: .acquiring)) }

    /// A retained copy of the current set.
    var keys: KeySet { unretained.takeUnretainedValue().keys }

    func replace(with keys: KeySet) {
        let fresh = Unmanaged.passRetained(Box(keys)).toOpaque()
        let old = Unmanaged<Box>.fromOpaque(current.exchange(fresh, ordering: .acquiringAndReleasing)).takeRetainedValue()
        let now = ContinuousClock.now
        retired.withLock { list in
            list.removeAll { now - $0.since >= Self.retiredLifetime }
            list.append((old, now))
        }
    }
}
