/*
 * CSignBytes, encoding: base64url (decoding of public text 16 characters / 12 bytes at a time,
 * encoding, the whash digest) and the wtoken's fields parsed and written in one pass (SPEC §1.2,
 * §4.1). SSSE3 where the CPU has it (cpu.h), the same bytes without.
 */
#include "CSignBytes.h"
#include "cpu.h"

#include <string.h>

/* ---- base64url decoding of public text, 16 characters / 12 bytes at a time -------------- */

#if defined(__x86_64__)
#include <immintrin.h>


/* Lanes of v that hold a base64url character hold a nonzero byte, every other lane zero (the
   method of W. Muła and D. Lemire): a bit per group of high nibbles, looked up by each lane's
   high nibble and, among the low nibbles valid in that group, by its low nibble. Groups: bit 0
   0x2_ ('-'), bit 1 0x3_ (digits), bit 2 0x4_ and 0x6_ (letters from 1), bit 3 0x5_ (letters
   to A, '_'), bit 4 0x7_ (letters to A). Bytes from 0x80 have high nibbles with no group. */
__attribute__((target("ssse3"), always_inline))
static inline __m128i alphabet_classes(__m128i v, __m128i high) {
    const __m128i by_low = _mm_setr_epi8(0x1A, 0x1E, 0x1E, 0x1E, 0x1E, 0x1E, 0x1E, 0x1E, 0x1E, 0x1E, 0x1C, 0x04, 0x04, 0x05, 0x04, 0x0C);
    const __m128i by_high = _mm_setr_epi8(0, 0, 0x01, 0x02, 0x04, 0x08, 0x04, 0x10, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm_and_si128(_mm_shuffle_epi8(by_low, _mm_and_si128(v, _mm_set1_epi8(0x0F))), _mm_shuffle_epi8(by_high, high));
}

/* One block: 16 characters to 12 bytes at `out` (12 bytes written), or 0 at a byte outside
   the alphabet. The alphabet check of `alphabet_classes`, then each character's value by
   adding an offset looked up by its high nibble ('_' moved to a lane of its own), then two
   multiply-adds pack four 6-bit values into 3 bytes. */
__attribute__((target("ssse3"), always_inline))
static inline int decode_block(__m128i v, uint8_t *out) {
    __m128i high = _mm_and_si128(_mm_srli_epi32(v, 4), _mm_set1_epi8(0x0F));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(alphabet_classes(v, high), _mm_setzero_si128())) != 0) return 0;
    const __m128i offsets = _mm_setr_epi8(0, 0, 62 - '-', 52 - '0', -'A', -'A', 26 - 'a', 26 - 'a', 0, 0, 0, 0, 0, 63 - '_', 0, 0);
    __m128i underscore = _mm_and_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('_')), _mm_set1_epi8(8));
    __m128i values = _mm_add_epi8(v, _mm_shuffle_epi8(offsets, _mm_or_si128(high, underscore)));
    __m128i pairs = _mm_maddubs_epi16(values, _mm_set1_epi32(0x01400140));
    __m128i words = _mm_madd_epi16(pairs, _mm_set1_epi32(0x00011000));
    __m128i bytes = _mm_shuffle_epi8(words, _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
    _mm_storel_epi64((__m128i *)out, bytes);
    uint32_t last = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(bytes, 8));
    memcpy(out + 8, &last, 4);
    return 1;
}

/* All of `in` (n not 1 mod 4): whole blocks, then the last 2-15 characters as one more block
   padded with 'A' (value 0) in a register, loaded from where they are when `readable` (at
   least n) bytes may be read from `in`, else as the 16 bytes that end the text shifted into
   place by a shuffle, else copied. Returns the bytes written, or -1. The unused bits of the
   last character are checked by the caller. */
