/*
 * CSignShim implementation. SHA-256 uses OpenSSL's low-level SHA256_CTX on purpose: it is a
 * fixed-size plain struct, so states live on the caller's stack, can be copied (HMAC key
 * schedule prepared once, then copied per message, safe to share between threads) and cost no
 * allocation or provider fetch per call, while running the same SHA-NI code as EVP.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CSignShim.h"

#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <sodium.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <pthread.h>
#include <stdatomic.h>
#include <openssl/ecdsa.h>
#include <openssl/obj_mac.h>
#include <openssl/crypto.h>

_Static_assert(sizeof(SHA256_CTX) <= sizeof(sc_sha256_state), "sc_sha256_state too small");

static void sc_random_after_fork(void);
static pthread_once_t sc_init_once = PTHREAD_ONCE_INIT;
static int sc_init_result = -1;

static void sc_sha256_choose_path(void);

static void sc_init_run(void) {
    if (sodium_init() < 0) return;
    sc_sha256_choose_path();
    if (pthread_atfork(NULL, NULL, sc_random_after_fork) != 0) return;
    sc_init_result = 0;
}

int sc_init(void) {
    pthread_once(&sc_init_once, sc_init_run);
    return sc_init_result;
}

/* ---- SHA-256 ---------------------------------------------------------------------------- */

void sc_sha256_init(sc_sha256_state *state) { SHA256_Init((SHA256_CTX *)state->opaque); }

void sc_sha256_update(sc_sha256_state *state, const void *data, size_t length) {
    if (length > 0) SHA256_Update((SHA256_CTX *)state->opaque, data, length);
}

void sc_sha256_final(sc_sha256_state *state, void *out32) { SHA256_Final(out32, (SHA256_CTX *)state->opaque); }

void sc_sha256(const void *data, size_t length, void *out32) {
    sc_sha256_state state;
    sc_sha256_init(&state);
    sc_sha256_update(&state, data, length);
    sc_sha256_final(&state, out32);
}

/* Short messages can skip SHA256_Update/SHA256_Final: the bytes still to hash are gathered with
   their padding in one stack buffer and fed to OpenSSL's block function (SHA256_Transform, the
   same SHA-NI code), so a digest costs its compressions and little else. Whether that is faster
   than the library's own padding depends on the CPU (it was on an Intel Xeon and AMD Zen 5, it
   was not on AMD Zen 3 with byte-wise length stores), so sc_init measures both and picks one;
   SIGNCORE_SHA256=short|library overrides the choice, and tests run both. */
#define SC_SHORT_BYTES 512

static atomic_int sc_short_path = 1;

int sc_sha256_short_path(void) { return atomic_load_explicit(&sc_short_path, memory_order_relaxed); }
void sc_sha256_set_short_path(int enabled) { atomic_store_explicit(&sc_short_path, enabled != 0, memory_order_relaxed); }

/* Zeroes `length` bytes (a multiple of 64) in fixed 64-byte steps, which the compiler writes as
   vector stores instead of a call; the barrier keeps a wipe of a secret from being removed. */
