@_spi(SignCoreTools) import SignCore

/// A kind of value a `SigningClient` keeps per origin for its policies: a type with the value's
/// type, used as the key (the pattern of SwiftUI's environment keys).
public protocol OriginStateKey {
    associatedtype Value: Sendable
}

/// What a client keeps for one origin (scheme and authority, lower case): values its policies
/// store between requests, such as a token that lets requests skip a challenge. Safe to use from
/// any task; `update` reads and writes one value under one lock.
public final class OriginState: Sendable {
    /// `scheme://authority`, lower case.
    public let origin: String
    private let values = Locked<[ObjectIdentifier: any Sendable]>([:])

    init(origin: String) { self.origin = origin }

    public subscript<Key: OriginStateKey>(_ key: Key.Type) -> Key.Value? {
        get { values.withLock { $0[ObjectIdentifier(key)] as? Key.Value } }
        set { values.withLock { $0[ObjectIdentifier(key)] = newValue } }
    }

    /// Reads and changes the value of `key` atomically (set it to nil to remove it).
    public func update<Key: OriginStateKey, Result>(_ key: Key.Type, _ body: (inout Key.Value?) -> Result) -> Result {
        values.withLock { values in
            var value = values[ObjectIdentifier(key)] as? Key.Value
            defer { values[ObjectIdentifier(key)] = value }
            return body(&value)
        }
    }
}
