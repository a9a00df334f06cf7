/*
 * CSignBytes, runtime: short copies, constant-time comparison and wiping, the operating system's
 * CSPRNG, atomics, a one-word lock, SipHash, the replay guard's pages, prefetches, and the CPU
 * features the byte passes read (runtime.c).
 */
#ifndef SC_RUNTIME_H
#define SC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifndef SC_MUST_CHECK
#define SC_MUST_CHECK __attribute__((warn_unused_result))
#endif

#if defined(__x86_64__)
/* Whether the CPU has SSSE3: on every x86-64 CPU since 2006 but not in the x86-64 baseline, so
   the byte passes check it once and take their SSSE3 forms. */
int sc_has_ssse3(void);
/* For tests: 0 makes every pass take its form without SSSE3 (plain C for base64url and the
   token's fields, as on arm64; SSE2 compares in the URL pass), 1 the SSSE3 forms again where the
   CPU has them. Both give the same bytes, so switching while other code runs is safe. */
void sc_use_ssse3(int enabled);
#endif

/* ---- Short copies ----------------------------------------------------------------------- */

/* Copies up to 16 bytes with at most two overlapping 8- or 4-byte moves instead of a call
   (more go to memcpy): a query pair, the last bytes of a decoded field. */
__attribute__((always_inline)) static inline void sc_copy_small(uint8_t *to, const uint8_t *from, size_t length) {
    if (length >= 8 && length <= 16) {
        uint64_t head, tail;
        __builtin_memcpy(&head, from, 8);
        __builtin_memcpy(&tail, from + length - 8, 8);
        __builtin_memcpy(to, &head, 8);
        __builtin_memcpy(to + length - 8, &tail, 8);
    } else if (length >= 4 && length < 8) {
        uint32_t head, tail;
        __builtin_memcpy(&head, from, 4);
        __builtin_memcpy(&tail, from + length - 4, 4);
        __builtin_memcpy(to, &head, 4);
        __builtin_memcpy(to + length - 4, &tail, 4);
    } else if (length < 4) {
        for (size_t k = 0; k < length; k++) to[k] = from[k];
    } else {
        __builtin_memcpy(to, from, length);
    }
}

/* ---- Comparison and wiping ------------------------------------------------------------ */

/* Constant-time equality: 0 when equal, -1 otherwise. */
int sc_memcmp(const void *a, const void *b, size_t length) SC_MUST_CHECK;
void sc_memzero(void *p, size_t length);

/* ---- The operating system's CSPRNG ------------------------------------------------------- */

/* `length` bytes from getrandom(2) on Linux, arc4random_buf on Apple platforms: one call for a
   nonce. Returns 0, or -1 when the kernel refuses (the swift-crypto backend's random bytes; the
   libsodium backend has its own generator). */
int sc_os_random(void *out, size_t length) SC_MUST_CHECK;

/* ---- Atomics ---------------------------------------------------------------------------- */

/* One 64-bit word read and written atomically, with the orderings SignCore uses, for Swift code
   that must run where the Synchronization module's Atomic does not (before macOS 15 / iOS 18).
   Compiler builtins: inlined into the Swift caller, one instruction each on x86-64 and arm64. */
