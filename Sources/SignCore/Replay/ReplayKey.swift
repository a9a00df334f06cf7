/// A key id as the replay guard keys it: a 64-bit keyed hash (SipHash, per-process random
/// seed) of its bytes. Two key ids share a tag with probability 2⁻⁶⁴, and nobody outside the
/// process can search for a pair that does, since the seed is secret.
struct ReplayKey {
    let tag: UInt64

    init(tag: UInt64) { self.tag = tag }

    init(_ id: UnsafeRawBufferPointer) {
        var hasher = Hasher()
        hasher.combine(bytes: id)
        tag = UInt64(UInt(bitPattern: hasher.finalize()))
    }

    init(_ id: String) {
        var id = id
        self = id.withUTF8 { ReplayKey(UnsafeRawBufferPointer($0)) }
    }
}
