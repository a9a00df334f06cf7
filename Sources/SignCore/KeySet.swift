/// The keys a verifier accepts, by key id (SPEC §6.3). Several keys are active at once, so a
/// new key can be added before clients use it and the old one removed after they stop:
/// rotation without downtime.
public struct KeySet: Sendable {
    private var keys: [KeyID: SigningKey] = [:]
    /// The same keys in a list: a few keys (the usual case) are found faster by comparing ids
    /// than by hashing one.
    private var list: [SigningKey] = []
    private static let listLookupLimit = 8
    /// For more keys, an open-addressing index into `list` (position + 1; 0 is empty), at most
    /// half full, by `idHash` (built again when a removal shifts positions or it would pass half): a few dozen instructions a lookup, where a Dictionary's SipHash
    /// of a `KeyID` took hundreds. Unkeyed on purpose: lookups never insert, so a token's id
    /// can only walk the chains the operator's own key ids made.
    private var index: [Int32] = []

    public init() {}

    public init(_ keys: [SigningKey]) throws(SignCoreError) {
        for key in keys { try add(key) }
    }

    /// Parses a JWK Set (or a single JWK) for a verifier. A private Ed25519 or P-256 key (one
    /// with `d`) is refused (`invalidKey`) unless `allowPrivateKeys`: a verifier needs only the
    /// public half, and a private key on a server is one more place it can leak from. HMAC
    /// secrets are shared by nature and always allowed.
    public init(jwks: String, allowPrivateKeys: Bool = false) throws(SignCoreError) {
        try self.init(try JWK.parseKeys(jwks), allowPrivateKeys: allowPrivateKeys)
    }

    /// The same from bytes (the caller wipes them; secret members never become Strings).
    public init(jwksBytes: UnsafeRawBufferPointer, allowPrivateKeys: Bool = false) throws(SignCoreError) {
        try self.init(try JWK.parseKeys(bytes: jwksBytes), allowPrivateKeys: allowPrivateKeys)
    }

    private init(_ keys: [SigningKey], allowPrivateKeys: Bool) throws(SignCoreError) {
        if !allowPrivateKeys, keys.contains(where: { $0.algorithm != .hmacSHA256 && $0.canSign }) {
            throw SignCoreError(.invalidKey, "a verifier's key set holds a private key; pass its public half, or allow private keys")
        }
        try self.init(keys)
    }

    /// Adds a key; a second key with the same id is refused rather than silently replacing it.
    public mutating func add(_ key: SigningKey) throws(SignCoreError) {
        let id = KeyID(of: key)
        guard keys[id] == nil else { throw SignCoreError(.invalidKey, "the key set already has a key with this id") }
        keys[id] = key
        list.append(key)
        if list.count > Self.listLookupLimit, 2 * list.count <= index.count {
            Self.place(list.count, of: key, in: &index)  // room left: one insertion
        } else {
            reindex()  // first use or doubling: amortised O(1) per key
        }
    }

    @discardableResult
    public mutating func remove(id: String) -> SigningKey? {
        guard let id = KeyID(id), let removed = keys.removeValue(forKey: id) else { return nil }
        list.removeAll { $0 === removed }
        reindex()
        return removed
    }

    public func key(id: String) -> SigningKey? {
        guard let id = KeyID(id) else { return nil }
        return keys[id]
    }

    /// The key whose id has these bytes (the verifier's lookup, straight from the token bytes),
    /// without taking a reference (the set holds the key): on the verifier's path, shared by
    /// every thread, a reference count would be a contended cache line.
    func unretainedKey(id: UnsafeRawBufferPointer) -> Unmanaged<SigningKey>? {
        if list.count <= Self.listLookupLimit {
            return list.withUnsafeBufferPointer { list in
                for index in list.indices where bytesEqual(list[index].idBytes, id) {
                    return Unmanaged.passUnretained(list[index])
                }
                return nil
            }
        }
        return index.withUnsafeBufferPointer { index in
            list.withUnsafeBufferPointer { list in
                let mask = index.count - 1
                var place = Int(truncatingIfNeeded: Self.idHash(id)) & mask
                while index[place] != 0 {
                    let key = list[Int(index[place]) - 1]
                    if bytesEqual(key.idBytes, id) { return Unmanaged.passUnretained(key) }
                    place = (place + 1) & mask
                }
                return nil
            }
        }
    }

    /// A new index, at most a quarter full, so the next keys added fit without another.
    private mutating func reindex() {
        guard list.count > Self.listLookupLimit else { return index = [] }
        var size = 16
        while size < 4 * list.count { size *= 2 }
        var fresh = [Int32](repeating: 0, count: size)
        for (position, key) in list.enumerated() { Self.place(position + 1, of: key, in: &fresh) }
        index = fresh
    }

    /// Puts `list` position `number` (1-based) at `key`'s first free place in `index`.
    private static func place(_ number: Int, of key: SigningKey, in index: inout [Int32]) {
        let mask = index.count - 1
        var place = Int(truncatingIfNeeded: idHash(key.idBytes)) & mask
        while index[place] != 0 { place = (place + 1) & mask }
        index[place] = Int32(number)
    }

    /// Every byte of an id (1–64), eight at a time, mixed by multiplication.
    static func idHash(_ id: UnsafeRawBufferPointer) -> UInt64 {
        var hash = UInt64(truncatingIfNeeded: id.count) &* 0x9E37_79B9_7F4A_7C15
        guard let base = id.baseAddress else { return hash }
        var offset = 0
        while offset < id.count {
            var word: UInt64 = 0
            let count = min(8, id.count - offset)
            if count == 8 {
                word = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            } else {
                for k in 0..<count { word |= UInt64(base.load(fromByteOffset: offset + k, as: UInt8.self)) << (8 * k) }
            }
            hash = (hash ^ word) &* 0xD6E8_FEB8_6659_FD93
            hash ^= hash >> 32
            offset += 8
        }
        return hash ^ hash >> 29
    }

    public var ids: [String] { keys.values.map(\.id).sorted() }
    public var count: Int { keys.count }
}

/// A key id in fixed storage (at most 64 bytes, SPEC §4.1), so a lookup allocates nothing.
struct KeyID: Hashable, Sendable {
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var count = 0

    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= SigningKey.maxKeyIDLength else { return nil }
        count = bytes.count
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
    }

    /// A key's own id, which its constructors hold to 1–64 bytes.
    init(of key: SigningKey) {
        count = key.idBytes.count
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: key.idBytes) }
    }

    init?(_ id: String) {
        var id = id
        guard let keyID = id.withUTF8({ KeyID(UnsafeRawBufferPointer($0)) }) else { return nil }
        self = keyID
    }

    static func == (a: KeyID, b: KeyID) -> Bool {
        a.count == b.count && withUnsafeBytes(of: a.words) { x in withUnsafeBytes(of: b.words) { y in bytesEqual(x, y) } }
    }

    var string: String {
        withUnsafeBytes(of: words) { String(decoding: UnsafeRawBufferPointer(rebasing: $0[..<count]), as: UTF8.self) }
    }

    func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: words) { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }
}

extension Unmanaged {
    /// Calls `body` with the object, taking no reference (the caller knows something else holds
    /// it): `_withUnsafeGuaranteedRef` with a typed throw.
    func withObject<R, E: Error>(_ body: (Instance) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = _withUnsafeGuaranteedRef { object in
            do throws(E) { return .success(try body(object)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