__attribute__((target("ssse3")))
static ptrdiff_t decode_ssse3(const uint8_t *in, size_t n, size_t readable, uint8_t *out) {
    size_t i = 0, o = 0;
    for (; i + 16 <= n; i += 16, o += 12) {
        if (!decode_block(_mm_loadu_si128((const __m128i *)(in + i)), out + o)) return -1;
    }
    size_t rest = n - i;
    if (rest == 0) return (ptrdiff_t)o;
    __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m128i kept = _mm_cmpgt_epi8(_mm_set1_epi8((char)rest), lanes); /* lanes 0..rest-1 */
    __m128i tail;
    if (i + 16 <= readable) {
        tail = _mm_loadu_si128((const __m128i *)(in + i));
    } else if (n >= 16) {
        /* lane k takes byte 16 - rest + k of the last 16 bytes */
        __m128i shift = _mm_add_epi8(lanes, _mm_set1_epi8((char)(16 - rest)));
        tail = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(in + n - 16)), _mm_and_si128(shift, _mm_set1_epi8(15)));
    } else {
        uint8_t copy[16] = {0};
        sc_copy_small(copy, in + i, rest);
        tail = _mm_loadu_si128((const __m128i *)copy);
    }
    tail = _mm_or_si128(_mm_and_si128(kept, tail), _mm_andnot_si128(kept, _mm_set1_epi8('A')));
    uint8_t bytes[12];
    if (!decode_block(tail, bytes)) return -1;
    size_t count = rest * 3 / 4;
    sc_copy_small(out + o, bytes, count);
    return (ptrdiff_t)(o + count);
}
#endif

/* sc_base64url_decode, allowed to read `readable` (at least n) bytes of `text`. */
static ptrdiff_t base64url_decode(const uint8_t *in, size_t n, size_t readable, uint8_t *out) {
    if (n % 4 == 1) return -1;
    size_t i = 0, o = 0;
#if defined(__x86_64__)
    if (has_ssse3()) {
        ptrdiff_t written = decode_ssse3(in, n, readable, out);
        if (written < 0 || n == 0) return written;
        uint8_t last = sc_base64url_value(in[n - 1]); /* a valid character: the block checked it */
        if ((n % 4 == 2 && (last & 15) != 0) || (n % 4 == 3 && (last & 3) != 0)) return -1;
        return written;
    }
#else
    (void)readable;
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

ptrdiff_t sc_base64url_decode(const void *text, size_t n, void *output) {
    return base64url_decode(text, n, n, output);
}

/* ---- wtoken fields (SPEC §4.1), parsed in one pass ------------------------------------- */

/* Digits only, no sign, no leading zero (except "0" itself), at most 11 digits and `max`;
   -1 for anything else. Eight digits at a time when there are that many (one 64-bit load,
   checked and combined with three multiplies), the rest one by one. */
__attribute__((always_inline))
static inline int64_t token_decimal(const uint8_t *digits, int32_t length, int64_t max) {
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

#if defined(__x86_64__)
/* token_alphabet by `alphabet_classes`, 16 at a time, the last 1-15 as one more block when 16
   bytes are readable there; -1 when they are not (the caller finishes through the table). */
__attribute__((target("ssse3")))
static int alphabet_ssse3(const uint8_t *p, int32_t length, size_t readable, int32_t *checked) {
    int32_t i = 0;
    for (; i + 16 <= length; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i high = _mm_and_si128(_mm_srli_epi32(v, 4), _mm_set1_epi8(0x0F));
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(alphabet_classes(v, high), _mm_setzero_si128())) != 0) return 0;
    }
    *checked = i;
    if (i == length) return 1;
    if ((size_t)i + 16 > readable) return -1;
    __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
    __m128i high = _mm_and_si128(_mm_srli_epi32(v, 4), _mm_set1_epi8(0x0F));
    unsigned invalid = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(alphabet_classes(v, high), _mm_setzero_si128()));
    return (invalid & ((1u << (length - i)) - 1)) == 0;
}
#endif

/* Whether every byte of a field is a base64url character (`readable`: bytes of the token from
   p on, which SSSE3 may read). */
