/*
 * CSignShim: the only place SignCore touches libsodium and OpenSSL libcrypto.
 *
 * Conventions (after libsodium): callers allocate every output with the fixed sizes below,
 * functions return 0 on success and -1 on failure, every verify and compare is
 * warn_unused_result. Buffers are `void *` plus a length so Swift passes them without rebinding.
 * This header includes no third-party header; the state structs are opaque, fixed-size and
 * copyable (a copied SHA-256 state continues from where the original was).
 */
#ifndef CSIGNSHIM_H
#define CSIGNSHIM_H

#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define SC_MUST_CHECK __attribute__((warn_unused_result))

#define SC_SHA256_BYTES 32
#define SC_HMAC_SHA256_BYTES 32
#define SC_ED25519_SEED_BYTES 32
#define SC_ED25519_PUBLIC_BYTES 32
#define SC_ED25519_SECRET_BYTES 64
#define SC_ED25519_SIGNATURE_BYTES 64
#define SC_P256_PRIVATE_BYTES 32
#define SC_P256_PUBLIC_BYTES 65 /* uncompressed point 0x04 || x || y */
#define SC_P256_SIGNATURE_BYTES 64 /* r || s, big-endian, 32 bytes each */

/* Library set-up (libsodium, the fork handler of the nonce generator); idempotent and
   thread-safe. Returns -1 when it cannot start. */
int sc_init(void) SC_MUST_CHECK;

/* ---- SHA-256 (OpenSSL, SHA-NI where the CPU has it) ---------------------------------- */

/* Opaque incremental SHA-256 state: a plain value, no heap. */
typedef struct {
    _Alignas(8) unsigned char opaque[128];
} sc_sha256_state;

void sc_sha256_init(sc_sha256_state *state);
void sc_sha256_update(sc_sha256_state *state, const void *data, size_t length);
/* Writes 32 bytes. The state is not wiped: it hashed public data (HMAC wipes its own). */
void sc_sha256_final(sc_sha256_state *state, void *out32);
void sc_sha256(const void *data, size_t length, void *out32);
/* Whether digests of up to 512 new bytes pad in the shim and call the block function (1) or go
   through SHA256_Update/SHA256_Final (0): chosen by sc_init from a measurement, or by the
   environment (SIGNCORE_SHA256=short|library); both give the same digests. */
int sc_sha256_short_path(void);
void sc_sha256_set_short_path(int enabled);
/* SHA-256(prefix || data) in one call: the digests of SPEC §3.2 and §4.2 over a canonical URL. */
void sc_sha256_prefixed(const void *prefix, size_t prefix_length, const void *data, size_t length, void *out32);

/* ---- HMAC-SHA256 with the key schedule prepared once --------------------------------- */

/* Inner and outer SHA-256 states after the padded key block; zero it with sc_memzero. */
typedef struct {
    sc_sha256_state inner;
    sc_sha256_state outer;
} sc_hmac_key;

void sc_hmac_key_init(sc_hmac_key *key, const void *secret, size_t secret_length);
/* HMAC of one message under a prepared key; the key is only read, so threads may share it. */
void sc_hmac_sha256(const sc_hmac_key *key, const void *message, size_t length, void *out32);
/* HMAC of (message prefix || message), where `inner` is a copy of key->inner that went on to
   absorb the prefix (sc_sha256_update): a prefix every message shares is hashed once per key.
   `inner` is only read. */
void sc_hmac_sha256_continue(const sc_hmac_key *key, const sc_sha256_state *inner, const void *message, size_t length,
                             void *out32);

/* ---- Ed25519 (libsodium, RFC 8032, deterministic) ------------------------------------- */

int sc_ed25519_keypair_from_seed(const void *seed32, void *public32, void *secret64) SC_MUST_CHECK;
int sc_ed25519_sign(const void *secret64, const void *message, size_t length, void *signature64) SC_MUST_CHECK;
int sc_ed25519_verify(const void *public32, const void *message, size_t length, const void *signature64) SC_MUST_CHECK;
/* 1 when public32 is the canonical encoding of a point of the prime-order subgroup, not of
   small order (crypto_core_ed25519_is_valid_point); 0 otherwise. */
int sc_ed25519_is_valid_point(const void *public32);

/* ---- ECDSA P-256 with SHA-256 (OpenSSL) ----------------------------------------------- */

/* An OpenSSL EC_KEY, made at key load and shared read-only by every thread. */
typedef struct sc_p256_key sc_p256_key;

/* Generates a private scalar (32 bytes, big-endian). */
int sc_p256_generate(void *private32) SC_MUST_CHECK;
/* Derives the uncompressed public point of a private scalar; fails for 0 or >= n. */
int sc_p256_public_from_private(const void *private32, void *public65) SC_MUST_CHECK;
/* Builds a key from an uncompressed public point (checked to lie on the curve) and an
   optional private scalar (NULL for a verify-only key). NULL on failure. */
