/* The crypto floors of CBench.h: raw library calls, nothing else. A digest nobody reads is still
   computed: the calls are into another library, which the compiler cannot elide. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CBench.h"
#include "CSignShim.h"
#include "CSignBytes.h"

#include <string.h>
#include <sodium.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/obj_mac.h>
#include <openssl/crypto.h>

/* SHA-256 and HMAC through the shim's finishing functions: for up to 512 bytes they use
   whichever of OpenSSL's own padding (SHA256_Update/SHA256_Final) and the block function with
   the padding done in place is faster on this CPU (sc_init measures both), above that the
   library's. Either way the same OpenSSL compressions and nothing else. */
void bench_sha256(const void *data, size_t length, void *out32) {
    sc_sha256_prefixed(NULL, 0, data, length, out32);
}

int bench_control(const void *url, size_t n, void *scratch, void *out32) {
    static const char prefix[] = "SignCore/3 whash url\nGET ";
    if (sc_common_url_scratch(n) > 4096) return -1;
    return sc_sha256_common_url(prefix, sizeof prefix - 1, url, n, scratch, out32);
}

/* ---- HMAC-SHA256 from prepared states (RFC 2104) -------------------------------------------- */

/* The key schedule and, as the engine keeps per key, the inner state after the fixed start of
   every signing input (prefix, algorithm, key id): a tight floor does every precomputation the
   engine does. */
struct bench_hmac_key {
    sc_hmac_key key;
    sc_sha256_state prefixed;
    size_t prefix_length;
};

bench_hmac_key *bench_hmac_key_new(const void *secret, size_t length, const void *prefix, size_t prefix_length) {
    bench_hmac_key *key = malloc(sizeof *key);
    if (key == NULL) return NULL;
    sc_hmac_key_init(&key->key, secret, length);
    key->prefixed = key->key.inner;
    sc_sha256_update(&key->prefixed, prefix, prefix_length);
    key->prefix_length = prefix_length;
    return key;
}

void bench_hmac_key_free(bench_hmac_key *key) { free(key); }

/* The MAC of an input that starts with the key's prefix. */
static void hmac(const bench_hmac_key *key, const void *input, size_t length, unsigned char out[32]) {
    sc_hmac_sha256_continue(&key->key, &key->prefixed, (const unsigned char *)input + key->prefix_length,
                            length - key->prefix_length, out);
}

int bench_floor_sign_hmac(const bench_hmac_key *key, const void *content, size_t content_length,
                          const void *input, size_t input_length, void *out32) {
    unsigned char digest[32];
    bench_sha256(content, content_length, digest);
    hmac(key, input, input_length, out32);
    return 0;
}

int bench_floor_verify_hmac(const bench_hmac_key *key, const void *content, size_t content_length,
                            const void *input, size_t input_length, const void *tag32) {
    unsigned char digest[32], expected[32];
    bench_sha256(content, content_length, digest);
    hmac(key, input, input_length, expected);
    return sc_memcmp(expected, tag32, 32) == 0 ? 0 : -1;
}

/* ---- Ed25519 (libsodium) ------------------------------------------------------------------- */

int bench_floor_sign_ed25519(const void *secret64, const void *content, size_t content_length,
                             const void *input, size_t input_length, void *out64) {
    unsigned char digest[32];
    bench_sha256(content, content_length, digest);
    return crypto_sign_detached(out64, NULL, input, input_length, secret64) == 0 ? 0 : -1;
}

int bench_floor_verify_ed25519(const void *public32, const void *content, size_t content_length,
                               const void *input, size_t input_length, const void *signature64) {
    unsigned char digest[32];
    bench_sha256(content, content_length, digest);
    return crypto_sign_verify_detached(signature64, input, input_length, public32) == 0 ? 0 : -1;
}

/* ---- ECDSA P-256 (OpenSSL, prepared EC_KEY) ------------------------------------------------ */

struct bench_p256_key {
    EC_KEY *ec;
};

bench_p256_key *bench_p256_key_new(const void *private32) {
    bench_p256_key *key = malloc(sizeof *key);
    BIGNUM *d = BN_bin2bn(private32, 32, NULL);
    EC_KEY *ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    const EC_GROUP *group = ec ? EC_KEY_get0_group(ec) : NULL;
    EC_POINT *point = group ? EC_POINT_new(group) : NULL;
    if (key == NULL || d == NULL || point == NULL || EC_POINT_mul(group, point, d, NULL, NULL, NULL) != 1 ||
        EC_KEY_set_private_key(ec, d) != 1 || EC_KEY_set_public_key(ec, point) != 1) {
        free(key);
        EC_KEY_free(ec);
        key = NULL;
    } else {
        key->ec = ec;
    }
    EC_POINT_free(point);
    BN_clear_free(d);
    return key;
}

void bench_p256_key_free(bench_p256_key *key) {
    if (key == NULL) return;
    EC_KEY_free(key->ec);
    free(key);
}

struct bench_p256_signature {
    ECDSA_SIG *sig;
};

bench_p256_signature *bench_p256_signature_new(const void *signature64) {
    const unsigned char *raw = signature64;
    bench_p256_signature *signature = malloc(sizeof *signature);
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    if (signature == NULL || sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        free(signature);
        ECDSA_SIG_free(sig);
        BN_free(r);
        BN_free(s);
        return NULL;
    }
    signature->sig = sig;
    return signature;
}

void bench_p256_signature_free(bench_p256_signature *signature) {
    if (signature == NULL) return;
    ECDSA_SIG_free(signature->sig);
    free(signature);
}

int bench_floor_sign_p256(const bench_p256_key *key, const void *content, size_t content_length,
                          const void *input, size_t input_length, void *out32) {
    unsigned char digest[32];
    bench_sha256(content, content_length, out32); /* out32: the content digest */
    bench_sha256(input, input_length, digest);
    ECDSA_SIG *sig = ECDSA_do_sign(digest, sizeof digest, key->ec);
    if (sig == NULL) return -1;
    ECDSA_SIG_free(sig);
    return 0;
}

int bench_floor_verify_p256(const bench_p256_key *key, const void *content, size_t content_length,
                            const void *input, size_t input_length, const bench_p256_signature *signature) {
    unsigned char digest[32], content_digest[32];
    bench_sha256(content, content_length, content_digest);
    bench_sha256(input, input_length, digest);
    return ECDSA_do_verify(digest, sizeof digest, signature->sig, key->ec) == 1 ? 0 : -1;
}

int bench_ed25519_keypair(const void *seed32, void *public32, void *secret64) {
    return crypto_sign_seed_keypair(public32, secret64, seed32) == 0 ? 0 : -1;
}

#include <openssl/crypto.h>
const char *bench_openssl_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
const char *bench_sodium_version(void) { return sodium_version_string(); }
int bench_sha256_short_path(void) { return sc_init() == 0 && sc_sha256_short_path(); }
int bench_sha256_short_path_measured_faster(void) { return sc_sha256_short_path_measured_faster(); }
