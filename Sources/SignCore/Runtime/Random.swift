internal import CSignBytes

/// Fills `buffer` from the operating system's CSPRNG (getrandom on Linux, arc4random_buf on
/// Apple platforms); false when the kernel refuses.
func osRandom(into buffer: UnsafeMutableRawBufferPointer) -> Bool {
    sc_os_random(buffer.baseAddress, buffer.count) == 0
}

/// SipHash-1-3 of a 16-byte nonce and a 64-bit key tag under the secret key (k0, k1): the
/// replay guard's slot hash, which nobody without the key can aim.
@inline(__always)
func sipHash13(key k0: UInt64, _ k1: UInt64, nonce n0: UInt64, _ n1: UInt64, tag: UInt64) -> UInt64 {
    sc_siphash13_nonce(k0, k1, n0, n1, tag)
}