sc_p256_key *sc_p256_key_new(const void *public65, const void *private32);
void sc_p256_key_free(sc_p256_key *key);
/* Signs SHA-256(message); signature is r || s. */
int sc_p256_sign(sc_p256_key *key, const void *message, size_t length, void *signature64) SC_MUST_CHECK;
int sc_p256_verify(sc_p256_key *key, const void *message, size_t length, const void *signature64) SC_MUST_CHECK;
/* 1 when OpenSSL's error queue of this thread holds an error (for tests: every call above
   clears what its failures leave). */
int sc_openssl_error_pending(void);

/* ---- Randomness, comparison, wiping (libsodium) --------------------------------------- */

/* Bytes from the system CSPRNG (getrandom). */
void sc_random_bytes(void *out, size_t length);
/* 16 bytes for a token nonce from this thread's ChaCha20 generator, seeded from the system
   CSPRNG on the thread's first call and again after fork(). Call sc_init first. */
void sc_nonce_bytes(void *out16);
/* Constant-time equality: 0 when equal, -1 otherwise. */
int sc_memcmp(const void *a, const void *b, size_t length) SC_MUST_CHECK;
void sc_memzero(void *p, size_t length);

/* ---- replay-guard tables ---------------------------------------------------------------- */

/* Zeroed memory straight from the kernel (mmap), asking for transparent huge pages: a large
   nonce table is probed at random, and 2 MiB pages make those probes miss the TLB far less.
   NULL when the kernel refuses. Release with sc_pages_free and the same length. */
void *sc_pages_zeroed(size_t length);
void sc_pages_free(void *pages, size_t length);

/* Starts loading the cache line at p for writing. Never faults, whatever p is: a hint only. */
static inline void sc_prefetch_for_write(const void *p) { __builtin_prefetch(p, 1, 3); }
static inline void sc_prefetch_for_read(const void *p) { __builtin_prefetch(p, 0, 3); }

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

/* Decodes base64url without padding (RFC 4648 §5) of public text: the token's fields and the
   whash. SSSE3 does 16 characters / 12 bytes at a time where the CPU has it (the last 2-15 as
   one more block, padded), the rest byte by byte. Strict: only alphabet characters, no
   padding, a length that is not 1 mod 4, unused trailing bits zero; returns the byte count, or
   -1 for any other text. `output` needs room for n * 3 / 4 bytes. Key material is decoded in
   constant time by SignCore instead. (Encoding stays in Swift: for the short fields of a token
   a 12-bit pair table measured faster than SSSE3 blocks on AMD Zen 5.) */
ptrdiff_t sc_base64url_decode(const void *text, size_t n, void *output);

/* ---- Token fields ------------------------------------------------------------------------ */

/* Where `byte` occurs in p[0..<n]: the first `max` positions go to `positions`, in order; the
   return value counts every occurrence. SSE2 compares 16 bytes at a time where it exists (every
   x86-64), so the eight fields of a wtoken are found in one pass instead of a call to memchr
   per field. */
static inline size_t sc_find_byte(const void *p, size_t n, uint8_t byte, ptrdiff_t *positions, size_t max) {
    const uint8_t *bytes = p;
    size_t found = 0, i = 0;
#if defined(__SSE2__)
    const __m128i wanted = _mm_set1_epi8((char)byte);
    for (; i + 16 <= n; i += 16) {
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(bytes + i)), wanted));
        for (; mask != 0; mask &= mask - 1) {
            if (found < max) positions[found] = (ptrdiff_t)(i + (size_t)__builtin_ctz(mask));
            found++;
        }
    }
#endif
    for (; i < n; i++) {
        if (bytes[i] != byte) continue;
        if (found < max) positions[found] = (ptrdiff_t)i;
        found++;
    }
    return found;
}

/* The fields of a wtoken (SPEC §4.1) in one pass: the dots found with SSE2, the decimals and
   the base64url fields decoded in place. Returns the first failing check in this order, or
   SC_TOKEN_OK: the first field is not "v3"; not 9 fields; the key id is not 1-max_key_id
   alphabet characters; created or lifetime not a canonical decimal in range (lifetime >= 1);
   the nonce not 22 characters of 16 bytes; the target not 8 of 6; the signature not 43 or 86
   characters of 32 or 64 bytes. (The account and headers fields, between target and
   signature, are checked by SignCore, which therefore reports a bad signature field after
   them.) `starts[k]` is where field k starts and `starts[k + 1] - 1` where it ends, for the
   first min(fields, 9) fields. The caller bounds n (SignCore: 1024 bytes). */
typedef struct {
    int32_t fields;
    int32_t starts[10];
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
                   sc_token_fields *out);

/* ---- URLs (the common-URL pass of canonicalisation) ------------------------------------ */

/* The class of a URL byte for SignCore's common-URL pass, one table load per byte:
   0 lower-case letter, digit, "-", ".", "_" or "~"; 1 upper-case letter (both unreserved,
   RFC 3986 section 2.3); 2 "/"; 3 "%"; 4 "?"; 5 "="; 6 "&"; 7 any other byte. */
static inline uint8_t sc_url_byte_class(uint8_t c) {
    static const uint8_t classes[256] = {
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 3, 6, 7, 7, 7, 7, 7, 7, 0, 0, 2,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 5, 7, 4,
        7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 7, 7, 7, 7, 0,
        7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 0, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    };
    return classes[c];
}

#endif
