/*
 * CSignShim implementation. SHA-256 uses OpenSSL's low-level SHA256_CTX on purpose: it is a
 * fixed-size plain struct, so states live on the caller's stack, can be copied (HMAC key
 * schedule prepared once, then copied per message, safe to share between threads) and cost no
 * allocation or provider fetch per call, while running the same SHA-NI code as EVP.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CSignShim.h"

#include <string.h>
#include <sodium.h>
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/obj_mac.h>
#include <openssl/crypto.h>

_Static_assert(sizeof(SHA256_CTX) <= sizeof(sc_sha256_state), "sc_sha256_state too small");

int sc_init(void) { return sodium_init() < 0 ? -1 : 0; }

/* ---- SHA-256 ---------------------------------------------------------------------------- */

void sc_sha256_init(sc_sha256_state *state) { SHA256_Init((SHA256_CTX *)state->opaque); }

void sc_sha256_update(sc_sha256_state *state, const void *data, size_t length) {
    if (length > 0) SHA256_Update((SHA256_CTX *)state->opaque, data, length);
}

void sc_sha256_final(sc_sha256_state *state, void *out32) {
    SHA256_Final(out32, (SHA256_CTX *)state->opaque);
    sodium_memzero(state, sizeof *state);
}

void sc_sha256(const void *data, size_t length, void *out32) {
    sc_sha256_state state;
    sc_sha256_init(&state);
    sc_sha256_update(&state, data, length);
    sc_sha256_final(&state, out32);
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

void sc_hmac_start(const sc_hmac_key *key, sc_sha256_state *state) { *state = key->inner; }

void sc_hmac_finish(const sc_hmac_key *key, sc_sha256_state *state, void *out32) {
    unsigned char inner[32];
    sc_sha256_final(state, inner);
    sc_sha256_state outer = key->outer;
    sc_sha256_update(&outer, inner, sizeof inner);
    sc_sha256_final(&outer, out32);
    sodium_memzero(inner, sizeof inner);
}

void sc_hmac_sha256(const sc_hmac_key *key, const void *message, size_t length, void *out32) {
    sc_sha256_state state;
    sc_hmac_start(key, &state);
    sc_sha256_update(&state, message, length);
    sc_hmac_finish(key, &state, out32);
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

/* ---- ECDSA P-256 ------------------------------------------------------------------------ */

struct sc_p256_key {
    EVP_PKEY *pkey;
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
    return rc;
}

sc_p256_key *sc_p256_key_new(const void *public65, const void *private32) {
    unsigned char derived[SC_P256_PUBLIC_BYTES];
    OSSL_PARAM_BLD *bld = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL, *check = NULL;
    EVP_PKEY *pkey = NULL;
    BIGNUM *d = NULL;
    sc_p256_key *key = NULL;

    if (((const unsigned char *)public65)[0] != 0x04) return NULL;
    if (private32 != NULL) {
        if (sc_p256_public_from_private(private32, derived) != 0) return NULL;
        if (CRYPTO_memcmp(derived, public65, SC_P256_PUBLIC_BYTES) != 0) return NULL;
    }
    bld = OSSL_PARAM_BLD_new();
    if (bld == NULL) goto done;
    if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1) goto done;
    if (OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, public65, SC_P256_PUBLIC_BYTES) != 1) goto done;
    if (private32 != NULL) {
        d = BN_secure_new();
        if (d == NULL || BN_bin2bn(private32, SC_P256_PRIVATE_BYTES, d) == NULL) goto done;
        if (OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, d) != 1) goto done;
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1) goto done;
    if (EVP_PKEY_fromdata(ctx, &pkey, private32 != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) != 1) goto done;
    check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (check == NULL || EVP_PKEY_public_check(check) != 1) goto done; /* on the curve, not infinity */
    key = OPENSSL_malloc(sizeof *key);
    if (key == NULL) goto done;
    key->pkey = pkey;
    pkey = NULL;
done:
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_clear_free(d);
    return key;
}

void sc_p256_key_free(sc_p256_key *key) {
    if (key == NULL) return;
    EVP_PKEY_free(key->pkey);
    OPENSSL_free(key);
}

int sc_p256_sign(sc_p256_key *key, const void *message, size_t length, void *signature64) {
    unsigned char digest[32], der[80];
    size_t der_length = sizeof der;
    const unsigned char *cursor = der;
    ECDSA_SIG *sig = NULL;
    const BIGNUM *r = NULL, *s = NULL;
    int rc = -1;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key->pkey, NULL);
    sc_sha256(message, length, digest);
    if (ctx == NULL || EVP_PKEY_sign_init(ctx) != 1) goto done;
    if (EVP_PKEY_sign(ctx, der, &der_length, digest, sizeof digest) != 1) goto done;
    sig = d2i_ECDSA_SIG(NULL, &cursor, (long)der_length);
    if (sig == NULL) goto done;
    ECDSA_SIG_get0(sig, &r, &s);
    unsigned char *out = signature64;
    if (BN_bn2binpad(r, out, 32) != 32 || BN_bn2binpad(s, out + 32, 32) != 32) goto done;
    rc = 0;
done:
    ECDSA_SIG_free(sig);
    EVP_PKEY_CTX_free(ctx);
    return rc;
}

int sc_p256_verify(sc_p256_key *key, const void *message, size_t length, const void *signature64) {
    unsigned char digest[32], *der = NULL;
    const unsigned char *raw = signature64;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    EVP_PKEY_CTX *ctx = NULL;
    int der_length, rc = -1;
    if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        goto done;
    }
    der_length = i2d_ECDSA_SIG(sig, &der);
    if (der_length <= 0) goto done;
    sc_sha256(message, length, digest);
    ctx = EVP_PKEY_CTX_new(key->pkey, NULL);
    if (ctx == NULL || EVP_PKEY_verify_init(ctx) != 1) goto done;
    rc = EVP_PKEY_verify(ctx, der, (size_t)der_length, digest, sizeof digest) == 1 ? 0 : -1;
done:
    OPENSSL_free(der);
    EVP_PKEY_CTX_free(ctx);
    ECDSA_SIG_free(sig);
    return rc;
}

/* ---- Randomness, comparison, wiping ----------------------------------------------------- */

void sc_random_bytes(void *out, size_t length) { randombytes_buf(out, length); }

int sc_memcmp(const void *a, const void *b, size_t length) { return sodium_memcmp(a, b, length) == 0 ? 0 : -1; }

void sc_memzero(void *p, size_t length) { sodium_memzero(p, length); }
