import CSignShim

/// Raw-byte access that keeps `SignCoreError` as the thrown type (the standard library's
/// `withUnsafeBytes` rethrows untyped errors).
func withBytes<R>(of bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
    let result: Result<R, SignCoreError> = bytes.withUnsafeBytes { raw in
        do throws(SignCoreError) { return .success(try body(raw)) } catch { return .failure(error) }
    }
    return try result.get()
}

/// Zeroes a buffer that held secret material (libsodium `sodium_memzero`, not optimised away).
func sc_memzero_bytes(_ buffer: UnsafeMutableRawBufferPointer) { sc_memzero(buffer.baseAddress, buffer.count) }

/// Constant-time comparison of the first `count` bytes of two buffers.
func sc_memcmp_prefix(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ count: Int) -> Bool {
    a.count >= count && b.count >= count && sc_memcmp(a.baseAddress, b.baseAddress, count) == 0
}
