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

    /// The address of the current set's box, in memory of its own: a verifier reads it through
    /// `Current`, a plain value, so a verify takes no reference count on this shared object.
    private let current: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private let retired = Locked<[(box: Box, since: ContinuousClock.Instant)]>([])

    init(_ keys: KeySet) {
        current = .allocate(capacity: 1)
        current.initialize(to: Unmanaged.passRetained(Box(keys)).toOpaque())
    }

    deinit {
        Self.box(atomicLoadPointerAcquire(current)).release()
        current.deallocate()
    }

    /// The box a slot points to: never nil, the slot always holds a retained box.
    private static func box(_ pointer: UnsafeMutableRawPointer?) -> Unmanaged<Box> {
        guard let pointer else { preconditionFailure("a key store slot is never empty") }
        return Unmanaged.fromOpaque(pointer)
    }

    /// The reader's handle: valid while this store is alive.
    var reader: Current { Current(slot: current) }

    struct Current: @unchecked Sendable {
        let slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
        /// The current set, unretained: valid for at least `retiredLifetime` after a replacement.
        var unretained: Unmanaged<Box> { KeyStore.box(atomicLoadPointerAcquire(slot)) }
    }

    /// A retained copy of the current set.
    var keys: KeySet { reader.unretained.takeUnretainedValue().keys }

    func replace(with keys: KeySet) {
        let fresh = Unmanaged.passRetained(Box(keys)).toOpaque()
        let old = Self.box(atomicExchangePointer(current, fresh)).takeRetainedValue()
        let now = ContinuousClock.now
        retired.withLock { list in
            list.removeAll { now - $0.since >= Self.retiredLifetime }
            list.append((old, now))
        }
    }
}
