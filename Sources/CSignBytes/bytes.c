/*
 * CSignBytes implementation: portable C (C11 and the compiler's builtins, SSE2/SSSE3 where the
 * CPU has them), no third-party header, so it builds for every platform SignCore supports.
 */
#include "CSignBytes.h"

#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#if defined(__APPLE__)
#include <stdlib.h>
#else
#include <errno.h>
#include <sys/random.h>
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

/* Constant time: every byte is read, differences are folded into one word eight bytes at a
   time, and only the fold is tested (sodium_memcmp goes byte by byte through volatile reads). */
int sc_memcmp(const void *a, const void *b, size_t length) {
    const unsigned char *x = a, *y = b;
    uint64_t difference = 0;
    size_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t u, v;
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        difference |= u ^ v;
    }
    for (; i < length; i++) difference |= (uint64_t)(x[i] ^ y[i]);
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

void *sc_pages_zeroed(size_t length) {
    void *pages = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(pages, length, MADV_HUGEPAGE); /* a hint: without it the table still works */
#endif
    return pages;
}

void sc_pages_free(void *pages, size_t length) {
    if (pages != NULL) (void)munmap(pages, length);
}

/* ---- base64url decoding of public text, 16 characters / 12 bytes at a time -------------- */

#if defined(__x86_64__)
#include <immintrin.h>

/* SSSE3 is on every x86-64 CPU since 2006 but not in the x86-64 baseline: checked once. */
static int sc_has_ssse3(void) {
    static atomic_int known = -1;
    int value = atomic_load_explicit(&known, memory_order_relaxed);
    if (value < 0) {
        __builtin_cpu_init();
        value = __builtin_cpu_supports("ssse3") ? 1 : 0;
        atomic_store_explicit(&known, value, memory_order_relaxed);
    }
    return value;
}

/* Lanes of v in low...high, as signed bytes (bytes from 0x80 are negative: in no range). */
static inline __m128i sc_within(__m128i v, char low, char high) {
    return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8((char)(low - 1))), _mm_cmpgt_epi8(_mm_set1_epi8((char)(high + 1)), v));
}

/* All ones in the lanes of v that hold a base64url character. */
static inline __m128i sc_alphabet_lanes(__m128i v) {
    return _mm_or_si128(_mm_or_si128(sc_within(v, 'A', 'Z'), sc_within(v, 'a', 'z')),
                        _mm_or_si128(sc_within(v, '0', '9'), _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('-')),
                                                                          _mm_cmpeq_epi8(v, _mm_set1_epi8('_')))));
}

/* One block: 16 characters to 12 bytes at `out` (12 bytes written), or 0 at a byte outside
   the alphabet. Each character's value by signed range compares (bytes from 0x80 are negative
   and fall outside every range), then two multiply-adds pack four 6-bit values into 3 bytes. */
__attribute__((target("ssse3"), always_inline))
static inline int decode_block(__m128i v, uint8_t *out) {
    __m128i upper = sc_within(v, 'A', 'Z'), lower = sc_within(v, 'a', 'z'), digit = sc_within(v, '0', '9');
    __m128i dash = _mm_cmpeq_epi8(v, _mm_set1_epi8('-')), underscore = _mm_cmpeq_epi8(v, _mm_set1_epi8('_'));
    __m128i valid = _mm_or_si128(_mm_or_si128(upper, lower), _mm_or_si128(digit, _mm_or_si128(dash, underscore)));
    if (_mm_movemask_epi8(valid) != 0xFFFF) return 0;
    __m128i offset = _mm_or_si128(
        _mm_or_si128(_mm_and_si128(upper, _mm_set1_epi8(-'A')), _mm_and_si128(lower, _mm_set1_epi8(26 - 'a'))),
        _mm_or_si128(_mm_and_si128(digit, _mm_set1_epi8(52 - '0')),
                     _mm_or_si128(_mm_and_si128(dash, _mm_set1_epi8(62 - '-')), _mm_and_si128(underscore, _mm_set1_epi8(63 - '_')))));
    __m128i values = _mm_add_epi8(v, offset);
    __m128i pairs = _mm_maddubs_epi16(values, _mm_set1_epi32(0x01400140));
    __m128i words = _mm_madd_epi16(pairs, _mm_set1_epi32(0x00011000));
    __m128i bytes = _mm_shuffle_epi8(words, _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
    _mm_storel_epi64((__m128i *)out, bytes);
    uint32_t last = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(bytes, 8));
    memcpy(out + 8, &last, 4);
    return 1;
}