static int token_alphabet(const uint8_t *p, int32_t length, size_t readable) {
    int32_t i = 0;
#if defined(__x86_64__)
    if (has_ssse3()) {
        int result = alphabet_ssse3(p, length, readable, &i);
        if (result >= 0) return result;
    }
#else
    (void)readable;
#endif
    unsigned all = 0;
    for (; i < length; i++) all |= sc_base64url_value(p[i]);
    return all < 64;
}

/* The dots of a wtoken: starts[k] = 1 + where dot k is, for the first 10 dots, and the count
   of every dot. SSE2 compares 16 bytes at a time into a mask of 64 (the last 1-15 bytes as the
   16 that end the text, shifted past the bytes already seen), whose set bits are then taken one
   by one. */
static size_t token_dots(const uint8_t *t, size_t n, int32_t starts[11]) {
    size_t found = 0, i = 0;
#if defined(__SSE2__)
    if (n >= 16) {
        const __m128i dot = _mm_set1_epi8('.');
#define SC_DOTS(at) ((uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(t + (at))), dot)))
        for (; i < n; i += 64) {
            uint64_t mask = 0;
            if (i + 64 <= n) {
                mask = SC_DOTS(i) | SC_DOTS(i + 16) << 16 | SC_DOTS(i + 32) << 32 | SC_DOTS(i + 48) << 48;
            } else {
                size_t k = 0;
                for (; i + k + 16 <= n; k += 16) mask |= SC_DOTS(i + k) << k;
                if (i + k < n) mask |= SC_DOTS(n - 16) >> (i + k - (n - 16)) << k;
            }
            int32_t after = (int32_t)i + 1; /* a field starts one byte after its dot */
            for (; mask != 0 && found < 10; mask &= mask - 1) starts[++found] = after + (int32_t)__builtin_ctzll(mask);
            for (; mask != 0; mask &= mask - 1) found++;
        }
#undef SC_DOTS
    }
#endif
    for (; i < n; i++) {
        if (t[i] != '.') continue;
        if (found < 10) starts[found + 1] = (int32_t)i + 1;
        found++;
    }
    return found;
}

/* A fixed-size base64url field: `length` characters (22, 8, 43 or 86) to length * 3 / 4 bytes
   at `out`, which has room for whole 12-byte blocks; 0 for a byte outside the alphabet or
   unused bits of the last character that are not zero. SSSE3 decodes each block of 16 where it
   lies when 16 bytes can be read there (before `end`), else from the 16 bytes that end at `end`,
   shifted into place; lanes past the field hold 'A' (value 0). */
#if defined(__x86_64__)
__attribute__((target("ssse3"), always_inline))
static inline int decode_field_ssse3(const uint8_t *p, size_t length, const uint8_t *end, uint8_t *out) {
    const __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (size_t i = 0; i < length; i += 16) {
        __m128i v;
        if (p + i + 16 <= end) {
            v = _mm_loadu_si128((const __m128i *)(p + i));
        } else {
            __m128i shift = _mm_add_epi8(lanes, _mm_set1_epi8((char)(p + i - (end - 16))));
            v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(end - 16)), _mm_and_si128(shift, _mm_set1_epi8(15)));
        }
        if (length - i < 16) {
            __m128i kept = _mm_cmpgt_epi8(_mm_set1_epi8((char)(length - i)), lanes);
            v = _mm_or_si128(_mm_and_si128(kept, v), _mm_andnot_si128(kept, _mm_set1_epi8('A')));
        }
        if (!decode_block(v, out + i / 16 * 12)) return 0;
    }
    uint8_t last = sc_base64url_value(p[length - 1]);
    return length % 4 == 2 ? (last & 15) == 0 : length % 4 == 3 ? (last & 3) == 0 : 1;
}
#endif

static int decode_field_portable(const uint8_t *p, size_t length, const uint8_t *end, uint8_t *out) {
    return base64url_decode(p, length, (size_t)(end - p), out) == (ptrdiff_t)(length * 3 / 4);
}

typedef int (*field_decoder)(const uint8_t *p, size_t length, const uint8_t *end, uint8_t *out);

