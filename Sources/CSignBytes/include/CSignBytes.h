/*
 * CSignBytes: the portable C of SignCore, no cryptographic library behind it: constant-time
 * comparison and wiping, the replay guard's pages, atomics and lock, the byte tables and finders of the
 * token and URL passes, base64url decoding of public text. It includes no third-party header and
 * builds on Linux and every Apple platform. The crypto itself is in a backend: libsodium and
 * OpenSSL through CSignShim, or swift-crypto.
 */
#ifndef CSIGNBYTES_H
#define CSIGNBYTES_H

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

/* ---- The signing input after its key's prefix (SPEC §4.2) ------------------------------ */

/* Everything of a signing input after the part fixed per key (prefix, algorithm, key id), as
   values: written by `sc_signing_input_rest_write`, or by the shim straight into the block an
   HMAC hashes. Digests and the nonce are bytes in memory order; created and lifetime are
   written big-endian. */
typedef struct {
    uint64_t target[4];
    uint64_t whash[4];
    int64_t created;            /* 0...99999999999 */
    int64_t lifetime;           /* 1...86400 */
    uint64_t nonce[2];
    const void *account;        /* UTF-8, at most 256 bytes; may be NULL when empty */
    size_t account_length;
    int32_t headers_count;      /* covered header fields, 0-16 */
    uint64_t headers_digest[4]; /* written only when headers_count > 0 */
} sc_signing_input_rest;

enum { SC_SIGNING_INPUT_REST_MAX = 32 + 32 + 8 + 4 + 16 + 2 + 256 + 1 + 32 };

static inline size_t sc_signing_input_rest_length(const sc_signing_input_rest *rest) {
    return 95 + rest->account_length + (rest->headers_count > 0 ? 32 : 0);
}

/* target || whash || created (u64 BE) || lifetime (u32 BE) || nonce || u16 BE len(account) ||
   account || u8 headers_count || headers digest (when headers_count > 0). Writes
   `sc_signing_input_rest_length` bytes and returns that count. */
