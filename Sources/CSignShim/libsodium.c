/*
 * CSignShim, libsodium: start-up, Ed25519, and randomness (the system CSPRNG for keys, a
 * per-thread ChaCha20 generator for nonces).
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CSignShim.h"

#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sodium.h>

static void sc_random_after_fork(void);
static pthread_once_t sc_init_once = PTHREAD_ONCE_INIT;
static int sc_init_result = -1;

/* libsodium, then the fork handler of the nonce generator. Nothing here reads the environment
   or times anything: what the library does is decided when it is built or by an explicit call
   (sc_sha256_set_short_path). */
static void sc_init_run(void) {
    if (sodium_init() < 0) return;
    if (pthread_atfork(NULL, NULL, sc_random_after_fork) != 0) return;
    sc_init_result = 0;
}

int sc_init(void) {
    pthread_once(&sc_init_once, sc_init_run);
    return sc_init_result;
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
