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
#include <unistd.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <sys/wait.h>
#include <signal.h>
#include <errno.h>
#endif

static void sc_random_after_fork(void);
static pthread_once_t sc_init_once = PTHREAD_ONCE_INIT;
static int sc_init_result = -1;

/* libsodium, then the fork handler of the nonce generator. Nothing here reads the environment
   or times anything: what the library does is decided when it is built or by an explicit call
   (sc_sha256_set_short_path). */
static int sc_fork_sentinel_init(void);

static void sc_init_run(void) {
    if (sodium_init() < 0) return;
    if (sc_fork_sentinel_init() != 0) return;
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
 * the system CSPRNG (getrandom) on first use and again in a child process, so parent and child
 * never share a stream. One getrandom per thread instead of one per nonce, no lock.
 *
 * A child is seen without depending on pthread_atfork (which a raw clone(2) or vfork skips): the
 * current generation lives in a page marked MADV_WIPEONFORK, which the kernel hands a child
 * zeroed, whatever made it (checked once, with one child, at start-up). Where that is not
 * available (a kernel before 4.14, a sandbox that ignores the advice, other systems) the
 * generation is tied to the process id instead, checked on every nonce.
 */
#define SC_RNG_BUFFER 1024
typedef struct {
    uint64_t generation; /* the process generation the key was seeded in; 0 = never seeded */
    size_t next;         /* first unused byte of buffer */
    unsigned char key[crypto_stream_chacha20_ietf_KEYBYTES];
    unsigned char buffer[SC_RNG_BUFFER];
} sc_rng_state;

static _Thread_local sc_rng_state sc_rng;

/* The page the kernel wipes in a child: the process generation, 0 once wiped. */
typedef struct { atomic_uint_fast64_t generation; } sc_fork_sentinel;
static sc_fork_sentinel *sc_sentinel;
/* Without a wiped page: the process id the generation was drawn in (-1 when the page works). */
static atomic_int sc_sentinel_pid = -1;

/* A fresh, non-zero generation from the system CSPRNG: equal to an earlier one with
   probability 2^-64. */
static uint64_t sc_new_generation(void) {
    uint64_t g = 0;
    while (g == 0) randombytes_buf(&g, sizeof g);
    return g;
}

/* The probe's raw clone(2) passes only flags and a NULL stack, in the order x86-64 and AArch64
   share (s390x, for one, swaps them): elsewhere the process id is used. */
#if defined(__linux__) && defined(MADV_WIPEONFORK) && (defined(__x86_64__) || defined(__aarch64__))
#define SC_WIPE_PROBE 1
#endif

#ifdef SC_WIPE_PROBE
/* Whether a child really gets the page zeroed: a kernel or sandbox that accepts the advice
   without acting on it (madvise returning 0) must not be trusted. One child, made by clone(2)
   without CLONE_VM and without running any fork handler, reads the word and exits; it calls
   nothing else. Any failure (no child allowed, SIGCHLD ignored so no status) says no. */
static int sc_wipe_reaches_children(void) {
    long pid = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid < 0) return 0;
    if (pid == 0) _exit(atomic_load(&sc_sentinel->generation) == 0 ? 0 : 1);
    int status = 0;
    pid_t waited;
    do { waited = waitpid((pid_t)pid, &status, 0); } while (waited < 0 && errno == EINTR);
    return waited == (pid_t)pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
#endif

static int sc_fork_sentinel_init(void) {
    long page = sysconf(_SC_PAGESIZE);
    void *memory = mmap(NULL, page > 0 ? (size_t)page : 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return -1;
    sc_sentinel = memory;
    atomic_store(&sc_sentinel->generation, sc_new_generation());
#ifdef SC_WIPE_PROBE
    int wiped = madvise(memory, page > 0 ? (size_t)page : 4096, MADV_WIPEONFORK) == 0 && sc_wipe_reaches_children();
#else
    int wiped = 0;
#endif
    if (!wiped) atomic_store(&sc_sentinel_pid, (int)getpid());
    return 0;
}

int sc_fork_sentinel_uses_wiped_page(void) {
    if (sc_init() != 0) return -1;
    return atomic_load(&sc_sentinel_pid) == -1 ? 1 : 0;
}

/* pthread_atfork's child handler: the same as a wiped page, for systems without one. */
static void sc_random_after_fork(void) { atomic_store(&sc_sentinel->generation, 0); }

/* The current process generation; a new one on the first call in a child. */
static uint64_t sc_process_generation(void) {
    if (sc_sentinel == NULL && sc_init() != 0) return 0; /* no library: the caller draws from the system */
    int pid = atomic_load_explicit(&sc_sentinel_pid, memory_order_relaxed);
    if (pid != -1 && pid != (int)getpid()) {
        atomic_store(&sc_sentinel_pid, (int)getpid());
        atomic_store(&sc_sentinel->generation, 0);
    }
    uint64_t g = atomic_load_explicit(&sc_sentinel->generation, memory_order_relaxed);
    if (g == 0) {
        uint64_t fresh = sc_new_generation(), expected = 0;
        /* Threads of the child racing here agree on one value. */
        atomic_compare_exchange_strong(&sc_sentinel->generation, &expected, fresh);
        g = atomic_load(&sc_sentinel->generation);
    }
    return g;
}

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
    uint64_t generation = sc_process_generation();
    if (generation == 0) { randombytes_buf(out16, 16); return; }
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

int sc_nonce_differs_after_raw_clone(void) {
#ifdef __linux__
    unsigned char parent[16], child[16];
    int pipefd[2];
    if (sc_init() != 0) return -1;
    sc_nonce_bytes(parent); /* the parent's stream is seeded before the clone */
    if (pipe(pipefd) != 0) return -1;
    /* clone(2) without CLONE_VM and with no handler run: what a fork that skips pthread_atfork makes. */
    long pid = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (pid < 0) { close(pipefd[0]); close(pipefd[1]); return -1; }
    if (pid == 0) {
        sc_nonce_bytes(child);
        ssize_t written = write(pipefd[1], child, sizeof child);
        _exit(written == (ssize_t)sizeof child ? 0 : 1);
    }
    close(pipefd[1]);
    ssize_t got = 0;
    while (got < (ssize_t)sizeof child) {
        ssize_t n = read(pipefd[0], child + got, sizeof child - (size_t)got);
        if (n <= 0) break;
        got += n;
    }
    close(pipefd[0]);
    int status = 0;
    waitpid((pid_t)pid, &status, 0);
    if (got != (ssize_t)sizeof child) return -1;
    sc_nonce_bytes(parent); /* the parent's next nonce: the one the child would repeat if it continued the stream */
    return memcmp(parent, child, sizeof child) != 0 ? 1 : 0;
#else
    return -1;
#endif
}

/* ---- SHA-512 and HMAC-SHA512 ------------------------------------------------------------ */

_Static_assert(sizeof(crypto_hash_sha512_state) <= sizeof(sc_sha512_state), "sc_sha512_state holds libsodium's state");
_Static_assert(_Alignof(crypto_hash_sha512_state) <= 16, "sc_sha512_state is aligned for libsodium's state");

void sc_sha512_init(sc_sha512_state *state) { crypto_hash_sha512_init((crypto_hash_sha512_state *)(void *)state->opaque); }

void sc_sha512_update(sc_sha512_state *state, const void *data, size_t length) {
    crypto_hash_sha512_update((crypto_hash_sha512_state *)(void *)state->opaque, data, length);
}

void sc_sha512_final(sc_sha512_state *state, void *out64) {
    crypto_hash_sha512_final((crypto_hash_sha512_state *)(void *)state->opaque, out64);
    sodium_memzero(state, sizeof *state);
}

void sc_hmac_sha512(const void *key, size_t key_length, const void *message, size_t length, void *out64) {
    crypto_auth_hmacsha512_state state;
    crypto_auth_hmacsha512_init(&state, key, key_length);
    crypto_auth_hmacsha512_update(&state, message, length);
    crypto_auth_hmacsha512_final(&state, out64);
    sodium_memzero(&state, sizeof state);
}
