/*
 * The canonical URL of a common request URL (SPEC §2) in one pass: SignCore's hot path for
 * canonicalisation, in C so that a byte costs a few instructions (SIMD finds the bytes that
 * need a decision, 16 at a time; unreserved runs are copied as they are).
 */
#include "CSignBytes.h"
#include "cpu.h"

#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3): 1, every other byte 0. */
static const uint8_t unreserved[256] = {
    ['-'] = 1, ['.'] = 1, ['_'] = 1, ['~'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
    ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* Bit k set when p[k] is not unreserved, for the 16 bytes at p. */
static inline uint32_t reserved_mask16(const uint8_t *p) {
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20)); /* 'A'-'Z' -> 'a'-'z'; nothing else lands there */
    __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)), _mm_cmpgt_epi8(_mm_set1_epi8('z' + 1), folded));
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)), _mm_cmpgt_epi8(_mm_set1_epi8('9' + 1), v));
    __m128i dash_dot = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('-' - 1)), _mm_cmpgt_epi8(_mm_set1_epi8('.' + 1), v));
    __m128i other = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('_')), _mm_cmpeq_epi8(v, _mm_set1_epi8('~')));
    __m128i plain = _mm_or_si128(_mm_or_si128(letter, digit), _mm_or_si128(dash_dot, other));
    return (uint32_t)_mm_movemask_epi8(plain) ^ 0xFFFFu;
#else
    uint32_t mask = 0;
    for (int k = 0; k < 16; k++) mask |= (uint32_t)(unreserved[p[k]] ^ 1) << k;
    return mask;
#endif
}

#if defined(__x86_64__)
/* reserved_mask16 by two nibble-table shuffles (the method of W. Muła and D. Lemire): a bit per
   group of high nibbles, looked up by each byte's high nibble and, among the low nibbles
   unreserved in that group, by its low nibble. Groups: bit 0 0x2_ ('-' '.'), bit 1 0x3_
   (digits), bit 2 0x4_ and 0x6_ (letters from 1), bit 3 0x5_ (letters to A, '_'), bit 4 0x7_
   (letters to A, '~'); bytes from 0x80 have high nibbles with no group. */
__attribute__((target("ssse3"), always_inline))
static inline uint32_t reserved_mask16_ssse3(const uint8_t *p) {
    const __m128i by_low = _mm_setr_epi8(26, 30, 30, 30, 30, 30, 30, 30, 30, 30, 28, 4, 4, 5, 21, 12);
    const __m128i by_high = _mm_setr_epi8(0, 0, 1, 2, 4, 8, 4, 16, 0, 0, 0, 0, 0, 0, 0, 0);
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i high = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(0x0F));
    __m128i classes = _mm_and_si128(_mm_shuffle_epi8(by_low, _mm_and_si128(v, _mm_set1_epi8(0x0F))), _mm_shuffle_epi8(by_high, high));
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(classes, _mm_setzero_si128()));
}
#endif

/* Folds the upper-case letters of out[start..<end] to lower case (a host), 16 at a time: reads
   up to 15 bytes past `end`, which the caller's buffer has, and writes back only what it read. */
static inline void fold_host(uint8_t *out, size_t start, size_t end) {
#if defined(__SSE2__)
    const __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (size_t k = start; k < end; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(out + k));
        size_t left = end - k < 16 ? end - k : 16;
        __m128i upper = _mm_and_si128(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)), _mm_cmpgt_epi8(_mm_set1_epi8('Z' + 1), v)),
                                      _mm_cmpgt_epi8(_mm_set1_epi8((char)left), lanes));
        if (_mm_movemask_epi8(upper) != 0) _mm_storeu_si128((__m128i *)(out + k), _mm_or_si128(v, _mm_and_si128(upper, _mm_set1_epi8(0x20))));
    }
#else
    for (size_t k = start; k < end; k++) out[k] = (uint8_t)(out[k] | ((unsigned)(out[k] - 'A') < 26) << 5);
#endif
}

