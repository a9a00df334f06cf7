import CSignShim
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

/// Constant-time comparison of the first `count` bytes of two buffers.
func constantTimePrefixEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ count: Int) -> Bool {
    a.count >= count && b.count >= count && sc_memcmp(a.baseAddress, b.baseAddress, count) == 0
}

/// A string's UTF-8 bytes in place, with `SignCoreError` as the thrown type. Native strings
/// are already contiguous UTF-8, so nothing is copied.
func withUTF8<R>(of string: String, _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
    var string = string
    let result: Result<R, SignCoreError> = string.withUTF8 { utf8 in
        do throws(SignCoreError) { return .success(try body(UnsafeRawBufferPointer(utf8))) } catch { return .failure(error) }
    }
    return try result.get()
}

/// Scratch memory for one call: on the stack up to 1 KiB (every typical request), else one
/// heap allocation, so a large hostile input cannot exhaust the stack.
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

/// Appends bytes into memory the caller sized from the input's bound. A write past the end is
/// a bug in that bound, so it traps rather than overflowing.
struct ByteWriter {
    let base: UnsafeMutablePointer<UInt8>
    let capacity: Int
    private(set) var count = 0

    init(_ memory: UnsafeMutableRawBufferPointer) {
        base = memory.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafeMutablePointer(bitPattern: 16)!  // never read when empty
        capacity = memory.count
    }

    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    subscript(index: Int) -> UInt8 { base[index] }

    mutating func append(_ byte: UInt8) {
        precondition(count < capacity, "ByteWriter capacity")
        base[count] = byte
        count += 1
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= capacity - count, "ByteWriter capacity")
        if let source = bytes.baseAddress { (base + count).update(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
        count += bytes.count
    }

    mutating func append(_ bytes: Slice<UnsafeRawBufferPointer>) { append(UnsafeRawBufferPointer(rebasing: bytes)) }

    mutating func append(_ bytes: StaticString) {
        append(UnsafeRawBufferPointer(start: bytes.utf8Start, count: bytes.utf8CodeUnitCount))
    }

    /// Writes a run of at most `maxCount` bytes straight through a pointer, with one capacity
    /// check for the whole run; `body` returns how many bytes it wrote.
    mutating func appendRun<E: Error>(maxCount: Int, _ body: (UnsafeMutablePointer<UInt8>) throws(E) -> Int) throws(E) {
        precondition(maxCount <= capacity - count, "ByteWriter capacity")
        let written = try body(base + count)
        precondition(written <= maxCount, "ByteWriter run")
        count += written
    }

    /// Appends `value` big-endian in `byteCount` bytes.
    mutating func appendBigEndian(_ value: UInt64, byteCount: Int) {
        for shift in stride(from: (byteCount - 1) * 8, through: 0, by: -8) {
            append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// Appends a non-negative number in decimal.
    mutating func appendDecimal(_ value: Int64) {
        precondition(value >= 0)
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 digits hold any Int64
        withUnsafeMutableBytes(of: &digits) { buffer in
            var rest = value, start = 24
            repeat {
                start -= 1
                buffer[start] = UInt8(truncatingIfNeeded: rest % 10) + 0x30
                rest /= 10
            } while rest > 0
            append(UnsafeRawBufferPointer(rebasing: buffer[start...]))
        }
    }

    /// Drops everything written from `index` on.
    mutating func truncate(to index: Int) {
        precondition(index >= 0 && index <= count)
        count = index
    }
}
