/*
 * CSignShim: the only place SignCore touches libsodium and OpenSSL libcrypto: the C half of the
 * default crypto backend on Linux (Sources/SignCore/Crypto/Backends/LibsodiumOpenSSL.swift). Not built for
 * Apple platforms, where the swift-crypto backend runs; what is not crypto is in CSignBytes.
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
#include "CSignBytes.h"

#ifndef SC_MUST_CHECK
#define SC_MUST_CHECK __attribute__((warn_unused_result))
#endif

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
/* Whether digests of up to 512 new bytes pad in the shim and call the block function (1, the
   default) or go through SHA256_Update/SHA256_Final (0). Both give the same digests; which is
   faster depends on the CPU, and only an explicit call changes it (see fastpaths.c). */
int sc_sha256_short_path(void);
void sc_sha256_set_short_path(int enabled);
/* 1 when the short path measured faster than the library's padding on this CPU, just now. */
int sc_sha256_short_path_measured_faster(void);
/* SHA-256(prefix || data) in one call: the digests of SPEC §3.2 and §4.2 over a canonical URL. */
void sc_sha256_prefixed(const void *prefix, size_t prefix_length, const void *data, size_t length, void *out32);
/* Proof of work (ATTEST.md §3.2): the first counter c in [start, start + count) for which
   SHA-256(head || u64(c)) has at least `bits` (1-32) leading zero bits, head 0-47 bytes so that
   head, counter and padding fill one block: one compression per counter. Returns 1 and writes
   *found, or 0 when no counter of the range qualifies (or the arguments are out of range). */
int sc_sha256_counter_search(const void *head, size_t head_length, uint64_t start, uint64_t count, unsigned bits,
                             uint64_t *found) SC_MUST_CHECK;

/* SHA-256(prefix || canonical URL) of a common URL (sc_url_common, SPEC §2) in one pass: the
   canonical form is written right after the prefix and hashed where it lies, its padding added in
   place. 0 with the digest in out32, -1 when the URL is not common (or the prefix longer than
   SC_COMMON_URL_PREFIX_MAX), which the caller then canonicalises by the general path. `scratch`:
   sc_common_url_scratch(n) bytes. The digests of SPEC §3.2 and §4.2 of a request URL. */
#define SC_COMMON_URL_PREFIX_MAX 32
static inline size_t sc_common_url_scratch(size_t n) { return 2 * (3 * n + 24) + SC_COMMON_URL_PREFIX_MAX + 72; }
int sc_sha256_common_url(const void *prefix, size_t prefix_length, const void *url, size_t n, void *scratch, void *out32) SC_MUST_CHECK;

/* ---- SHA-512 and HMAC-SHA512 (libsodium), one-shot HMAC-SHA256 ------------------------ */

/* Opaque incremental SHA-512 state (libsodium's crypto_hash_sha512_state): a plain value. */
typedef struct {
    _Alignas(16) unsigned char opaque[256];
} sc_sha512_state;

void sc_sha512_init(sc_sha512_state *state);
void sc_sha512_update(sc_sha512_state *state, const void *data, size_t length);
/* Writes the 64-byte digest; the state is wiped. */
void sc_sha512_final(sc_sha512_state *state, void *out64);
/* HMAC-SHA512 (RFC 2104, RFC 4231) under a key of any length; the keyed state is wiped. */
void sc_hmac_sha512(const void *key, size_t key_length, const void *message, size_t length, void *out64);

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
/* The same for a signing input (SPEC §4.2), `inner` having absorbed the key's prefix: the rest
   is written straight into the block the inner hash compresses, with no copy in between. */
void sc_hmac_sha256_signing_input(const sc_hmac_key *key, const sc_sha256_state *inner, const sc_signing_input_rest *rest,
                                  void *out32);
/* 1 when `tag32` is that HMAC, else 0: compared in constant time, the computed HMAC wiped (the
   verifier's check, in one call). */
int sc_hmac_sha256_signing_input_matches(const sc_hmac_key *key, const sc_sha256_state *inner, const sc_signing_input_rest *rest,
                                         const void *tag32) SC_MUST_CHECK;

/* SPEC §4 for an HMAC key over a common URL in one pass, the signer's hot path: the target
   digest (sc_sha256_common_url under `prefix`, the method's digest head), the whash (that digest
   when `url_class`, else the body's, given in rest->whash), the HMAC of the signing input (`key`,
   `inner` as for sc_hmac_sha256_signing_input; `rest` holds every other field), then the whash's
   43 characters at whash48 (48 bytes of room, the last 5 left undefined) and the token at
   `token` (`parts` holds its key id, created, lifetime, account and headers; the nonce, target
   hint and signature are filled in here). `token` needs room for the token the caller has
   bounded (SignCore: 1024 bytes); `scratch` as for sc_sha256_common_url. Returns the token's
   length, or -1 when the URL is not common, with nothing written to whash48 or `token` (the
   caller's general path takes over). */
ptrdiff_t sc_hs256_sign_common(const sc_hmac_key *key, const sc_sha256_state *inner, const void *prefix, size_t prefix_length,
                               int url_class, const void *url, size_t n, void *scratch, sc_signing_input_rest *rest,
                               sc_token_parts *parts, void *whash48, void *token);

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

/* ---- Randomness (libsodium) --------------------------------------- */

/* Bytes from the system CSPRNG (getrandom). */
void sc_random_bytes(void *out, size_t length);
/* 16 bytes for a token nonce from this thread's ChaCha20 generator, seeded from the system
   CSPRNG on the thread's first call and again after fork(). Call sc_init first. */
void sc_nonce_bytes(void *out16);
/* For the tests: 1 when a child made by a raw clone(2) (no pthread_atfork handler runs) draws a
   nonce other than the parent's next one, 0 when it continues the parent's stream, -1 when the
   test cannot run here. */
int sc_nonce_differs_after_raw_clone(void);
/* For the tests: 1 when children are told apart by the page the kernel wipes in them (its wipe
   was seen to reach a child), 0 when by the process id, -1 without the library. */
int sc_fork_sentinel_uses_wiped_page(void);
#endif