static inline void zero_blocks(unsigned char *p, size_t length) {
    for (size_t offset = 0; offset < length; offset += 64) {
        memset(p + offset, 0, 64);
        __asm__("" : "+r"(offset)); /* else the compiler merges the steps into one memset call */
    }
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

/* Zeroes block[from..<to] in 16-byte stores, the last of which may write up to 15 bytes past
   `to`: only where the caller's buffer has that room. For padding of a few dozen bytes this is a
   few stores, not a call. */
static inline void zero_with_overrun(unsigned char *block, size_t from, size_t to) {
    for (size_t at = from; at < to; at += 16) {
        memset(block + at, 0, 16);
        __asm__("" : "+r"(at)); /* else the compiler turns the loop back into a memset call */
    }
}

/* The short path in two steps around the caller's copy of the new bytes into one stack buffer:
   `short_padding_zeroed` zeroes whole the blocks that will take the padding (before the bytes are
   written, so the padding is then two stores and no call), `short_compress` pads and compresses
   block[0..<total] (`from`'s absorbed bytes not yet compressed, then `new_bytes` bytes) from
   `from`'s chaining state. `wipe` clears the copy of a secret (HMAC) state afterwards. */
static inline size_t short_padded_length(size_t total) { return (total + 1 + 8 + 63) & ~(size_t)63; }

static inline void short_padding_zeroed(unsigned char *block, size_t total) {
    size_t last = total & ~(size_t)63;
    zero_blocks(block + last, short_padded_length(total) - last);
}

static void short_compress(const SHA256_CTX *from, unsigned char *block, size_t total, size_t new_bytes,
                           unsigned char out[32], int wipe) {
    size_t padded = short_padded_length(total);
    SHA256_CTX ctx;
    uint64_t bits = ((((uint64_t)from->Nh) << 32) | from->Nl) + ((uint64_t)new_bytes << 3);
    block[total] = 0x80;
    bits = __builtin_bswap64(bits); /* one store: byte stores then a wide load stall some CPUs */
    memcpy(block + padded - 8, &bits, 8);
    memcpy(ctx.h, from->h, sizeof ctx.h);
    for (size_t offset = 0; offset < padded; offset += 64) SHA256_Transform(&ctx, block + offset);
    for (int i = 0; i < 8; i += 2) { /* two big-endian words per byte swap (SSE2 has no byte shuffle) */
        uint64_t pair;
        memcpy(&pair, &ctx.h[i], 8);
        pair = __builtin_bswap64(pair);
        pair = pair >> 32 | pair << 32;
        memcpy(out + 4 * i, &pair, 8);
    }
    if (wipe) {
        memset(ctx.h, 0, sizeof ctx.h); /* the only part of ctx written */
        __asm__ __volatile__("" : : "r"(ctx.h) : "memory");
    }
}

/* SHA-256 of (what `from` absorbed) || a || b, for at most SC_SHORT_BYTES new bytes; `from` is
   only read. With `wipe` the buffer is cleared too (an HMAC's outer hash holds the inner digest). */
static void sha256_finish_short(const SHA256_CTX *from, const void *a, size_t a_length,
                                const void *b, size_t b_length, unsigned char out[32], int wipe) {
    _Alignas(64) unsigned char block[64 + SC_SHORT_BYTES + 72];
    size_t n = from->num;
    size_t total = n + a_length + b_length;
    short_padding_zeroed(block, total);
    memcpy(block, from->data, n); /* absorbed bytes not yet compressed */
    if (a_length > 0) memcpy(block + n, a, a_length);
    if (b_length > 0) memcpy(block + n + a_length, b, b_length);
    short_compress(from, block, total, a_length + b_length, out, wipe);
    if (wipe) zero_blocks(block, short_padded_length(total));
}

static void sha256_finish_library(const SHA256_CTX *from, const void *a, size_t a_length,
                                  const void *b, size_t b_length, unsigned char out[32], int wipe) {
    SHA256_CTX ctx = *from;
    if (a_length > 0) SHA256_Update(&ctx, a, a_length);
    if (b_length > 0) SHA256_Update(&ctx, b, b_length);
    SHA256_Final(out, &ctx);
    if (wipe) sodium_memzero(&ctx, sizeof ctx);
}

/* SHA-256 of (what `from` absorbed) || a || b; `from` is only read. */
static void sha256_finish(const SHA256_CTX *from, const void *a, size_t a_length,
                          const void *b, size_t b_length, unsigned char out[32], int wipe) {
    if (a_length + b_length <= SC_SHORT_BYTES && sc_sha256_short_path()) {
        sha256_finish_short(from, a, a_length, b, b_length, out, wipe);
    } else {
        sha256_finish_library(from, a, a_length, b, b_length, out, wipe);
    }
}

static double sc_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Times both ways on what a signing input looks like (a 68-byte prefix absorbed, then 100
   bytes), alternating, the best of 7 rounds of 200 digests each (about 0.3 ms in all), and keeps
   the short path only when it is faster. */
static void sc_sha256_choose_path(void) {
    const char *forced = getenv("SIGNCORE_SHA256");
    if (forced != NULL && strcmp(forced, "short") == 0) { sc_sha256_set_short_path(1); return; }
    if (forced != NULL && strcmp(forced, "library") == 0) { sc_sha256_set_short_path(0); return; }
    unsigned char message[168], out[32];
    for (size_t i = 0; i < sizeof message; i++) message[i] = (unsigned char)i;
    SHA256_CTX prefixed;
    SHA256_Init(&prefixed);
    SHA256_Update(&prefixed, message, 68);
    double best[2] = {1e9, 1e9};
    for (int round = 0; round < 14; round++) {
        int way = (round & 1) ^ ((round >> 1) & 1); /* order flipped every other pair */
        double start = sc_seconds();
        for (int i = 0; i < 200; i++) {
            if (way) sha256_finish_short(&prefixed, message + 68, 100, NULL, 0, out, 0);
            else sha256_finish_library(&prefixed, message + 68, 100, NULL, 0, out, 0);
            __asm__ volatile("" : : "r"(out) : "memory");
        }
        double elapsed = sc_seconds() - start;
        if (elapsed < best[way]) best[way] = elapsed;
    }
    sc_sha256_set_short_path(best[1] < best[0]);
}

/* SHA-256's initial state (FIPS 180-4 §5.3.3) as SHA256_Init leaves it, so a digest from the
   start needs no call to set it up. */
static const SHA256_CTX sha256_initial = {
    .h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
    .md_len = SHA256_DIGEST_LENGTH,
};

void sc_sha256_prefixed(const void *prefix, size_t prefix_length, const void *data, size_t length, void *out32) {
    sha256_finish(&sha256_initial, prefix, prefix_length, data, length, out32, 0);
}

int sc_sha256_common_url(const void *prefix, size_t prefix_length, const void *url, size_t n, void *scratch, void *out32) {
    if (prefix_length > SC_COMMON_URL_PREFIX_MAX || n > 8192) return -1;
    unsigned char *block = scratch;
    size_t capacity = 3 * n + 24;
    if (prefix_length >= 16) { /* a method's prefix: two overlapping 16-byte copies, no call */
        memcpy(block, prefix, 16);
        memcpy(block + prefix_length - 16, (const unsigned char *)prefix + prefix_length - 16, 16);
    } else {
        memcpy(block, prefix, prefix_length);
    }
    ptrdiff_t length = sc_url_common(url, n, block + prefix_length, block + prefix_length + capacity + 72);
    if (length < 0) return -1;
    size_t total = prefix_length + (size_t)length;
    if (total <= SC_SHORT_BYTES && sc_sha256_short_path()) {
        /* padded + 15 is within the scratch: total <= prefix + 3n + 1, padded <= total + 72,
           and the spare area (capacity, from prefix + capacity + 72 on) is done with */
        size_t padded = short_padded_length(total);
        zero_with_overrun(block, total, padded);
        short_compress(&sha256_initial, block, total, total, out32, 0);
    } else {
        sha256_finish_library(&sha256_initial, block, total, NULL, 0, out32, 0);
    }
    return 0;
}

/* ---- HMAC-SHA256 (RFC 2104) ------------------------------------------------------------- */

void sc_hmac_key_init(sc_hmac_key *key, const void *secret, size_t secret_length) {
    unsigned char block[64], pad[64];
    memset(block, 0, sizeof block);
    if (secret_length > sizeof block) {
        sc_sha256(secret, secret_length, block);
    } else if (secret_length > 0) {
        memcpy(block, secret, secret_length);
    }
    for (size_t i = 0; i < 64; i++) pad[i] = block[i] ^ 0x36;
    sc_sha256_init(&key->inner);
    sc_sha256_update(&key->inner, pad, 64);
    for (size_t i = 0; i < 64; i++) pad[i] = block[i] ^ 0x5c;
    sc_sha256_init(&key->outer);
    sc_sha256_update(&key->outer, pad, 64);
    sodium_memzero(block, sizeof block);
    sodium_memzero(pad, sizeof pad);
}

void sc_hmac_sha256_continue(const sc_hmac_key *key, const sc_sha256_state *inner, const void *message, size_t length,
                             void *out32) {
    unsigned char digest[32];
    sha256_finish((const SHA256_CTX *)inner->opaque, message, length, NULL, 0, digest, 1);
    sha256_finish((const SHA256_CTX *)key->outer.opaque, digest, sizeof digest, NULL, 0, out32, 1);
    memset(digest, 0, sizeof digest);
    __asm__ __volatile__("" : : "r"(digest) : "memory");
}

void sc_hmac_sha256_signing_input(const sc_hmac_key *key, const sc_sha256_state *inner, const sc_signing_input_rest *rest,
                                  void *out32) {
    const SHA256_CTX *from = (const SHA256_CTX *)inner->opaque, *outer = (const SHA256_CTX *)key->outer.opaque;
    size_t n = from->num, length = sc_signing_input_rest_length(rest);
    _Alignas(64) unsigned char block[64 + SC_SIGNING_INPUT_REST_MAX + 72];
    if (!sc_sha256_short_path()) {
        unsigned char digest[32];
        sc_signing_input_rest_write(rest, block);
        sha256_finish_library(from, block, length, NULL, 0, digest, 1);
        sha256_finish_library(outer, digest, sizeof digest, NULL, 0, out32, 1);
        sc_memzero(digest, sizeof digest);
        return;
    }
    /* The inner block holds the prefix's last bytes and the rest, public, so it is not wiped; its
       digest goes straight into the outer block (the outer key block is absorbed whole: num 0). */
    _Alignas(64) unsigned char outer_block[64];
    short_padding_zeroed(block, n + length);
    short_padding_zeroed(outer_block, 32);
    memcpy(block, from->data, 64); /* n bytes wanted; the rest (95 bytes or more) overwrites the others */
    sc_signing_input_rest_write(rest, block + n);
    short_compress(from, block, n + length, length, outer_block, 1);
    short_compress(outer, outer_block, 32, 32, out32, 1);
    zero_blocks(outer_block, sizeof outer_block);
}

int sc_hmac_sha256_signing_input_matches(const sc_hmac_key *key, const sc_sha256_state *inner, const sc_signing_input_rest *rest,
                                         const void *tag32) {
    uint64_t expected[4], given[4];
    sc_hmac_sha256_signing_input(key, inner, rest, expected);
    memcpy(given, tag32, sizeof given);
    uint64_t difference = (expected[0] ^ given[0]) | (expected[1] ^ given[1]) | (expected[2] ^ given[2]) | (expected[3] ^ given[3]);
    __asm__("" : "+r"(difference)); /* no early exit can be derived from the words */
    memset(expected, 0, sizeof expected);
    __asm__ __volatile__("" : : "r"(expected) : "memory");
    return difference == 0;
}

void sc_hmac_sha256(const sc_hmac_key *key, const void *message, size_t length, void *out32) {
    sc_hmac_sha256_continue(key, &key->inner, message, length, out32);
}

/* ---- An HS256 request signed in one pass (SPEC §4) ------------------------------------------ */

ptrdiff_t sc_hs256_sign_common(const sc_hmac_key *key, const sc_sha256_state *inner, const void *prefix, size_t prefix_length,
                               int url_class, const void *url, size_t n, void *scratch, sc_signing_input_rest *rest,
                               sc_token_parts *parts, void *whash48, void *token) {
    if (sc_sha256_common_url(prefix, prefix_length, url, n, scratch, rest->target) != 0) return -1;
    if (url_class) memcpy(rest->whash, rest->target, 32);
    uint64_t signature[4];
    sc_hmac_sha256_signing_input(key, inner, rest, signature);
    parts->nonce = rest->nonce;
    parts->target = rest->target;
    parts->target_length = 6;
    parts->signature = signature;
    parts->signature_length = 32;
    return (ptrdiff_t)sc_whash_and_token_encode(parts, rest->whash, whash48, token);
}

/* ---- Ed25519 ---------------------------------------------------------------------------- */

int sc_ed25519_keypair_from_seed(const void *seed32, void *public32, void *secret64) {
    return crypto_sign_seed_keypair(public32, secret64, seed32) == 0 ? 0 : -1;
}

int sc_ed25519_sign(const void *secret64, const void *message, size_t length, void *signature64) {
    return crypto_sign_detached(signature64, NULL, message, length, secret64) == 0 ? 0 : -1;
}

int sc_ed25519_verify(const void *public32, const void *message, size_t length, const void *signature64) {
    return crypto_sign_verify_detached(signature64, message, length, public32) == 0 ? 0 : -1;
}

int sc_ed25519_is_valid_point(const void *public32) {
    return crypto_core_ed25519_is_valid_point(public32);
}

/* ---- ECDSA P-256 ------------------------------------------------------------------------ */

/* Low-level EC_KEY (deprecated in OpenSSL 3, like SHA256_CTX): ECDSA_do_sign/do_verify run the
 * same P-256 code as EVP_PKEY_sign but need no per-call EVP_PKEY_CTX, whose creation costs about
 * 2 µs of provider look-ups; an EC_KEY is only read while signing, so threads share it. */
struct sc_p256_key {
    EC_KEY *ec;
};

int sc_p256_generate(void *private32) {
    EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    BIGNUM *d = NULL;
    int rc = -1;
    if (pkey != NULL && EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d) == 1 &&
        BN_bn2binpad(d, private32, SC_P256_PRIVATE_BYTES) == SC_P256_PRIVATE_BYTES) {
        rc = 0;
    }
    BN_clear_free(d);
    EVP_PKEY_free(pkey);
    if (rc != 0) ERR_clear_error();
    return rc;
}