/* All of `in` (n not 1 mod 4): whole blocks, then the last 2-15 characters as one more block
   padded with 'A' (value 0) in a register: loaded as the 16 bytes that end the text when it
   has that many (shifted into place by a shuffle), else copied. Returns the bytes written, or
   -1. The unused bits of the last character are checked by the caller. */
__attribute__((target("ssse3")))
static ptrdiff_t decode_ssse3(const uint8_t *in, size_t n, uint8_t *out) {
    size_t i = 0, o = 0;
    uint8_t bytes[12];
    for (; i + 16 <= n; i += 16, o += 12) {
        if (!decode_block(_mm_loadu_si128((const __m128i *)(in + i)), out + o)) return -1;
    }
    size_t rest = n - i;
    if (rest == 0) return (ptrdiff_t)o;
    __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m128i kept = _mm_cmpgt_epi8(_mm_set1_epi8((char)rest), lanes); /* lanes 0..rest-1 */
    __m128i tail;
    if (n >= 16) {
        /* lane k takes byte 16 - rest + k of the last 16 bytes */
        __m128i shift = _mm_add_epi8(lanes, _mm_set1_epi8((char)(16 - rest)));
        tail = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(in + n - 16)), _mm_and_si128(shift, _mm_set1_epi8(15)));
    } else {
        uint8_t copy[16] = {0};
        for (size_t k = 0; k < rest; k++) copy[k] = in[i + k];
        tail = _mm_loadu_si128((const __m128i *)copy);
    }
    tail = _mm_or_si128(_mm_and_si128(kept, tail), _mm_andnot_si128(kept, _mm_set1_epi8('A')));
    if (!decode_block(tail, bytes)) return -1;
    size_t count = rest * 3 / 4;
    for (size_t k = 0; k < count; k++) out[o + k] = bytes[k];
    return (ptrdiff_t)(o + count);
}
#endif

ptrdiff_t sc_base64url_decode(const void *text, size_t n, void *output) {
    const uint8_t *in = text;
    uint8_t *out = output;
    if (n % 4 == 1) return -1;
    size_t i = 0, o = 0;
#if defined(__x86_64__)
    if (sc_has_ssse3()) {
        ptrdiff_t written = decode_ssse3(in, n, out);
        if (written < 0 || n == 0) return written;
        uint8_t last = sc_base64url_value(in[n - 1]); /* a valid character: the block checked it */
        if ((n % 4 == 2 && (last & 15) != 0) || (n % 4 == 3 && (last & 3) != 0)) return -1;
        return written;
    }
#endif
    uint32_t all = 0;
    for (; i + 4 <= n; i += 4, o += 3) {
        uint32_t a = sc_base64url_value(in[i]), b = sc_base64url_value(in[i + 1]);
        uint32_t c = sc_base64url_value(in[i + 2]), d = sc_base64url_value(in[i + 3]);
        all |= a | b | c | d;
        uint32_t v = a << 18 | b << 12 | c << 6 | d;
        out[o] = (uint8_t)(v >> 16);
        out[o + 1] = (uint8_t)(v >> 8);
        out[o + 2] = (uint8_t)v;
    }
    uint32_t unused = 0; /* must be zero: else a second spelling of the same bytes */
    if (n - i == 2) {
        uint32_t a = sc_base64url_value(in[i]), b = sc_base64url_value(in[i + 1]);
        all |= a | b;
        out[o++] = (uint8_t)(a << 2 | b >> 4);
        unused = b & 15;
    } else if (n - i == 3) {
        uint32_t a = sc_base64url_value(in[i]), b = sc_base64url_value(in[i + 1]), c = sc_base64url_value(in[i + 2]);
        all |= a | b | c;
        uint32_t v = a << 10 | b << 4 | c >> 2;
        out[o++] = (uint8_t)(v >> 8);
        out[o++] = (uint8_t)v;
        unused = c & 3;
    }
    return all < 64 && unused == 0 ? (ptrdiff_t)o : -1;
}

/* ---- wtoken fields (SPEC §4.1), parsed in one pass ------------------------------------- */

/* Digits only, no sign, no leading zero (except "0" itself), at most 11 digits and `max`;
   -1 for anything else. Eight digits at a time when there are that many (one 64-bit load,
   checked and combined with three multiplies), the rest one by one. */