/* The nonce, target and signature fields of a token whose dots are found (`out->starts`), by
   `decode`; SC_TOKEN_OK or the first failing check. Inlined into one function per decoder, so
   each field's length is a constant there. */
__attribute__((always_inline))
static inline int token_binary_fields(const uint8_t *t, const uint8_t *end, sc_token_fields *out, field_decoder decode) {
    const int32_t *starts = out->starts;
    uint8_t decoded[72]; /* the longest field (86 characters) in whole 12-byte blocks */
    if (starts[5] - 1 - starts[4] != 22 || !decode(t + starts[4], 22, end, decoded)) return SC_TOKEN_NONCE;
    memcpy(out->nonce, decoded, 16);
    if (starts[6] - 1 - starts[5] != 8 || !decode(t + starts[5], 8, end, decoded)) return SC_TOKEN_TARGET;
    memcpy(&out->target, decoded, 6);
    int32_t signature_length = starts[9] - 1 - starts[8];
    if (signature_length == 43) {
        if (!decode(t + starts[8], 43, end, decoded)) return SC_TOKEN_SIGNATURE;
        memcpy(out->signature, decoded, 32);
    } else if (signature_length == 86) {
        if (!decode(t + starts[8], 86, end, decoded)) return SC_TOKEN_SIGNATURE;
        memcpy(out->signature, decoded, 64);
    } else {
        return SC_TOKEN_SIGNATURE;
    }
    out->signature_length = signature_length == 43 ? 32 : 64;
    return SC_TOKEN_OK;
}

#if defined(__x86_64__)
__attribute__((target("ssse3")))
static int token_binary_fields_ssse3(const uint8_t *t, const uint8_t *end, sc_token_fields *out) {
    return token_binary_fields(t, end, out, decode_field_ssse3);
}
#endif

__attribute__((noinline)) /* out of line: sc_token_parse's SSSE3 path sets up no frame for it */
static int token_binary_fields_portable(const uint8_t *t, const uint8_t *end, sc_token_fields *out) {
    return token_binary_fields(t, end, out, decode_field_portable);
}

#if defined(__x86_64__)
__attribute__((target("ssse3")))
static int decode_digest_ssse3(const uint8_t *text, uint8_t out[36]) { return decode_field_ssse3(text, 43, text + 43, out); }
#endif

int sc_base64url_decode_digest(const void *text, size_t n, void *out32) {
    uint8_t decoded[36]; /* three whole 12-byte blocks */
    if (n != 43) return 0;
#if defined(__x86_64__)
    if (has_ssse3()) {
        if (!decode_digest_ssse3(text, decoded)) return 0;
        memcpy(out32, decoded, 32);
        return 1;
    }
#endif
    if (!decode_field_portable(text, 43, (const uint8_t *)text + 43, decoded)) return 0;
    memcpy(out32, decoded, 32);
    return 1;
}

int sc_token_parse(const void *text, size_t n, int64_t max_created, int64_t max_lifetime, int32_t max_key_id,
                   int check_key_id_alphabet, sc_token_fields *out) {
    const uint8_t *t = text;
    uint8_t padded[16] = {0};
    if (n < 16) { /* no valid token is this short: copied so that 16 bytes can be read */
        sc_copy_small(padded, t, n);
        t = padded;
    }
    const uint8_t *end = t + (n < 16 ? 16 : n); /* where reading must stop */
    size_t found = token_dots(t, n, out->starts);
    out->target = 0;
    out->signature_length = 0;
    out->fields = (int32_t)found + 1; /* n is bounded by the caller */
    out->starts[0] = 0;
    if (found < 9) out->starts[found + 1] = (int32_t)n + 1;
#define SC_LENGTH(k) (out->starts[(k) + 1] - 1 - out->starts[k])
#define SC_FIELD(k) (t + out->starts[k])
    if (!(SC_LENGTH(0) == 2 && t[0] == 'v' && t[1] == '3')) return SC_TOKEN_VERSION;
    if (found != 8) return SC_TOKEN_FIELD_COUNT;
    int32_t key_length = SC_LENGTH(1);
    if (key_length < 1 || key_length > max_key_id) return SC_TOKEN_KEY_ID;
    if (check_key_id_alphabet && !token_alphabet(SC_FIELD(1), key_length, (size_t)(end - SC_FIELD(1)))) return SC_TOKEN_KEY_ID;
    if ((out->created = token_decimal(SC_FIELD(2), SC_LENGTH(2), max_created)) < 0) return SC_TOKEN_CREATED;
    if ((out->lifetime = token_decimal(SC_FIELD(3), SC_LENGTH(3), max_lifetime)) < 1) return SC_TOKEN_LIFETIME;
#if defined(__x86_64__)
    if (has_ssse3()) return token_binary_fields_ssse3(t, end, out);
#endif
    return token_binary_fields_portable(t, end, out);
#undef SC_LENGTH
#undef SC_FIELD
}