static inline int64_t sc_atomic_load_relaxed(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void sc_atomic_store_relaxed(int64_t *p, int64_t value) { __atomic_store_n(p, value, __ATOMIC_RELAXED); }
static inline int64_t sc_atomic_exchange(int64_t *p, int64_t value) { return __atomic_exchange_n(p, value, __ATOMIC_ACQ_REL); }
static inline int64_t sc_atomic_fetch_add_relaxed(int64_t *p, int64_t value) { return __atomic_fetch_add(p, value, __ATOMIC_RELAXED); }
/* A pointer published by one thread and read by others (a key set replaced while verifiers run). */
static inline void *sc_atomic_load_pointer_acquire(void *const *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void *sc_atomic_exchange_pointer(void **p, void *value) { return __atomic_exchange_n(p, value, __ATOMIC_ACQ_REL); }
/* 1 when *p held *expected and now holds desired; otherwise 0 and *expected is what *p held. */
static inline int sc_atomic_compare_exchange_relaxed(int64_t *p, int64_t *expected, int64_t desired) {
    return __atomic_compare_exchange_n(p, expected, desired, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* ---- A lock of one 32-bit word (Linux futex) -------------------------------------------- */

/* 0 free, 1 held, 2 held with a thread waiting (U. Drepper, "Futexes Are Tricky", the form Rust's
   standard library uses): taking a free lock is one compare-exchange and releasing it one
   exchange, inlined into the caller; only a held lock calls into the kernel. The replay guard
   takes one per verify, where pthread_mutex_lock/unlock cost about 50 instructions in calls. */
void sc_lock_contended(uint32_t *word);
void sc_unlock_wake(uint32_t *word);

static inline void sc_lock(uint32_t *word) {
    uint32_t expected = 0;
    if (!__atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) sc_lock_contended(word);
}

static inline void sc_unlock(uint32_t *word) {
    if (__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) == 2) sc_unlock_wake(word);
}

/* ---- SipHash (J.-P. Aumasson, D. J. Bernstein), for the replay guard ------------------------- */

#define SC_ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SC_SIPROUND(v0, v1, v2, v3) \
    do { \
        v0 += v1; v1 = SC_ROTL64(v1, 13); v1 ^= v0; v0 = SC_ROTL64(v0, 32); \
        v2 += v3; v3 = SC_ROTL64(v3, 16); v3 ^= v2; \
        v0 += v3; v3 = SC_ROTL64(v3, 21); v3 ^= v0; \
        v2 += v1; v1 = SC_ROTL64(v1, 17); v1 ^= v2; v2 = SC_ROTL64(v2, 32); \
    } while (0)

/* SipHash-c-d under the key (k0, k1) (the key's bytes 0-7 and 8-15, little-endian) of the
   message made of `count` 64-bit words, each as 8 little-endian bytes, then `tail_bytes` (0-7)
   more: the low bytes of `tail`, little-endian (its other bytes are ignored), which share the
   final block with the length.
   Inline, with c and d constants at the call: the guard hashes 23 bytes with SipHash-1-3 (what
   Swift's Hasher runs) in under 100 instructions, a third of what Hasher's general interface costs. */
static inline uint64_t sc_siphash_words(uint64_t k0, uint64_t k1, const uint64_t *words, size_t count, uint64_t tail,
                                        size_t tail_bytes, int c, int d) {
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    for (size_t i = 0; i < count; i++) {
        v3 ^= words[i];
        for (int r = 0; r < c; r++) SC_SIPROUND(v0, v1, v2, v3);
        v0 ^= words[i];
    }
    uint64_t kept = tail & ((1ULL << (8 * tail_bytes)) - 1); /* tail_bytes below 8: no shift by 64 */
    uint64_t last = (uint64_t)(count * 8 + tail_bytes) << 56 | kept; /* the length byte after the last bytes */
    v3 ^= last;
    for (int r = 0; r < c; r++) SC_SIPROUND(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xFF;
    for (int r = 0; r < d; r++) SC_SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* The guard's hash of (nonce, key tag): SipHash-1-3 of 23 bytes, the nonce's 16 and the tag's
   low 7. The tag is a keyed hash of the key id already, so its 56 bits tell keys apart as well as
   64 would, and they fit the final block beside the length: one compression fewer than 24 bytes. */
static inline uint64_t sc_siphash13_nonce(uint64_t k0, uint64_t k1, uint64_t n0, uint64_t n1, uint64_t tag) {
    const uint64_t words[2] = {n0, n1};
    return sc_siphash_words(k0, k1, words, 2, tag, 7, 1, 3);
}

/* ---- replay-guard tables ---------------------------------------------------------------- */

/* Zeroed memory straight from the kernel (mmap), released straight back to it; from 2 MiB on,
   starting on a 2 MiB boundary and asking for transparent huge pages: a large nonce table is
   probed at random, and 2 MiB pages make those probes miss the TLB far less. NULL for a length
   of 0 or when the kernel refuses. Release with sc_pages_free and the same length. */
void *sc_pages_zeroed(size_t length);
void sc_pages_free(void *pages, size_t length);

/* Starts loading the cache line at p for writing. Never faults, whatever p is: a hint only. */
static inline void sc_prefetch_for_write(const void *p) { __builtin_prefetch(p, 1, 3); }
static inline void sc_prefetch_for_read(const void *p) { __builtin_prefetch(p, 0, 3); }
/* The same for reading every cache line of [p, p + length). */
static inline void sc_prefetch_range_for_read(const void *p, size_t length) {
    for (size_t offset = 0; offset < length; offset += 64) __builtin_prefetch((const char *)p + offset, 0, 3);
}

#endif
