/*
 * CSignBytes, runtime: the operating system's CSPRNG, constant-time comparison and wiping, the
 * replay guard's pages, the one-word lock, and the CPU probe that the byte passes read.
 * Portable C (C11 and the compiler's builtins), no third-party header.
 */
#include "CSignBytes.h"
#include "cpu.h"
#include "cpu.h"

#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <stdlib.h>
#else
#include <errno.h>
#include <sys/random.h>
#endif
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#else
#include <sched.h>
#endif

#if defined(__APPLE__)
int sc_os_random(void *out, size_t length) {
    arc4random_buf(out, length);
    return 0;
}
#else
int sc_os_random(void *out, size_t length) {
    unsigned char *p = out;
    while (length > 0) {
        ssize_t n = getrandom(p, length, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        length -= (size_t)n;
    }
    return 0;
}
#endif

/* Constant time: every byte is read, differences are folded into one word eight (or four)
   bytes at a time, the last bytes as the eight (four) that end the buffers, and only the fold is
   tested (sodium_memcmp goes byte by byte through volatile reads). Which loads run depends on
   the length alone. */
int sc_memcmp(const void *a, const void *b, size_t length) {
    const unsigned char *x = a, *y = b;
    uint64_t difference = 0;
    if (length >= 8) {
        uint64_t u, v;
        for (size_t i = 0; i + 8 <= length; i += 8) {
            memcpy(&u, x + i, 8);
            memcpy(&v, y + i, 8);
            difference |= u ^ v;
        }
        memcpy(&u, x + length - 8, 8);
        memcpy(&v, y + length - 8, 8);
        difference |= u ^ v;
    } else if (length >= 4) {
        uint32_t u, v, s, t;
        memcpy(&u, x, 4);
        memcpy(&v, y, 4);
        memcpy(&s, x + length - 4, 4);
        memcpy(&t, y + length - 4, 4);
        difference = (u ^ v) | (s ^ t);
    } else {
        for (size_t i = 0; i < length; i++) difference |= (uint64_t)(x[i] ^ y[i]);
    }
    __asm__("" : "+r"(difference)); /* an optimisation barrier: no early exit can be derived */
    return -(int)((difference | (0 - difference)) >> 63);
}

/* memset, then a compiler barrier that makes the zeroed memory observable, so the store cannot be
   removed as dead (the method of libsodium's sodium_memzero and BoringSSL's OPENSSL_cleanse where
   no memset_s or explicit_bzero is used; the same on every platform and C library). */
void sc_memzero(void *p, size_t length) {
    if (length == 0) return;
    memset(p, 0, length);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

/* ---- replay-guard tables ---------------------------------------------------------------- */

/* From 2 MiB the mapping starts on a 2 MiB boundary: mapped 2 MiB longer, then the unaligned
   head and the tail past the table's last page unmapped. The kernel backs only aligned 2 MiB
   ranges with huge pages, so an unaligned table would lose one at each end. A shorter table is
   a plain mapping without the huge-page hint: next to other hinted mappings it could otherwise
   share a huge page with them, whose first touch stalls far longer than a small page's. */
void *sc_pages_zeroed(size_t length) {
    const size_t huge = (size_t)2 << 20;
    long page_size = sysconf(_SC_PAGESIZE);
    size_t page = page_size > 0 ? (size_t)page_size : 4096;
    if (length == 0 || length > SIZE_MAX - 2 * huge) return NULL;
    if (length < huge) {
        void *small = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return small == MAP_FAILED ? NULL : small;
    }
    uint8_t *mapped = mmap(NULL, length + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) return NULL;
    uint8_t *pages = (uint8_t *)(((uintptr_t)mapped + huge - 1) & ~(uintptr_t)(huge - 1));
    size_t head = (size_t)(pages - mapped), kept = (length + page - 1) / page * page;
    if (head > 0) (void)munmap(mapped, head);
    (void)munmap(pages + kept, huge - head); /* never empty: head < huge */
#ifdef MADV_HUGEPAGE
    (void)madvise(pages, length, MADV_HUGEPAGE); /* a hint: without it the table still works */
#endif
    return pages;
}

void sc_pages_free(void *pages, size_t length) {
    if (pages != NULL) (void)munmap(pages, length);
}

/* The lock's slow paths (CSignBytes.h): spin briefly while the holder has no waiter (the replay
   guard's holders keep it for well under a microsecond), then mark the lock as waited on (2) and sleep
   in the kernel until it is released; whoever takes it after a wait leaves it at 2, so its
   release wakes the next sleeper. Without futexes (not Linux) the thread yields instead. */
static uint32_t lock_spin(uint32_t *word) {
    uint32_t state = __atomic_load_n(word, __ATOMIC_RELAXED);
    for (int spins = 0; state == 1 && spins < 100; spins++) {
#if defined(__x86_64__)
        _mm_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
        state = __atomic_load_n(word, __ATOMIC_RELAXED);
    }
    return state;
}

void sc_lock_contended(uint32_t *word) {
    uint32_t state = lock_spin(word);
    if (state == 0) {
        uint32_t expected = 0;
        if (__atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
        state = expected;
    }
    while (1) {
        if (state != 2 && __atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE) == 0) return;
#if defined(__linux__)
        (void)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0); /* returns at once unless still 2 */
#else
        sched_yield();
#endif
        state = lock_spin(word);
    }
}

void sc_unlock_wake(uint32_t *word) {
#if defined(__linux__)
    (void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    (void)word;
#endif
}

/* ---- CPU features ---------------------------------------------------------------------------- */

#if defined(__x86_64__)
/* Set once when the library loads, from the CPU's own answer (cpuid: no timing, no environment);
   before that, and on a CPU without SSSE3, the passes take their portable forms, which give the
   same bytes. */
atomic_int sc_ssse3_state = 0;

__attribute__((constructor)) static void ssse3_probe(void) {
    __builtin_cpu_init();
    atomic_store_explicit(&sc_ssse3_state, __builtin_cpu_supports("ssse3") ? 1 : 0, memory_order_relaxed);
}

int sc_has_ssse3(void) { return has_ssse3(); }

void sc_use_ssse3(int enabled) {
    __builtin_cpu_init();
    atomic_store_explicit(&sc_ssse3_state, enabled && __builtin_cpu_supports("ssse3") ? 1 : 0, memory_order_relaxed);
}
#endif
