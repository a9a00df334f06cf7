/// Output memory written byte by byte through a raw pointer. Raw stores are valid whatever type
/// the memory is bound to (a digest's or nonce's words, a String's storage); stores through an
/// `UnsafeMutablePointer<UInt8>` into memory bound to another type would be undefined behaviour.
struct RawBytes {
    let base: UnsafeMutableRawPointer

    subscript(offset: Int) -> UInt8 {
        get { base.load(fromByteOffset: offset, as: UInt8.self) }
        nonmutating set { base.storeBytes(of: newValue, toByteOffset: offset, as: UInt8.self) }
    }
}

/// Appends bytes into memory the caller sized from the input's bound. A write past the end is
/// a bug in that bound, so it traps rather than overflowing.
struct ByteWriter {
    private let base: UnsafeMutableRawPointer
    let capacity: Int
    private(set) var count = 0

    init(_ memory: UnsafeMutableRawBufferPointer) {
        base = memory.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 16)!  // never dereferenced when empty
        capacity = memory.count
    }

    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    subscript(index: Int) -> UInt8 { base.load(fromByteOffset: index, as: UInt8.self) }

    mutating func append(_ byte: UInt8) {
        precondition(count < capacity, "ByteWriter capacity")
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= capacity - count, "ByteWriter capacity")
        if let source = bytes.baseAddress { (base + count).copyMemory(from: source, byteCount: bytes.count) }
        count += bytes.count
    }

    mutating func append(_ text: StaticString) { append(text.bytes) }

    /// Writes a run of at most `maxCount` bytes straight through memory, with one capacity
    /// check for the whole run; `body` returns how many bytes it wrote.
    mutating func appendRun<E: Error>(maxCount: Int, _ body: (RawBytes) throws(E) -> Int) throws(E) {
        precondition(maxCount <= capacity - count, "ByteWriter capacity")
        let written = try body(RawBytes(base: base + count))
        precondition(written <= maxCount, "ByteWriter run")
        count += written
    }

    /// Appends a fixed-size value's bytes with plain stores (a digest's or nonce's words): no
    /// call to memcpy for a few bytes.
    mutating func appendValue<T: BitwiseCopyable>(_ value: T) {
        precondition(MemoryLayout<T>.size <= capacity - count, "ByteWriter capacity")
        base.storeBytes(of: value, toByteOffset: count, as: T.self)
        count += MemoryLayout<T>.size
    }

    /// Appends a number in decimal ("-" first when negative), written in place two digits at a time.
    mutating func appendDecimal(_ value: Int64) {
        if value < 0 { append(UInt8(ascii: "-")) }
        let digits = decimalDigitCount(value.magnitude)
        precondition(digits <= capacity - count, "ByteWriter capacity")
        let pairs = UnsafeRawPointer(Self.digitPairs.utf8Start)
        @inline(__always) func pair(_ n: UInt64) -> UInt16 { pairs.loadUnaligned(fromByteOffset: 2 * Int(n), as: UInt16.self) }
        var rest = value.magnitude, end = count + digits
        while rest >= 100 {
            end -= 2
            base.storeBytes(of: pair(rest % 100), toByteOffset: end, as: UInt16.self)
            rest /= 100
        }
        if rest >= 10 {
            base.storeBytes(of: pair(rest), toByteOffset: end - 2, as: UInt16.self)
        } else {
            base.storeBytes(of: UInt8(truncatingIfNeeded: rest) + 0x30, toByteOffset: end - 1, as: UInt8.self)
        }
        count += digits
    }

    /// "00", "01", ... "99".
    private static let digitPairs: StaticString = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

    /// Drops everything written from `index` on.
    mutating func truncate(to index: Int) {
        precondition(index >= 0 && index <= count)
        count = index
    }
}