int sc_p256_public_from_private(const void *private32, void *public65) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    BIGNUM *d = BN_secure_new();
    EC_POINT *point = NULL;
    int rc = -1;
    if (group == NULL || d == NULL || BN_bin2bn(private32, SC_P256_PRIVATE_BYTES, d) == NULL) goto done;
    if (BN_is_zero(d) || BN_cmp(d, EC_GROUP_get0_order(group)) >= 0) goto done;
    point = EC_POINT_new(group);
    if (point == NULL || EC_POINT_mul(group, point, d, NULL, NULL, NULL) != 1) goto done;
    if (EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, public65, SC_P256_PUBLIC_BYTES, NULL)
        != SC_P256_PUBLIC_BYTES) goto done;
    rc = 0;
done:
    EC_POINT_free(point);
    BN_clear_free(d);
    EC_GROUP_free(group);
    if (rc != 0) ERR_clear_error();
    return rc;
}

sc_p256_key *sc_p256_key_new(const void *public65, const void *private32) {
    EC_KEY *ec = NULL;
    BIGNUM *d = NULL;
    sc_p256_key *key = NULL;

    if (((const unsigned char *)public65)[0] != 0x04) return NULL;
    ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    if (ec == NULL || EC_KEY_oct2key(ec, public65, SC_P256_PUBLIC_BYTES, NULL) != 1) goto done;
    if (private32 != NULL) {
        d = BN_secure_new();
        if (d == NULL || BN_bin2bn(private32, SC_P256_PRIVATE_BYTES, d) == NULL) goto done;
        if (EC_KEY_set_private_key(ec, d) != 1) goto done;
    }
    /* The point is on the curve and not infinity; with a scalar, the point is its public key. */
    if (EC_KEY_check_key(ec) != 1) goto done;
    key = OPENSSL_malloc(sizeof *key);
    if (key == NULL) goto done;
    key->ec = ec;
    ec = NULL;
done:
    EC_KEY_free(ec);
    BN_clear_free(d);
    if (key == NULL) ERR_clear_error();
    return key;
}

