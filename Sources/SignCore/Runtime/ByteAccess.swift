import CSignBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Raw-byte access that keeps `SignCoreError` as the thrown type (the standard library's
/// `withUnsafeBytes` rethrows untyped errors).
func withBytes<R>(of bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
    let result: Result<R, SignCoreError> = bytes.withUnsafeBytes { raw in
        do throws(SignCoreError) { return .success(try body(raw)) } catch { return .failure(error) }
    }
    return try result.get()
}

/// A String of ASCII this library wrote itself (base64url, a token), copied without checking
/// it again: `String(decoding:)` would scan it for UTF-8 and ASCII, about 70 instructions of a
/// sign's 3,000 (README, Instructions). Never for bytes that came from outside.
func stringOfOwnASCII(_ bytes: UnsafeRawBufferPointer) -> String {
    assert(bytes.allSatisfy { $0 < 0x80 }, "stringOfOwnASCII is only for ASCII")
    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, macCatalyst 26, *) {
        return unsafe String(copying: UTF8Span(unchecked: Span(_unsafeBytes: bytes), isKnownASCII: true))
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Zeroes bytes that held secret material (libsodium `sodium_memzero`, never optimised away).
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { sc_memzero($0.baseAddress, $0.count) }
}

/// The first index of `byte` in `bytes[range]` (memchr: vectorised), or nil.
func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
    guard !range.isEmpty, let base = bytes.baseAddress, let found = memchr(base + range.lowerBound, Int32(byte), range.count) else {
        return nil
    }
    return UnsafeRawPointer(found) - base
}

/// Whether two buffers hold the same bytes (memcmp: for public data such as key ids; secrets
/// are compared with `constantTimePrefixEqual`).
func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard let x = a.baseAddress, let y = b.baseAddress else { return true }  // both empty
    return memcmp(x, y, a.count) == 0
}

/// Unsigned byte order of `count` bytes at `a` and `b` (memcmp: public data only).
func byteOrder(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Int32 { memcmp(a, b, count) }

/// Copies a short run with plain 8-byte and 1-byte moves, cheaper than a call to memcpy for
/// the few bytes of a query pair. Reads and writes only the `count` bytes.
@inline(__always)
func copyShort(to destination: UnsafeMutableRawPointer, from source: UnsafeRawPointer, count: Int) {
    var at = 0
    while at + 8 <= count {
        destination.storeBytes(of: source.loadUnaligned(fromByteOffset: at, as: UInt64.self), toByteOffset: at, as: UInt64.self)
        at += 8
    }
    while at < count {
        destination.storeBytes(of: source.load(fromByteOffset: at, as: UInt8.self), toByteOffset: at, as: UInt8.self)
        at += 1
    }
}

extension StaticString {
    /// The literal's UTF-8 bytes, without building a String.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: utf8Start, count: utf8CodeUnitCount) }
}

/// Constant-time comparison of the first `count` bytes of two buffers.
func constantTimePrefixEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ count: Int) -> Bool {
    a.count >= count && b.count >= count && sc_memcmp(a.baseAddress, b.baseAddress, count) == 0
}

/// A string's UTF-8 bytes in place, with `SignCoreError` as the thrown type. Native strings
/// are already contiguous UTF-8, so they are read where they are: no copy, and no reference
/// count taken (the mutating `String.withUTF8` would need a copy of a borrowed string).
/// Always inlined: called once or more per sign and verify, where a call and its closure
/// context cost more than the work. Through `utf8.span` where the standard library has it
/// (its typed throw passes the error on as it is, with no `Result` made and unpacked: 15
/// instructions a call); a bridged string is transcoded once and cached.
@inline(__always)
func withUTF8<R>(of string: String, _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, macCatalyst 26, *) {
        return try string.utf8.span.withUnsafeBytes(body)
    }
    func run(_ utf8: UnsafeBufferPointer<UInt8>) -> Result<R, SignCoreError> {
        do throws(SignCoreError) { return .success(try body(UnsafeRawBufferPointer(utf8))) } catch { return .failure(error) }
    }
    if let result = string.utf8.withContiguousStorageIfAvailable(run) { return try result.get() }
    var copy = string  // bridged or otherwise not contiguous: made contiguous first
    return try copy.withUTF8(run).get()
}

/// Scratch memory for one call: on the stack up to 1 KiB (every typical request), else one
/// heap allocation, so a large hostile input cannot exhaust the stack.
@inline(__always)
func withScratch<R>(byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
    if byteCount <= 1024 {
        return try withUnsafeTemporaryAllocation(byteCount: byteCount, alignment: 16) { (raw) throws(SignCoreError) in
            try body(raw)
        }
    }
    let heap = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
    defer { heap.deallocate() }
    return try body(heap)
}

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
        let digits = Self.decimalDigitCount(value.magnitude)
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

    /// Number of decimal digits of `magnitude` (1–20).
    static func decimalDigitCount(_ magnitude: UInt64) -> Int { Int(sc_decimal_digits(magnitude)) }

    /// Drops everything written from `index` on.
    mutating func truncate(to index: Int) {
        precondition(index >= 0 && index <= count)
        count = index
    }
}