/* ---- base64url encoding and the wtoken (SPEC §4.1) --------------------------------------- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the pair table below stores the first character in the low byte"
#endif

/* The character of a 6-bit value, and the two characters of a 12-bit value (the first in the low
   byte), computed by the compiler: one table load per two characters. */
#define SC_B64(v) ((v) < 26 ? 'A' + (v) : (v) < 52 ? 'a' + (v) - 26 : (v) < 62 ? '0' + (v) - 52 : (v) == 62 ? '-' : '_')
#define SC_PAIR(v) (uint16_t)(SC_B64((v) >> 6) | SC_B64((v) & 63) << 8)
#define SC_P4(v) SC_PAIR(v), SC_PAIR((v) + 1), SC_PAIR((v) + 2), SC_PAIR((v) + 3)
#define SC_P16(v) SC_P4(v), SC_P4((v) + 4), SC_P4((v) + 8), SC_P4((v) + 12)
#define SC_P64(v) SC_P16(v), SC_P16((v) + 16), SC_P16((v) + 32), SC_P16((v) + 48)
#define SC_P256(v) SC_P64(v), SC_P64((v) + 64), SC_P64((v) + 128), SC_P64((v) + 192)
#define SC_P1024(v) SC_P256(v), SC_P256((v) + 256), SC_P256((v) + 512), SC_P256((v) + 768)
static const uint16_t base64url_pairs[4096] = {SC_P1024(0), SC_P1024(1024), SC_P1024(2048), SC_P1024(3072)};
static const char base64url_alphabet[65] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

#if defined(__x86_64__)
/* 12 bytes (lanes 0-11 of v) to 16 characters (W. Muła's SSSE3 method): a shuffle and two
   multiplies put each 6-bit value in its own lane, then one shuffle of a 16-entry table gives
   the offset from value to character for each of the five ranges of the alphabet. */