static inline size_t sc_signing_input_rest_write(const sc_signing_input_rest *rest, void *output) {
    uint8_t *out = output;
    uint64_t created = (uint64_t)rest->created;
    uint32_t lifetime = (uint32_t)rest->lifetime;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    created = __builtin_bswap64(created);
    lifetime = __builtin_bswap32(lifetime);
#endif
    __builtin_memcpy(out, rest->target, 32);
    __builtin_memcpy(out + 32, rest->whash, 32);
    __builtin_memcpy(out + 64, &created, 8);
    __builtin_memcpy(out + 72, &lifetime, 4);
    __builtin_memcpy(out + 76, rest->nonce, 16);
    out[92] = (uint8_t)(rest->account_length >> 8);
    out[93] = (uint8_t)rest->account_length;
    if (rest->account_length > 0) __builtin_memcpy(out + 94, rest->account, rest->account_length);
    size_t at = 94 + rest->account_length;
    out[at++] = (uint8_t)rest->headers_count;
    if (rest->headers_count > 0) {
        __builtin_memcpy(out + at, rest->headers_digest, 32);
        at += 32;
    }
    return at;
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

/* ---- decimals --------------------------------------------------------------------------- */

/* The number of decimal digits of v (1-20) without a loop: log10 from the bit length
   (1233 / 4096 is just above log10 2), corrected by one comparison with a power of ten. */
static inline int sc_decimal_digits(uint64_t v) {
    static const uint64_t powers[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
        10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
        1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
        10000000000000000000ULL,
    };
    v |= 1; /* 0 has one digit; no power of ten from 10 on is odd, so nothing else changes */
    int approximate = ((64 - __builtin_clzll(v)) * 1233) >> 12;
    return approximate + (v >= powers[approximate]);
}

/* ---- base64url (public header fields) ------------------------------------------------- */

/* The value of a base64url character, 255 for any other byte: one table load, no branch to
   mispredict on random token text. Only for public bytes (the table index is the byte); key
   material is decoded with SignCore's constant-time arithmetic instead. */
static inline uint8_t sc_base64url_value(uint8_t c) {
    static const uint8_t values[256] = {
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,  62, 255, 255,
         52,  53,  54,  55,  56,  57,  58,  59,  60,  61, 255, 255, 255, 255, 255, 255,
        255,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,  14,
         15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25, 255, 255, 255, 255,  63,
        255,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,
         41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    };
    return values[c];
}

/* Decodes base64url without padding (RFC 4648 §5) of public text: a token's account (its
   fixed-length fields and the whash have decoders of their own: sc_token_parse,
   sc_base64url_decode_digest). SSSE3 does 16 characters / 12 bytes at a time where the CPU has
   it (the last 2-15 as one more block, padded), the rest byte by byte. Strict: only alphabet
   characters, no padding, a length that is not 1 mod 4, unused trailing bits zero; returns the
   byte count, or -1 for any other text. `output` needs room for n * 3 / 4 bytes. Key material is decoded in
   constant time by SignCore instead. */
ptrdiff_t sc_base64url_decode(const void *text, size_t n, void *output);

/* A 32-byte digest from exactly 43 characters of canonical base64url (a whash header): 1 with
   the digest in out32, 0 for any other text. */
int sc_base64url_decode_digest(const void *text, size_t n, void *out32) SC_MUST_CHECK;

/* 1 when `text` is exactly the 43 characters of canonical base64url of the 32 bytes at
   digest32, else 0; compared in constant time (the verifier's whash check: encoding the digest
   costs less than decoding the text, and only the canonical spelling decodes, so the answer is
   that of sc_base64url_decode_digest and a comparison of the digests). */
int sc_base64url_is_digest(const void *text, size_t n, const void *digest32) SC_MUST_CHECK;

/* Encodes base64url without padding (RFC 4648 §5) of public bytes: 12 bytes to 16 characters
   at a time with SSSE3 where the CPU has it (the last bytes as one more block), else two
   characters per table load (a 12-bit pair table; the table index is the data, so never for
   key material, which SignCore encodes in constant time). Writes exactly (n * 4 + 2) / 3
   characters and returns that count. */
size_t sc_base64url_encode(const void *data, size_t n, void *output);

/* ---- Token fields ------------------------------------------------------------------------ */

/* The fields of a wtoken (SPEC §4.1) in one pass: the dots found with SSE2, eight digits of a
   decimal checked and combined at once, the base64url fields decoded where they lie. Returns
   the first failing check in this order, or SC_TOKEN_OK: the first field is not "v3"; not 9 fields; the key id is not 1-max_key_id
   alphabet characters; created or lifetime not a canonical decimal in range (lifetime >= 1);
   the nonce not 22 characters of 16 bytes; the target not 8 of 6; the signature not 43 or 86
   characters of 32 or 64 bytes. (The account and headers fields, between target and
   signature, are checked by SignCore, which therefore reports a bad signature field after
   them.) `starts[k]` is where field k starts and `starts[k + 1] - 1` where it ends, for the
   first min(fields, 9) fields (starts[10] is scratch). The caller bounds n (SignCore: 1024
   bytes). With check_key_id_alphabet 0 the key id's length is checked but not its characters:
   a verifier that finds the id among its keys knows them valid, and checks them otherwise. */
typedef struct {
    int32_t fields;
    int32_t starts[11];
    int64_t created, lifetime;
    uint64_t nonce[2];
    uint64_t target;
    uint64_t signature[8];
    int32_t signature_length;
} sc_token_fields;

enum {
    SC_TOKEN_OK = 0, SC_TOKEN_VERSION, SC_TOKEN_FIELD_COUNT, SC_TOKEN_KEY_ID, SC_TOKEN_CREATED,
    SC_TOKEN_LIFETIME, SC_TOKEN_NONCE, SC_TOKEN_TARGET, SC_TOKEN_SIGNATURE
};

int sc_token_parse(const void *text, size_t n, int64_t max_created, int64_t max_lifetime, int32_t max_key_id,
                   int check_key_id_alphabet, sc_token_fields *out);

/* The parts of a wtoken (SPEC §4.1) and its encoding in one pass, the signer's path:
   "v3." kid "." created "." lifetime "." b64(nonce, 16) "." b64(target) "." b64(account) "."
   headers "." b64(signature). The caller checks every field against its limits and sizes
   `output` (SignCore: WToken.encodedLength). Returns the bytes written. */
typedef struct {
    const void *key_id;
    size_t key_id_length;
    int64_t created, lifetime;
    const void *nonce; /* 16 bytes */
    const void *target;
    size_t target_length; /* 6 in a signer's token */
    const void *account;
    size_t account_length;
    const void *headers;
    size_t headers_length;
    const void *signature;
    size_t signature_length;
} sc_token_parts;

size_t sc_token_encode(const sc_token_parts *parts, void *output);

/* sc_token_encode, and beside it the 43 characters of base64url of the whash at whash32,
   written to a buffer of 48 bytes (three 16-byte stores with SSSE3; bytes 43-47 are left
   undefined): the two header values of the one-pass HS256 sign, behind one CPU check. */
size_t sc_whash_and_token_encode(const sc_token_parts *parts, const void *whash32, void *whash48, void *token);

/* ---- URLs (the one-pass canonicalisation of common URLs) ------------------------------- */

/* The canonical URL (SPEC §2) of a common request URL, written to `output` (room for 3 * n + 24
   bytes: the longest canonical form and 16 bytes more, for whole 16-byte blocks read and written
   back past its end); `spare` (as much room) holds the query while its pairs are sorted. Returns the length,
   or -1 when the URL is not of the common kind, which SignCore's general path then handles (a
   differential test and fuzzer check that both agree on every input).

   Common: "https://" or "http://" in lower case; a host of 1-255 unreserved bytes (upper case is
   folded) and no port or userinfo; a path and a query of unreserved bytes, escapes of reserved
   bytes (their hex digits put in upper case) and at most SC_URL_COMMON_MAX_PLUSES '+' (spelled
   "%2B" in the path, "%20" in the query: each moves the rest of the output, so more would make a
   long URL of '+' quadratic); no dot segment; at most SC_URL_COMMON_MAX_PAIRS query pairs, each
   with exactly one '=' and none empty; no fragment, no byte outside ASCII. The pairs are put in
   key order. */
#define SC_URL_COMMON_MAX_PAIRS 16
#define SC_URL_COMMON_MAX_PLUSES 16
ptrdiff_t sc_url_common(const void *input, size_t n, void *output, void *spare);

#endif
