/*
 * CBench: what the benchmark measures SignCore against, and how it counts allocations.
 *
 * The floors are the raw libsodium / OpenSSL work an operation cannot avoid, done with the
 * fastest API each library offers and every key schedule, context or per-key precomputation
 * the engine uses prepared once: SHA-256 through the low-level SHA256_CTX (faster than a reused
 * EVP_MD_CTX), short messages padded in place and fed to the block function (the shim's
 * default, measured faster on most CPUs); HMAC from prepared inner and outer
 * states, the inner one past the fixed start of the signing input as the engine keeps it;
 * libsodium Ed25519; ECDSA_do_sign / ECDSA_do_verify on a prepared EC_KEY (faster than
 * EVP_PKEY_sign with a reused EVP_PKEY_CTX).
 */
#ifndef CBENCH_H
#define CBENCH_H

#include <stddef.h>
#include <stdint.h>

/* ---- Floors ---------------------------------------------------------------------------- */

void bench_sha256(const void *data, size_t length, void *out32);

/* The 2-thread rows' control (not a floor): a common URL canonicalised and hashed, as the
   engine's one-pass whash does, so that it slows down under the same contention as the engine's
   branchy work (a hypervisor's other guests slowed the URL pass by up to 45 % at times when
   SHA-256 alone lost 12 %). `scratch`: 4096 bytes. 0, or -1 for an URL that is not common. */
int bench_control(const void *url, size_t n, void *scratch, void *out32);

/* libsodium's 64-byte Ed25519 secret key and 32-byte public key for a seed. */
int bench_ed25519_keypair(const void *seed32, void *public32, void *secret64);

typedef struct bench_hmac_key bench_hmac_key;
/* `prefix`: the bytes every signing input of the key starts with, absorbed once. */
bench_hmac_key *bench_hmac_key_new(const void *secret, size_t length, const void *prefix, size_t prefix_length);
void bench_hmac_key_free(bench_hmac_key *key);

typedef struct bench_p256_key bench_p256_key;
bench_p256_key *bench_p256_key_new(const void *private32);
void bench_p256_key_free(bench_p256_key *key);
/* A signature r || s parsed once into OpenSSL's form (a verifier must parse it per call). */
typedef struct bench_p256_signature bench_p256_signature;
bench_p256_signature *bench_p256_signature_new(const void *signature64);
void bench_p256_signature_free(bench_p256_signature *signature);

/* Whole sign: SHA-256 of the content (canonical URL or body), then the MAC or signature over the
   signing input. Return 0 on success. */
int bench_floor_sign_hmac(const bench_hmac_key *key, const void *content, size_t content_length,
                          const void *input, size_t input_length, void *out32);
int bench_floor_sign_ed25519(const void *secret64, const void *content, size_t content_length,
                             const void *input, size_t input_length, void *out64);
int bench_floor_sign_p256(const bench_p256_key *key, const void *content, size_t content_length,
                          const void *input, size_t input_length, void *out32);

/* Whole verify: the same, then the constant-time compare or the signature check. 0 = valid. */
int bench_floor_verify_hmac(const bench_hmac_key *key, const void *content, size_t content_length,
                            const void *input, size_t input_length, const void *tag32);
int bench_floor_verify_ed25519(const void *public32, const void *content, size_t content_length,
                               const void *input, size_t input_length, const void *signature64);
int bench_floor_verify_p256(const bench_p256_key *key, const void *content, size_t content_length,
                            const void *input, size_t input_length, const bench_p256_signature *signature);

/* Library versions, for the report. */
const char *bench_openssl_version(void);
const char *bench_sodium_version(void);
/* 1 when the shim pads short SHA-256 messages itself (the default). */
int bench_sha256_short_path(void);
/* 1 when the shim's own padding measured faster than the library's on this CPU, just now. */
int bench_sha256_short_path_measured_faster(void);

/* ---- Allocation counting ----------------------------------------------------------------- */

/* Heap allocations (malloc, calloc, realloc, aligned forms) made by the calling thread so far:
   the bench binary defines the malloc family over glibc's __libc_* functions to count them. */
uint64_t bench_thread_allocations(void);

#endif