static int64_t token_decimal(const uint8_t *digits, int32_t length, int64_t max) {
    if (length < 1 || length > 11 || (length > 1 && digits[0] == '0')) return -1;
    int64_t value = 0;
    int32_t i = 0;
    if (length >= 8) {
        uint64_t chunk;
        memcpy(&chunk, digits, 8);
        uint64_t low = chunk & 0x0F0F0F0F0F0F0F0FULL;
        /* every byte '0'-'9': high nibble 3, low nibble at most 9 (adding 6 stays below 16) */
        if ((chunk & 0xF0F0F0F0F0F0F0F0ULL) != 0x3030303030303030ULL || ((low + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) != 0)
            return -1;
        uint64_t v = low;
        v = (v * 10) + (v >> 8);
        v = (((v & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
             (((v >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
        value = (int64_t)v;
        i = 8;
    }
    unsigned bad = 0;
    for (; i < length; i++) {
        unsigned digit = (unsigned)digits[i] - '0';
        bad |= digit > 9;
        value = value * 10 + (int64_t)(digit & 15);
    }
    return bad || value > max ? -1 : value;
}

/* Whether every byte is a base64url character: 16 at a time by range compares (SSE2), the
   rest through the table. */
static int token_alphabet(const uint8_t *p, int32_t length) {
    int32_t i = 0;
#if defined(__x86_64__)
    for (; i + 16 <= length; i += 16) {
        if (_mm_movemask_epi8(sc_alphabet_lanes(_mm_loadu_si128((const __m128i *)(p + i)))) != 0xFFFF) return 0;
    }
#endif
    unsigned all = 0;
    for (; i < length; i++) all |= sc_base64url_value(p[i]);
    return all < 64;
}

/* Decodes a field of exactly `length` characters to exactly `bytes` bytes. */
static int token_base64(const uint8_t *field, int32_t length, int32_t expected_length, size_t bytes, void *out) {
    return length == expected_length && sc_base64url_decode(field, (size_t)length, out) == (ptrdiff_t)bytes;
}

int sc_token_parse(const void *text, size_t n, int64_t max_created, int64_t max_lifetime, int32_t max_key_id,
                   sc_token_fields *out) {
    const uint8_t *t = text;
    ptrdiff_t dots[9];
    size_t found = sc_find_byte(t, n, '.', dots, 9);
    out->target = 0;          /* 6 bytes decoded into 8 */
    out->signature_length = 0;
    out->fields = (int32_t)found + 1; /* n is bounded by the caller */
    out->starts[0] = 0;
    for (size_t k = 1; k <= found && k <= 9; k++) out->starts[k] = (int32_t)dots[k - 1] + 1;
    if (found < 9) out->starts[found + 1] = (int32_t)n + 1;
#define SC_LENGTH(k) (out->starts[(k) + 1] - 1 - out->starts[k])
#define SC_FIELD(k) (t + out->starts[k])
    if (!(SC_LENGTH(0) == 2 && t[0] == 'v' && t[1] == '3')) return SC_TOKEN_VERSION;
    if (found != 8) return SC_TOKEN_FIELD_COUNT;
    int32_t key_length = SC_LENGTH(1);
    if (key_length < 1 || key_length > max_key_id) return SC_TOKEN_KEY_ID;
    if (!token_alphabet(SC_FIELD(1), key_length)) return SC_TOKEN_KEY_ID;
    if ((out->created = token_decimal(SC_FIELD(2), SC_LENGTH(2), max_created)) < 0) return SC_TOKEN_CREATED;
    if ((out->lifetime = token_decimal(SC_FIELD(3), SC_LENGTH(3), max_lifetime)) < 1) return SC_TOKEN_LIFETIME;
    if (!token_base64(SC_FIELD(4), SC_LENGTH(4), 22, 16, out->nonce)) return SC_TOKEN_NONCE;
    if (!token_base64(SC_FIELD(5), SC_LENGTH(5), 8, 6, &out->target)) return SC_TOKEN_TARGET;
    int32_t signature_length = SC_LENGTH(8);
    if (signature_length != 43 && signature_length != 86) return SC_TOKEN_SIGNATURE;
    if (!token_base64(SC_FIELD(8), signature_length, signature_length, signature_length == 43 ? 32 : 64, out->signature))
        return SC_TOKEN_SIGNATURE;
    out->signature_length = signature_length == 43 ? 32 : 64;
    return SC_TOKEN_OK;
#undef SC_LENGTH
#undef SC_FIELD
}
