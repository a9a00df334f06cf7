@_spi(SignCoreTools) import SignCore

/// Where registered device keys live (ATTEST.md §9.1), shared by every node of a fleet. It is
/// also the verifiers' key source: a key registered on any node verifies on every node. Every
/// write is one atomic step of the store (insert if absent, a conditional update), never a read
/// then a write, so concurrent requests of one device lose no counter.
public protocol DeviceRegistry: KeySource {
    /// Stores `record` if no key with its id is registered; the record the registry then holds
    /// (the earlier one when the key was registered already: registering twice changes nothing),
    /// and whether it was stored now.
    func register(_ record: DeviceRecord) async throws(SignCoreError) -> (record: DeviceRecord, inserted: Bool)
    /// The record of `keyID`, or nil.
    func device(keyID: String) async throws(SignCoreError) -> DeviceRecord?
    /// Checks `counter` against the key's window and records it (ATTEST.md §9.5), with `now` as
    /// its last seen, in one atomic step. Throws `deviceUnknown`, `deviceRevoked` or the
    /// counter's refusal; `unavailable` when the store cannot answer.
    func observe(keyID: String, counter: UInt64, now: UInt64) async throws(SignCoreError)
    /// Marks the key revoked: true when it was active. It stops verifying on every node at once.
    func revoke(keyID: String) async throws(SignCoreError) -> Bool
    /// Binds a platform key to the SignCore key (`thumbprint`) it answers for, in one atomic step:
    /// true when it is bound to that key now (bound here, or already); false when it is bound to
    /// another. Throws `deviceUnknown` for a key that is not registered.
    func bind(keyID: String, to thumbprint: [UInt8]) async throws(SignCoreError) -> Bool
    /// Where the registry announces a key registered or revoked, on this node or (for a shared
    /// store) any other: key caches subscribe to it.
    var changes: DeviceChanges { get }
}

extension DeviceRegistry {
    /// The verifier's lookup: a registered key that signs requests, with its status.
    public func record(id: String) async throws(SignCoreError) -> KeyRecord? {
        try await device(keyID: id)?.keyRecord()
    }
}

/// Announcements of registered and revoked keys (a key id; nil: anything may have changed, after
/// the registry lost its feed for a while). Handlers run on the announcing task: keep them short
/// (a key cache's `invalidate`).
public final class DeviceChanges: Sendable {
    private let handlers = Locked<[@Sendable (String?) -> Void]>([])

    public init() {}

    public func subscribe(_ handler: @escaping @Sendable (String?) -> Void) {
        handlers.withLock { $0.append(handler) }
    }

    /// Makes `cache` forget a key as soon as it changes.
    public func invalidate(_ cache: KeyCache) {
        subscribe { id in
            if let id { cache.invalidate(id: id) } else { cache.invalidateAll() }
        }
    }

    public func announce(_ keyID: String?) {
        for handler in handlers.withLock({ $0 }) { handler(keyID) }
    }
}

/// The registry of one process: enough for a single node, and the reference the PostgreSQL
/// registry is tested against. Bounded: registering past `capacity` is `overloaded`.
public final class InMemoryDeviceRegistry: DeviceRegistry {
    public let capacity: Int
    public let changes = DeviceChanges()
    private let records = Locked<[String: DeviceRecord]>([:])

    public init(capacity: Int = 1_000_000) {
        self.capacity = max(1, capacity)
    }

    public func register(_ record: DeviceRecord) async throws(SignCoreError) -> (record: DeviceRecord, inserted: Bool) {
        let (stored, inserted) = try records.withLock { (records) throws(SignCoreError) -> (DeviceRecord, Bool) in
            if let held = records[record.keyID] { return (held, false) }
            guard records.count < capacity else { throw SignCoreError(.overloaded, "the device registry is full") }
            records[record.keyID] = record
            return (record, true)
        }
        if inserted { changes.announce(record.keyID) }
        return (stored, inserted)
    }

    public func bind(keyID: String, to thumbprint: [UInt8]) async throws(SignCoreError) -> Bool {
        try records.withLock { (records) throws(SignCoreError) -> Bool in
            guard var record = records[keyID] else { throw SignCoreError(.deviceUnknown, "no device key has this id") }
            if let bound = record.boundKey { return bound == thumbprint }
            record.boundKey = thumbprint
            records[keyID] = record
            return true
        }
    }

    public func device(keyID: String) async throws(SignCoreError) -> DeviceRecord? {
        records.withLock { $0[keyID] }
    }

    public func observe(keyID: String, counter: UInt64, now: UInt64) async throws(SignCoreError) {
        try records.withLock { (records) throws(SignCoreError) in
            guard var record = records[keyID] else { throw SignCoreError(.deviceUnknown, "no device key has this id") }
            guard record.status.verifies else { throw SignCoreError(.deviceRevoked, "the device key has been revoked") }
            if let error = record.counter.observe(counter).error { throw error }
            record.lastSeen = max(record.lastSeen, now)
            records[keyID] = record
        }
    }

    public func revoke(keyID: String) async throws(SignCoreError) -> Bool {
        let revoked = records.withLock { records in
            guard var record = records[keyID], record.status != .revoked else { return false }
            record.status = .revoked
            records[keyID] = record
            return true
        }
        if revoked { changes.announce(keyID) }
        return revoked
    }

    /// Keys held, revoked ones included.
    public var count: Int { records.withLock { $0.count } }
}
