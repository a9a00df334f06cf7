internal import CSignBytes
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

/// Number of decimal digits of `magnitude` (1–20), without a loop.
@inline(__always)
func decimalDigitCount(_ magnitude: UInt64) -> Int { Int(sc_decimal_digits(magnitude)) }
