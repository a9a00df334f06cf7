@_spi(SignCoreTools) import SignCore

/// A kind of value a `SigningClient` keeps per origin for its policies: a type with the value's
/// type, used as the key (the pattern of SwiftUI's environment keys).
public protocol OriginStateKey {
    associatedtype Value: Sendable
}

/// What a client keeps for one origin (scheme and authority, lower case): values its policies
/// store between requests, such as a token that lets requests skip a challenge.
public final class OriginState: Sendable {
    /// `scheme://authority`, lower case.
    public let origin: String
    public let values = StateValues()

    init(origin: String) { self.origin = origin }

    public subscript<Key: OriginStateKey>(_ key: Key.Type) -> Key.Value? {
        get { values[key] }
        set { values[key] = newValue }
    }

    /// Reads and changes the value of `key` atomically (set it to nil to remove it).
    public func update<Key: OriginStateKey, Result>(_ key: Key.Type, _ body: (inout Key.Value?) -> Result) -> Result {
        values.update(key, body)
    }
}

/// Values by key type, safe to use from any task; `update` reads and writes one value under one
/// lock. An origin's state, and one exchange's.
public final class StateValues: Sendable {
    private let values = Locked<[ObjectIdentifier: any Sendable]>([:])

    public init() {}

    public subscript<Key: OriginStateKey>(_ key: Key.Type) -> Key.Value? {
        get { values.withLock { $0[ObjectIdentifier(key)] as? Key.Value } }
        set { values.withLock { $0[ObjectIdentifier(key)] = newValue } }
    }

    public func update<Key: OriginStateKey, Result>(_ key: Key.Type, _ body: (inout Key.Value?) -> Result) -> Result {
        values.withLock { values in
            var value = values[ObjectIdentifier(key)] as? Key.Value
            defer { values[ObjectIdentifier(key)] = value }
            return body(&value)
        }
    }
}
