/*
 * CSignShim, OpenSSL libcrypto: SHA-256, the HMAC key schedule and ECDSA P-256. SHA-256 uses
 * OpenSSL's low-level SHA256_CTX on purpose: it is a fixed-size plain struct, so states live on
 * the caller's stack, can be copied (HMAC key schedule prepared once, then copied per message,
 * safe to share between threads) and cost no allocation or provider fetch per call, while
 * running the same SHA-NI code as EVP. The one-pass paths over these states are in fastpaths.c.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "CSignShim.h"

#include <string.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/obj_mac.h>
#include <openssl/crypto.h>

_Static_assert(sizeof(SHA256_CTX) <= sizeof(sc_sha256_state), "sc_sha256_state too small");

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
    sc_memzero(block, sizeof block);
    sc_memzero(pad, sizeof pad);
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