__attribute__((target("ssse3"), always_inline))
static inline __m128i encode_block(__m128i v) {
    v = _mm_shuffle_epi8(v, _mm_set_epi8(10, 11, 9, 10, 7, 8, 6, 7, 4, 5, 3, 4, 1, 2, 0, 1));
    __m128i high = _mm_mulhi_epu16(_mm_and_si128(v, _mm_set1_epi32(0x0FC0FC00)), _mm_set1_epi32(0x04000040));
    __m128i low = _mm_mullo_epi16(_mm_and_si128(v, _mm_set1_epi32(0x003F03F0)), _mm_set1_epi32(0x01000010));
    __m128i values = _mm_or_si128(high, low);
    /* 0-25 -> 13, 26-51 -> 0, 52-61 -> 1-10, 62 -> 11, 63 -> 12 */
    __m128i range = _mm_or_si128(_mm_subs_epu8(values, _mm_set1_epi8(51)),
                                 _mm_and_si128(_mm_cmpgt_epi8(_mm_set1_epi8(26), values), _mm_set1_epi8(13)));
    const __m128i offsets = _mm_setr_epi8('a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                          '0' - 52, '0' - 52, '0' - 52, '-' - 62, '_' - 63, 'A', 0, 0);
    return _mm_add_epi8(values, _mm_shuffle_epi8(offsets, range));
}

/* All of `in`: whole blocks while 16 bytes are readable, then the last 1-15 bytes as the 16 that
   end the input (or a zeroed copy of a shorter input), moved to the first lanes with zero lanes
   after them so the unused bits of the last character come out zero. Returns the characters
   written, (n * 4 + 2) / 3. */
__attribute__((target("ssse3"), always_inline))
static inline size_t encode_ssse3(const uint8_t *in, size_t n, uint8_t *out) {
    size_t i = 0, o = 0;
    for (; i + 16 <= n; i += 12, o += 16) _mm_storeu_si128((__m128i *)(out + o), encode_block(_mm_loadu_si128((const __m128i *)(in + i))));
    size_t rest = n - i;
    if (rest == 0) return o;
    __m128i tail;
    if (n >= 16) {
        const __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        __m128i from = _mm_add_epi8(lanes, _mm_set1_epi8((char)(16 - rest))); /* lane k takes byte 16 - rest + k */
        __m128i past = _mm_andnot_si128(_mm_cmpgt_epi8(_mm_set1_epi8((char)rest), lanes), _mm_set1_epi8((char)0x80));
        tail = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(in + n - 16)), _mm_or_si128(from, past));
    } else {
        uint8_t copy[16] = {0};
        sc_copy_small(copy, in, n);
        tail = _mm_loadu_si128((const __m128i *)copy);
    }
    if (rest > 12) { /* 16 characters for 12 bytes, then the last 1-3 */
        _mm_storeu_si128((__m128i *)(out + o), encode_block(tail));
        o += 16;
        tail = _mm_srli_si128(tail, 12);
        rest -= 12;
    }
    uint8_t characters[16];
    _mm_storeu_si128((__m128i *)characters, encode_block(tail));
    size_t count = (rest * 4 + 2) / 3;
    sc_copy_small(out + o, characters, count);
    return o + count;
}

/* encode_ssse3 for any length, and for the lengths of a digest or signature, a nonce and a
   target hint, where the length is a constant and the blocks unroll. */
__attribute__((target("ssse3")))
static size_t encode_any_ssse3(const uint8_t *in, size_t n, uint8_t *out) {
    switch (n) {
    case 32: return encode_ssse3(in, 32, out);
    case 16: return encode_ssse3(in, 16, out);
    case 6: return encode_ssse3(in, 6, out);
    default: return encode_ssse3(in, n, out);
    }
}
#endif

size_t sc_base64url_encode(const void *data, size_t n, void *output) {
    const uint8_t *in = data;
    uint8_t *out = output;
    size_t i = 0, o = 0;
#if defined(__x86_64__)
    if (has_ssse3()) return encode_any_ssse3(in, n, out);
#endif
    /* six bytes to eight characters with one 8-byte load and one 8-byte store */
    for (; i + 8 <= n; i += 6, o += 8) {
        uint64_t v;
        memcpy(&v, in + i, 8);
        v = __builtin_bswap64(v);
        uint64_t characters = (uint64_t)base64url_pairs[v >> 52] | (uint64_t)base64url_pairs[(v >> 40) & 0xFFF] << 16 |
                              (uint64_t)base64url_pairs[(v >> 28) & 0xFFF] << 32 | (uint64_t)base64url_pairs[(v >> 16) & 0xFFF] << 48;
        memcpy(out + o, &characters, 8);
    }
    for (; i + 3 <= n; i += 3, o += 4) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        uint32_t characters = (uint32_t)base64url_pairs[v >> 12] | (uint32_t)base64url_pairs[v & 0xFFF] << 16;
        memcpy(out + o, &characters, 4);
    }
    if (n - i == 1) {
        out[o++] = (uint8_t)base64url_alphabet[in[i] >> 2];
        out[o++] = (uint8_t)base64url_alphabet[(in[i] & 3) << 4];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 8 | in[i + 1];
        out[o++] = (uint8_t)base64url_alphabet[v >> 10];
        out[o++] = (uint8_t)base64url_alphabet[(v >> 4) & 63];
        out[o++] = (uint8_t)base64url_alphabet[(v << 2) & 63];
    }
    return o;
}