void sc_p256_key_free(sc_p256_key *key) {
    if (key == NULL) return;
    EC_KEY_free(key->ec); /* clears the private scalar */
    OPENSSL_free(key);
}

int sc_p256_sign(sc_p256_key *key, const void *message, size_t length, void *signature64) {
    unsigned char digest[32];
    const BIGNUM *r = NULL, *s = NULL;
    unsigned char *out = signature64;
    int rc = -1;
    sc_sha256(message, length, digest);
    ECDSA_SIG *sig = ECDSA_do_sign(digest, sizeof digest, key->ec);
    if (sig == NULL) {
        ERR_clear_error();
        return -1;
    }
    ECDSA_SIG_get0(sig, &r, &s);
    if (BN_bn2binpad(r, out, 32) == 32 && BN_bn2binpad(s, out + 32, 32) == 32) rc = 0;
    ECDSA_SIG_free(sig);
    if (rc != 0) ERR_clear_error();
    return rc;
}

int sc_p256_verify(sc_p256_key *key, const void *message, size_t length, const void *signature64) {
    unsigned char digest[32];
    const unsigned char *raw = signature64;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    int rc = -1;
    if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        ERR_clear_error();
        return -1;
    }
    sc_sha256(message, length, digest);
    rc = ECDSA_do_verify(digest, sizeof digest, sig, key->ec) == 1 ? 0 : -1;
    ECDSA_SIG_free(sig);
    /* A failed verify (r or s out of range, say) leaves errors on this thread's queue; a TLS
       library on the same thread would read them as its own. */
    if (rc != 0) ERR_clear_error();
    return rc;
}

