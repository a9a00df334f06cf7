/// The keys a verifier accepts, by key id (SPEC §6.3). Several keys are active at once, so a
/// new key can be added before clients use it and the old one removed after they stop:
/// rotation without downtime.
public struct KeySet: Sendable {
    private var keys: [String: SigningKey] = [:]

    public init() {}

    public init(_ keys: [SigningKey]) throws(SignCoreError) {
        for key in keys { try add(key) }
    }

    /// Parses a JWK Set (or a single JWK).
    public init(jwks: String) throws(SignCoreError) {
        try self.init(try JWK.parseKeys(jwks))
    }

    /// Adds a key; a second key with the same id is refused rather than silently replacing it.
    public mutating func add(_ key: SigningKey) throws(SignCoreError) {
        guard keys[key.id] == nil else { throw SignCoreError(.invalidKey, "the key set already has a key with this id") }
        keys[key.id] = key
    }

    @discardableResult
    public mutating func remove(id: String) -> SigningKey? { keys.removeValue(forKey: id) }

    public func key(id: String) -> SigningKey? { keys[id] }

    public var ids: [String] { keys.keys.sorted() }
    public var count: Int { keys.count }
}