#if defined(__x86_64__)
/* The 43 characters of a digest in three rows: bytes 0-11, 12-23, and 24-31 with zero lanes
   after them (characters 32-42, then five 'A's). Every load is within the 32 bytes. */
__attribute__((target("ssse3"), always_inline))
static inline void digest_rows_ssse3(const uint8_t *digest, __m128i rows[3]) {
    rows[0] = encode_block(_mm_loadu_si128((const __m128i *)digest));
    rows[1] = encode_block(_mm_loadu_si128((const __m128i *)(digest + 12)));
    const __m128i last8 = _mm_setr_epi8(8, 9, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
    rows[2] = encode_block(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(digest + 16)), last8));
}

__attribute__((target("ssse3")))
static void encode_digest_ssse3(const uint8_t *digest, uint8_t *out) {
    __m128i rows[3];
    digest_rows_ssse3(digest, rows);
    for (int k = 0; k < 3; k++) _mm_storeu_si128((__m128i *)(out + 16 * k), rows[k]);
}

/* Characters 32-42 are compared as lanes 5-15 of the text's last 16 bytes (27-42), the third
   row moved up five lanes to meet them. No lane decides early: the time does not depend on
   where the text differs. */
__attribute__((target("ssse3")))
static int is_digest_ssse3(const uint8_t *text, const uint8_t *digest) {
    __m128i rows[3];
    digest_rows_ssse3(digest, rows);
    __m128i same = _mm_and_si128(_mm_cmpeq_epi8(rows[0], _mm_loadu_si128((const __m128i *)text)),
                                 _mm_cmpeq_epi8(rows[1], _mm_loadu_si128((const __m128i *)(text + 16))));
    __m128i last = _mm_cmpeq_epi8(_mm_slli_si128(rows[2], 5), _mm_loadu_si128((const __m128i *)(text + 27)));
    unsigned mask = (unsigned)_mm_movemask_epi8(same) & ((unsigned)_mm_movemask_epi8(last) | 0x1Fu);
    return mask == 0xFFFFu;
}
#endif

int sc_base64url_is_digest(const void *text, size_t n, const void *digest32) {
    if (n != 43) return 0;
#if defined(__x86_64__)
    if (has_ssse3()) return is_digest_ssse3(text, digest32);
#endif
    uint8_t encoded[43];
    sc_base64url_encode(digest32, 32, encoded);
    return sc_memcmp(text, encoded, 43) == 0;
}

/* The eight decimal digits of v < 10^8, the first in the lowest byte, with a few multiplies
   and no loop (P. Khuong's method: the two halves of four digits, then their pairs, then single
   digits, each split in the lanes of one word). */
static inline uint64_t eight_digits(uint64_t v) {
    uint64_t halves = v + (0x100000000ULL - 10000) * ((v * 0x68DB8BBULL) >> 40);
    uint64_t pairs = halves + (0x10000 - 100) * (((halves * 0x147B) >> 19) & 0x7F0000007FULL);
    uint64_t digits = pairs + (0x100 - 10) * (((pairs * 0x67) >> 10) & 0xF000F000F000FULL);
    return __builtin_bswap64(digits | 0x3030303030303030ULL);
}

/* The decimal of value ('-' first when negative, for a WToken whose fields were set by hand):
   a creation time of 9 to 11 digits as its first 1-3 and `eight_digits`, anything else two
   digits at a time from a table of "00" to "99". */
