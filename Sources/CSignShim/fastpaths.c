/*
 * CSignShim, the fused fast paths: SHA-256 of short messages padded in place and fed to OpenSSL's
 * block function, the HMAC of a signing input from prepared states, the one-pass digest of a
 * common URL and the one-pass HS256 sign (SPEC §2-§4). Each gives the same bytes as the plain
 * path it replaces; the Swift side adopts them as `FusedFastPaths` (CryptoBackend.swift).
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CSignShim.h"

#include <string.h>
#include <time.h>
#include <stdatomic.h>
#include <openssl/sha.h>

/* Short messages can skip SHA256_Update/SHA256_Final: the bytes still to hash are gathered with
   their padding in one stack buffer and fed to OpenSSL's block function (SHA256_Transform, the
   same SHA-NI code), so a digest costs its compressions and little else. It is the default: it
   was faster on Intel Xeon and AMD Zen 4 and Zen 5, slower only on AMD Zen 3 (byte-wise length
   stores). The library's own padding is one explicit call away (sc_sha256_set_short_path(0)),
   and sc_sha256_short_path_measured_faster says which is faster on this CPU; nothing is chosen
   by timing or by the environment at start-up, so every process runs the same code. */
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
    if (wipe) sc_memzero(&ctx, sizeof ctx);
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
   bytes), alternating, the best of 7 rounds of 200 digests each (about 0.3 ms in all). Changes
   nothing: the caller decides (the benchmark reports it). */
int sc_sha256_short_path_measured_faster(void) {
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
    return best[1] < best[0];
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

/* ---- A counter search for proof of work (ATTEST.md §3.2) ----------------------------------- */

int sc_sha256_counter_search(const void *head, size_t head_length, uint64_t start, uint64_t count, unsigned bits,
                             uint64_t *found) {
    if (head_length > 47 || bits < 1 || bits > 32) return 0;
    unsigned char block[64];
    memset(block, 0, sizeof block);
    memcpy(block, head, head_length);
    block[head_length + 8] = 0x80;
    uint64_t length_bits = __builtin_bswap64((uint64_t)(head_length + 8) * 8);
    memcpy(block + 56, &length_bits, 8);
    SHA256_CTX initial;
    SHA256_Init(&initial);
    /* The digest's first four bytes are h[0], big-endian: its top `bits` bits must be zero. */
    uint32_t mask = bits == 32 ? 0xFFFFFFFFu : ~(0xFFFFFFFFu >> bits);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t counter = start + i, big = __builtin_bswap64(counter);
        memcpy(block + head_length, &big, 8);
        SHA256_CTX ctx;
        memcpy(ctx.h, initial.h, sizeof ctx.h);
        SHA256_Transform(&ctx, block);
        if ((ctx.h[0] & mask) == 0) {
            *found = counter;
            return 1;
        }
    }
    return 0;
}
