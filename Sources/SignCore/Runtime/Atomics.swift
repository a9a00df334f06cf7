internal import CSignBytes

// Atomic words and pointers in memory a caller owns, and cache prefetches: CSignBytes' compiler
// builtins, one call each once inlined. For shared memory that Swift's `Atomic` cannot hold
// (it needs macOS 15 / iOS 18) and for hints that must never fault.

/// Reads a word written concurrently (relaxed: a count or a hint, never a publication).
@inline(__always)
func atomicLoadRelaxed(_ word: UnsafePointer<Int64>) -> Int64 { sc_atomic_load_relaxed(word) }

/// Writes a word read concurrently (relaxed).
@inline(__always)
func atomicStoreRelaxed(_ word: UnsafeMutablePointer<Int64>, _ value: Int64) { sc_atomic_store_relaxed(word, value) }

/// Reads a published pointer (acquire: what it points to was written before it was published).
@inline(__always)
func atomicLoadPointerAcquire(_ slot: UnsafePointer<UnsafeMutableRawPointer?>) -> UnsafeMutableRawPointer? {
    sc_atomic_load_pointer_acquire(slot)
}

/// Publishes `value` in `slot` and returns what the slot held (acquiring and releasing).
@inline(__always)
func atomicExchangePointer(_ slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ value: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
    sc_atomic_exchange_pointer(slot, value)
}

/// Starts loading the cache line at `address` for a write (never faults, whatever the address).
@inline(__always)
func prefetchForWrite(_ address: UnsafeRawPointer?) { sc_prefetch_for_write(address) }

/// Starts loading every cache line of `bytes` for reading (never faults).
@inline(__always)
func prefetchForRead(_ bytes: UnsafeRawBufferPointer) { sc_prefetch_range_for_read(bytes.baseAddress, bytes.count) }
