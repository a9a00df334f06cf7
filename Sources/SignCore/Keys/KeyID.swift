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
    init(of id: UnsafeRawBufferPointer) {
        precondition(id.count <= SigningKey.maxKeyIDLength)
        count = id.count
        withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: id) }
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
