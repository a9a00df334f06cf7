import CSignShim

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

/// Constant-time comparison of the first `count` bytes of two buffers.
func constantTimePrefixEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ count: Int) -> Bool {
    a.count >= count && b.count >= count && sc_memcmp(a.baseAddress, b.baseAddress, count) == 0
}