/* One more than the value of a hex digit, 0 for any other byte. */
static const uint8_t hex_digits[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* "%XX" at in[j] that decodes to a reserved byte: the canonical form keeps it escaped, with
   upper-case digits (written to out). An escaped unreserved byte (or a bad escape) is left to
   the general path, which decodes it (or reports it). */
__attribute__((always_inline))
static inline int reserved_escape(const uint8_t *in, size_t n, size_t j, uint8_t *out) {
    if (j + 2 >= n) return 0;
    unsigned high = hex_digits[in[j + 1]] - 1u, low = hex_digits[in[j + 2]] - 1u; /* not a digit: above 15 */
    if ((high | low) > 15 || unreserved[high << 4 | low]) return 0;
    out[1] = (uint8_t)"0123456789ABCDEF"[high];
    out[2] = (uint8_t)"0123456789ABCDEF"[low];
    return 1;
}

typedef struct {
    int32_t start, key_end, end;
} sc_url_pair;

/* Unsigned byte order of the keys; a key that is a prefix of the other comes first. */
static inline int key_less(const uint8_t *text, sc_url_pair a, sc_url_pair b) {
    int32_t length_a = a.key_end - a.start, length_b = b.key_end - b.start;
    if (length_a > 0 && length_b > 0 && text[a.start] != text[b.start]) return text[a.start] < text[b.start];
    int order = memcmp(text + a.start, text + b.start, (size_t)(length_a < length_b ? length_a : length_b));
    return order < 0 || (order == 0 && length_a < length_b);
}

/* Puts the pairs of the query out[query..<end] in key order, keeping the order of equal keys (a
   list): insertion sort, one comparison per pair when already in order, and nothing moves then;
   otherwise the pairs are copied back from `spare` in their new order. */
__attribute__((always_inline))
static inline void sort_pairs(uint8_t *out, size_t query, size_t end, sc_url_pair *pairs, int count, uint8_t *spare) {
    int moved = 0;
    for (int j = 1; j < count; j++) {
        sc_url_pair pair = pairs[j];
        int k = j;
        while (k > 0 && key_less(out, pair, pairs[k - 1])) {
            pairs[k] = pairs[k - 1];
            k--;
        }
        if (k != j) {
            pairs[k] = pair;
            moved = 1;
        }
    }
    if (!moved) return;
    memcpy(spare, out + query, end - query);
    uint8_t *at = out + query;
    for (int j = 0; j < count; j++) {
        if (j > 0) *at++ = '&';
        size_t length = (size_t)(pairs[j].end - pairs[j].start);
        sc_copy_small(at, spare + ((size_t)pairs[j].start - query), length);
        at += length;
    }
}

/* '+' at in[j] spelled out as `escape` at out[j + *delta], the rest of the input copied again
   after it. 0 past SC_URL_COMMON_MAX_PLUSES (*delta counts 2 per '+', 1 for an empty path). */
static inline int spell_plus(const uint8_t *in, size_t n, size_t j, uint8_t *out, size_t *delta, const char *escape) {
    if (*delta / 2 == SC_URL_COMMON_MAX_PLUSES) return 0;
    memcpy(out + j + *delta + 3, in + j + 1, n - j - 1);
    memcpy(out + j + *delta, escape, 3);
    *delta += 2;
    return 1;
}

typedef uint32_t (*reserved_finder)(const uint8_t *p);

/* The reserved bytes of an input in order, found 16 at a time by `find` (reserved_mask16 or its
   SSSE3 form): `mask` holds those of the block at `block` not yet taken. The last block overlaps
   the one before (its lanes already seen shifted out), and an input under 16 bytes is read
   through a padded copy. */
typedef struct {
    const uint8_t *in;
    size_t n, block;
    uint32_t mask;
} reserved_cursor;

__attribute__((always_inline))
static inline uint32_t block_mask(const uint8_t *in, size_t n, size_t block, reserved_finder find) {
    if (block + 16 <= n) return find(in + block);
    if (n >= 16) return find(in + n - 16) >> (16 - (n - block));
    uint8_t padded[16] = {0};
    memcpy(padded, in + block, n - block);
    return find(padded) & ((1u << (n - block)) - 1);
}

/* Where the next reserved byte is, or n when none is left. */
__attribute__((always_inline))
static inline size_t next_reserved(reserved_cursor *cursor, reserved_finder find) {
    while (cursor->mask == 0) {
        cursor->block += 16;
        if (cursor->block >= cursor->n) return cursor->n;
        cursor->mask = block_mask(cursor->in, cursor->n, cursor->block, find);
    }
    size_t j = cursor->block + (size_t)__builtin_ctz(cursor->mask);
    cursor->mask &= cursor->mask - 1;
    return j;
}

/* sc_url_common finding reserved bytes by `find`: inlined into one function per finder. The
   host, the path and the query each have a loop of their own over their reserved bytes, so
   each byte is decided by the few cases of its part. */
__attribute__((always_inline))
static inline ptrdiff_t url_common(const void *input, size_t n, void *output, void *spare, reserved_finder find) {
    const uint8_t *in = input;
    uint8_t *out = output;
    /* The scheme exactly as it is written canonically: "https://" or "http://" and a host byte. */
    if (n <= 8 || n > 8192) return -1;
    size_t host_start;
    if (memcmp(in, "https://", 8) == 0) {
        host_start = 8;
    } else if (memcmp(in, "http://", 7) == 0) {
        host_start = 7;
    } else {
        return -1;
    }
    memcpy(out, in, n);
    reserved_cursor cursor = {in, n, host_start, block_mask(in, n, host_start, find)};

    /* The host: 1-255 unreserved bytes (upper case folded), then the path or the query; a port,
       userinfo or IPv6 literal is not common. The whole rest a host: an empty path, "/". */
    size_t j = next_reserved(&cursor, find);
    if (j == host_start || j - host_start > 255) return -1;
    fold_host(out, host_start, j);
    if (j == n) {
        out[n] = '/';
        return (ptrdiff_t)(n + 1);
    }
    uint8_t c = in[j];
    size_t delta = 0; /* out[j + delta] is where in[j] went: each '+' adds 2, an empty path 1 */
    if (c == '?') { /* no path: "/" */
        memcpy(out + j + 1, in + j, n - j);
        out[j] = '/';
        delta = 1;
    } else if (c != '/') {
        return -1;
    }

    /* The path: '/' (never before a dot: maybe a dot segment), escapes, '+', up to '?'. */
    for (; c != '?'; c = in[j]) {
        if (c == '/') {
            if (j + 1 < n && in[j + 1] == '.') return -1;
        } else if (c == '%') {
            if (!reserved_escape(in, n, j, out + j + delta)) return -1;
        } else if (c == '+') { /* a literal '+' in the path */
            if (!spell_plus(in, n, j, out, &delta, "%2B")) return -1;
        } else {
            return -1;
        }
        j = next_reserved(&cursor, find);
        if (j == n) return (ptrdiff_t)(n + delta);
    }
    if (j + 1 == n) return (ptrdiff_t)(j + delta); /* "?" alone: no query */

    /* The query: '&'-separated pairs with exactly one '=' each. */
    sc_url_pair pairs[SC_URL_COMMON_MAX_PAIRS];
    int pair_count = 0;
    int32_t pair_start = (int32_t)(j + delta + 1), key_end = -1;
    while ((j = next_reserved(&cursor, find)) < n) {
        c = in[j];
        if (c == '=') {
            if (key_end >= 0) return -1; /* a second '=' is data: %3D */
            key_end = (int32_t)(j + delta);
        } else if (c == '&') {
            /* "a" becomes "a=", an empty piece is dropped: both for the general path */
            if (key_end < 0 || j + 1 == n || pair_count == SC_URL_COMMON_MAX_PAIRS) return -1;
            pairs[pair_count++] = (sc_url_pair){pair_start, key_end, (int32_t)(j + delta)};
            pair_start = (int32_t)(j + delta + 1);
            key_end = -1;
        } else if (c == '%') {
            if (!reserved_escape(in, n, j, out + j + delta)) return -1;
        } else if (c == '+') { /* a space in the query */
            if (!spell_plus(in, n, j, out, &delta, "%20")) return -1;
        } else {
            return -1;
        }
    }
    size_t length = n + delta;
    if (key_end < 0 || pair_count == SC_URL_COMMON_MAX_PAIRS) return -1;
    pairs[pair_count++] = (sc_url_pair){pair_start, key_end, (int32_t)length};
    sort_pairs(out, (size_t)pairs[0].start, length, pairs, pair_count, spare);
    return (ptrdiff_t)length;
}

#if defined(__x86_64__)
__attribute__((target("ssse3")))
static ptrdiff_t url_common_ssse3(const void *input, size_t n, void *output, void *spare) {
    return url_common(input, n, output, spare, reserved_mask16_ssse3);
}
#endif

/* Out of line, so that the dispatcher below sets up no frame for it. */
__attribute__((noinline))
static ptrdiff_t url_common_portable(const void *input, size_t n, void *output, void *spare) {
    return url_common(input, n, output, spare, reserved_mask16);
}

ptrdiff_t sc_url_common(const void *input, size_t n, void *output, void *spare) {
#if defined(__x86_64__)
    if (has_ssse3()) return url_common_ssse3(input, n, output, spare);
#endif
    return url_common_portable(input, n, output, spare);
}