int sc_openssl_error_pending(void) {
    return ERR_peek_error() != 0;
}

/* ---- Randomness, comparison, wiping ----------------------------------------------------- */

void sc_random_bytes(void *out, size_t length) { randombytes_buf(out, length); }

/*
 * Per-thread nonce generator: ChaCha20 (libsodium) with fast key erasure. Each refill produces
 * 32 bytes that replace the key and SC_RNG_BUFFER bytes of output, so a state captured later
 * cannot reproduce earlier output; each output byte is wiped once handed out. A thread seeds from
 * the system CSPRNG (getrandom) on first use and again in a child after fork(), so parent and
 * child never share a stream. One getrandom per thread instead of one per nonce, no lock.
 */
#define SC_RNG_BUFFER 1024
typedef struct {
    uint64_t generation; /* fork generation the key was seeded in; 0 = never seeded */
    size_t next;         /* first unused byte of buffer */
    unsigned char key[crypto_stream_chacha20_ietf_KEYBYTES];
    unsigned char buffer[SC_RNG_BUFFER];
} sc_rng_state;

static _Thread_local sc_rng_state sc_rng;
static atomic_uint_fast64_t sc_fork_generation = 1;

static void sc_random_after_fork(void) { atomic_fetch_add_explicit(&sc_fork_generation, 1, memory_order_relaxed); }

static void sc_rng_refill(sc_rng_state *rng) {
    static const unsigned char zero_nonce[crypto_stream_chacha20_ietf_NONCEBYTES];
    unsigned char block[crypto_stream_chacha20_ietf_KEYBYTES + SC_RNG_BUFFER];
    crypto_stream_chacha20_ietf(block, sizeof block, zero_nonce, rng->key); /* each key is used once */
    memcpy(rng->key, block, sizeof rng->key);
    memcpy(rng->buffer, block + sizeof rng->key, SC_RNG_BUFFER);
    sodium_memzero(block, sizeof block);
    rng->next = 0;
}

void sc_nonce_bytes(void *out16) {
    sc_rng_state *rng = &sc_rng;
    uint64_t generation = atomic_load_explicit(&sc_fork_generation, memory_order_relaxed);
    if (rng->generation != generation) {
        randombytes_buf(rng->key, sizeof rng->key);
        rng->generation = generation;
        sc_rng_refill(rng);
    } else if (rng->next + 16 > SC_RNG_BUFFER) {
        sc_rng_refill(rng);
    }
    memcpy(out16, rng->buffer + rng->next, 16);
    sodium_memzero(rng->buffer + rng->next, 16);
    rng->next += 16;
}
