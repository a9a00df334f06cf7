/// The keys a verifier accepts, by key id (SPEC §6.3). Several keys are active at once, so a
/// new key can be added before clients use it and the old one removed after they stop:
/// rotation without downtime.
public struct KeySet: Sendable {
    private var keys: [KeyID: SigningKey] = [:]
    /// The same keys in a list: a few keys (the usual case) are found faster by comparing ids
    /// than by hashing one.
    private var list: [SigningKey] = []
    private static let listLookupLimit = 8
    /// For more keys, an open-addressing index by `idHash`, at most half full (a quarter after
    /// it is built again, on a removal or when it would pass half). Each place is one cache line
    /// holding all a lookup reads: the id's hash, its length and first bytes, the key itself
    /// (unretained: `list` holds it) and where the key's secret states are. So a lookup in a
    /// large set, whose keys lie anywhere in memory and out of the caches, waits for one cache
    /// miss, its place, and starts loading the key and its states before it returns (README,
    /// Performance: many keys). Unkeyed on purpose: lookups never insert, so a token's id can
    /// only walk the chains the operator's own key ids made.
    private var index: [IndexPlace] = []

    /// `@unchecked Sendable`: its pointers reach keys `list` holds, which are immutable.
    struct IndexPlace: @unchecked Sendable {
        var hash: UInt64 = 0
        /// nil for an empty place.
        var key: Unmanaged<SigningKey>?
        /// The key's prepared secret states (empty when its backend has none to load).
        var secret = UnsafeRawBufferPointer(start: nil, count: 0)
        /// The id's length (first byte), then its first `inlineIDBytes` bytes.
        var id: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

        static let inlineIDBytes = 31

        init() {}

        init(hash: UInt64, key: SigningKey) {
            self.hash = hash
            self.key = Unmanaged.passUnretained(key)
            secret = key.preparedSecret
            let idBytes = key.idBytes
            withUnsafeMutableBytes(of: &id) { bytes in
                bytes[0] = UInt8(idBytes.count)
                let head = min(idBytes.count, Self.inlineIDBytes)
                UnsafeMutableRawBufferPointer(rebasing: bytes[1...head]).copyMemory(from: UnsafeRawBufferPointer(rebasing: idBytes[..<head]))
            }
        }

        /// Whether the place holds the key of `id`, whose `idHash` is `hash`: the hash, the length
        /// and the first bytes compared here, any further bytes in the key.
        @inline(__always)
        func holds(_ id: UnsafeRawBufferPointer, hash: UInt64) -> Bool {
            guard self.hash == hash, let key else { return false }
            let head = min(id.count, Self.inlineIDBytes)
            let inlineMatches = withUnsafeBytes(of: self.id) { inline in
                inline[0] == id.count && bytesEqual(UnsafeRawBufferPointer(rebasing: inline[1...head]), UnsafeRawBufferPointer(rebasing: id[..<head]))
            }
            guard inlineMatches, id.count > head else { return inlineMatches }
            return key.withObject { bytesEqual(UnsafeRawBufferPointer(rebasing: $0.idBytes[head...]), UnsafeRawBufferPointer(rebasing: id[head...])) }
        }
    }

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
        let id = key.keyID
        guard keys[id] == nil else { throw SignCoreError(.invalidKey, "the key set already has a key with this id") }
        keys[id] = key
        list.append(key)
        if list.count > Self.listLookupLimit, 2 * list.count <= index.count {
            Self.place(key, in: &index)  // room left: one insertion
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
    /// every thread, a reference count would be a contended cache line. A key found has its
    /// object and secret states on their way into the cache (`prefetch`). (A small set's lookup
    /// is inlined into the verifier, where a call would cost a frame of its own per verify; a
    /// large set's is a call, `indexedKey`.)
    @inline(__always)
    func unretainedKey(id: UnsafeRawBufferPointer) -> Unmanaged<SigningKey>? {
        guard list.count <= Self.listLookupLimit else { return indexedKey(id: id) }
        return list.withUnsafeBufferPointer { list in
            for index in list.indices where bytesEqual(list[index].idBytes, id) {
                Self.prefetch(list[index].preparedSecret)
                return Unmanaged.passUnretained(list[index])
            }
            return nil
        }
    }

    /// The lookup in a large set (out of line: a small set's lookup stays short enough to inline).
    @inline(never)
    private func indexedKey(id: UnsafeRawBufferPointer) -> Unmanaged<SigningKey>? {
        let hash = Self.idHash(id)
        return index.withUnsafeBufferPointer { index in
            let mask = index.count - 1
            var place = Int(truncatingIfNeeded: hash) & mask
            while let key = index[place].key {
                if index[place].holds(id, hash: hash) {
                    Self.prefetch(index[place].secret)
                    Self.prefetch(UnsafeRawBufferPointer(start: key.toOpaque(), count: Self.keyObjectBytes))
                    return key
                }
                place = (place + 1) & mask
            }
            return nil
        }
    }

    /// The bytes of a key object the verifier reads (its fields up to the key id), prefetched
    /// with its states.
    private static let keyObjectBytes = 192

    /// Starts loading `bytes` into the cache (prefetching never faults).
    @inline(__always)
    private static func prefetch(_ bytes: UnsafeRawBufferPointer) {
        prefetchForRead(bytes)
    }

    /// A new index, at most a quarter full, so the next keys added fit without another.
    private mutating func reindex() {
        guard list.count > Self.listLookupLimit else { return index = [] }
        var size = 16
        while size < 4 * list.count { size *= 2 }
        var fresh = [IndexPlace](repeating: IndexPlace(), count: size)
        for key in list { Self.place(key, in: &fresh) }
        index = fresh
    }

    /// Puts `key` at the first free place for its id in `index`.
    private static func place(_ key: SigningKey, in index: inout [IndexPlace]) {
        let hash = idHash(key.idBytes), mask = index.count - 1
        var place = Int(truncatingIfNeeded: hash) & mask
        while index[place].key != nil { place = (place + 1) & mask }
        index[place] = IndexPlace(hash: hash, key: key)
    }

    /// Every byte of an id (1–64) mixed in by multiplication, with no loop over single bytes:
    /// 8 bytes at a time, the last word ending at the id's last byte (overlapping the one
    /// before); an id of 4–7 bytes as two overlapping 4-byte words, one of 1–3 as its first,
    /// middle and last byte. With the length mixed in first, each length's words determine its bytes.
    static func idHash(_ id: UnsafeRawBufferPointer) -> UInt64 {
        let count = id.count
        var hash = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
        guard let base = id.baseAddress, count > 0 else { return hash }
        func mix(_ word: UInt64) {
            hash = (hash ^ word) &* 0xD6E8_FEB8_6659_FD93
            hash ^= hash >> 32
        }
        if count >= 8 {
            var offset = 0
            while offset + 8 < count {
                mix(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            mix(base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
        } else if count >= 4 {
            mix(UInt64(base.loadUnaligned(as: UInt32.self)) | UInt64(base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)) << 32)
        } else {
            mix(UInt64(base.load(as: UInt8.self)) | UInt64(base.load(fromByteOffset: count / 2, as: UInt8.self)) << 8
                | UInt64(base.load(fromByteOffset: count - 1, as: UInt8.self)) << 16)
        }
        return hash ^ hash >> 29
    }

    public var ids: [String] { keys.values.map(\.id).sorted() }
    public var count: Int { keys.count }
}