__attribute__((always_inline))
static inline size_t token_put_decimal(uint8_t *out, int64_t value) {
    size_t sign = value < 0;
    if (sign) *out++ = '-';
    uint64_t v = sign ? 0 - (uint64_t)value : (uint64_t)value;
    static const char pairs[201] =
        "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849"
        "5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
    if (v >= 100000000 && v < 100000000000ULL) {
        uint64_t head = v / 100000000, low = eight_digits(v % 100000000);
        size_t length = head >= 100 ? 3 : head >= 10 ? 2 : 1;
        if (length == 3) {
            out[0] = (uint8_t)('0' + head / 100);
            memcpy(out + 1, pairs + 2 * (head % 100), 2);
        } else if (length == 2) {
            memcpy(out, pairs + 2 * head, 2);
        } else {
            out[0] = (uint8_t)('0' + head);
        }
        memcpy(out + length, &low, 8);
        return sign + length + 8;
    }
    size_t digits = (size_t)sc_decimal_digits(v);
    size_t end = digits;
    for (; v >= 100; v /= 100) {
        end -= 2;
        memcpy(out + end, pairs + 2 * (v % 100), 2);
    }
    if (v >= 10) {
        memcpy(out + end - 2, pairs + 2 * v, 2);
    } else {
        out[end - 1] = (uint8_t)('0' + v);
    }
    return sign + digits;
}

/* The token's fields in order, their base64url by `encode` (sc_base64url_encode, or the SSSE3
   encoder inlined with the fixed lengths of the nonce, target hint and signature). */
typedef size_t (*field_encoder)(const uint8_t *in, size_t n, uint8_t *out);

__attribute__((always_inline))
static inline size_t token_encode(const sc_token_parts *parts, uint8_t *out, field_encoder encode) {
    size_t o = 0;
    memcpy(out, "v3.", 3);
    o = 3;
    if (parts->key_id_length > 0) memcpy(out + o, parts->key_id, parts->key_id_length);
    o += parts->key_id_length;
    out[o++] = '.';
    o += token_put_decimal(out + o, parts->created);
    out[o++] = '.';
    o += token_put_decimal(out + o, parts->lifetime);
    out[o++] = '.';
    o += encode(parts->nonce, 16, out + o);
    out[o++] = '.';
    o += parts->target_length == 6 ? encode(parts->target, 6, out + o) : encode(parts->target, parts->target_length, out + o);
    out[o++] = '.';
    if (parts->account_length > 0) o += encode(parts->account, parts->account_length, out + o);
    out[o++] = '.';
    if (parts->headers_length > 0) memcpy(out + o, parts->headers, parts->headers_length);
    o += parts->headers_length;
    out[o++] = '.';
    switch (parts->signature_length) {
    case 32: o += encode(parts->signature, 32, out + o); break;
    case 64: o += encode(parts->signature, 64, out + o); break;
    default: o += encode(parts->signature, parts->signature_length, out + o);
    }
    return o;
}

static size_t encode_portable(const uint8_t *in, size_t n, uint8_t *out) { return sc_base64url_encode(in, n, out); }

#if defined(__x86_64__)
__attribute__((target("ssse3")))
static size_t token_encode_ssse3(const sc_token_parts *parts, uint8_t *out) { return token_encode(parts, out, encode_ssse3); }
#endif

__attribute__((noinline)) /* out of line: the dispatcher below sets up no frame for it */
static size_t token_encode_portable(const sc_token_parts *parts, uint8_t *out) { return token_encode(parts, out, encode_portable); }

size_t sc_token_encode(const sc_token_parts *parts, void *output) {
#if defined(__x86_64__)
    if (has_ssse3()) return token_encode_ssse3(parts, output);
#endif
    return token_encode_portable(parts, output);
}

#if defined(__x86_64__)
__attribute__((target("ssse3")))
static size_t whash_and_token_ssse3(const sc_token_parts *parts, const void *whash32, void *whash48, void *token) {
    encode_digest_ssse3(whash32, whash48);
    return token_encode_ssse3(parts, token);
}
#endif

size_t sc_whash_and_token_encode(const sc_token_parts *parts, const void *whash32, void *whash48, void *token) {
#if defined(__x86_64__)
    if (has_ssse3()) return whash_and_token_ssse3(parts, whash32, whash48, token);
#endif
    sc_base64url_encode(whash32, 32, whash48);
    return token_encode_portable(parts, token);
}
