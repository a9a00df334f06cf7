/*
 * CSignBytes, encoding: the signing input's layout after its key's prefix (SPEC §4.2), decimals,
 * base64url, and the wtoken's fields (SPEC §4.1) (encoding.c).
 */
#ifndef SC_ENCODING_H
#define SC_ENCODING_H

#include "sc_runtime.h"

/* ---- The signing input after its key's prefix (SPEC §4.2) ------------------------------ */

/* Everything of a signing input after the part fixed per key (prefix, algorithm, key id), as
   values: written by `sc_signing_input_rest_write`, or by the shim straight into the block an
   HMAC hashes. Digests and the nonce are bytes in memory order; created and lifetime are
   written big-endian. */
typedef struct {
    uint64_t target[4];
    uint64_t whash[4];
    int64_t created;            /* 0...99999999999 */
    int64_t lifetime;           /* 1...86400 */
    uint64_t nonce[2];
    const void *account;        /* UTF-8, at most 256 bytes; may be NULL when empty */
    size_t account_length;
    int32_t headers_count;      /* covered header fields, 0-16 */
    uint64_t headers_digest[4]; /* written only when headers_count > 0 */
} sc_signing_input_rest;

enum { SC_SIGNING_INPUT_REST_MAX = 32 + 32 + 8 + 4 + 16 + 2 + 256 + 1 + 32 };

static inline size_t sc_signing_input_rest_length(const sc_signing_input_rest *rest) {
    return 95 + rest->account_length + (rest->headers_count > 0 ? 32 : 0);
}

/* target || whash || created (u64 BE) || lifetime (u32 BE) || nonce || u16 BE len(account) ||
   account || u8 headers_count || headers digest (when headers_count > 0). Writes
   `sc_signing_input_rest_length` bytes and returns that count. */
static inline size_t sc_signing_input_rest_write(const sc_signing_input_rest *rest, void *output) {
    uint8_t *out = output;
    uint64_t created = (uint64_t)rest->created;
    uint32_t lifetime = (uint32_t)rest->lifetime;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    created = __builtin_bswap64(created);
    lifetime = __builtin_bswap32(lifetime);
#endif
    __builtin_memcpy(out, rest->target, 32);
    __builtin_memcpy(out + 32, rest->whash, 32);
    __builtin_memcpy(out + 64, &created, 8);
    __builtin_memcpy(out + 72, &lifetime, 4);
    __builtin_memcpy(out + 76, rest->nonce, 16);
    out[92] = (uint8_t)(rest->account_length >> 8);
    out[93] = (uint8_t)rest->account_length;
    if (rest->account_length > 0) __builtin_memcpy(out + 94, rest->account, rest->account_length);
    size_t at = 94 + rest->account_length;
    out[at++] = (uint8_t)rest->headers_count;
    if (rest->headers_count > 0) {
        __builtin_memcpy(out + at, rest->headers_digest, 32);
        at += 32;
    }
    return at;
}

/* ---- decimals --------------------------------------------------------------------------- */

/* The number of decimal digits of v (1-20) without a loop: log10 from the bit length
   (1233 / 4096 is just above log10 2), corrected by one comparison with a power of ten. */
static inline int sc_decimal_digits(uint64_t v) {
    static const uint64_t powers[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
        10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
        1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
        10000000000000000000ULL,
    };
    v |= 1; /* 0 has one digit; no power of ten from 10 on is odd, so nothing else changes */
    int approximate = ((64 - __builtin_clzll(v)) * 1233) >> 12;
    return approximate + (v >= powers[approximate]);
}

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

/* Decodes base64url without padding (RFC 4648 §5) of public text: a token's account (its
   fixed-length fields and the whash have decoders of their own: sc_token_parse,
   sc_base64url_decode_digest). SSSE3 does 16 characters / 12 bytes at a time where the CPU has
   it (the last 2-15 as one more block, padded), the rest byte by byte. Strict: only alphabet
   characters, no padding, a length that is not 1 mod 4, unused trailing bits zero; returns the
   byte count, or -1 for any other text. `output` needs room for n * 3 / 4 bytes. Key material is decoded in
   constant time by SignCore instead. */
ptrdiff_t sc_base64url_decode(const void *text, size_t n, void *output);

/* A 32-byte digest from exactly 43 characters of canonical base64url (a whash header): 1 with
   the digest in out32, 0 for any other text. */
int sc_base64url_decode_digest(const void *text, size_t n, void *out32) SC_MUST_CHECK;

/* 1 when `text` is exactly the 43 characters of canonical base64url of the 32 bytes at
   digest32, else 0; compared in constant time (the verifier's whash check: encoding the digest
   costs less than decoding the text, and only the canonical spelling decodes, so the answer is
   that of sc_base64url_decode_digest and a comparison of the digests). */
int sc_base64url_is_digest(const void *text, size_t n, const void *digest32) SC_MUST_CHECK;

/* Encodes base64url without padding (RFC 4648 §5) of public bytes: 12 bytes to 16 characters
   at a time with SSSE3 where the CPU has it (the last bytes as one more block), else two
   characters per table load (a 12-bit pair table; the table index is the data, so never for
   key material, which SignCore encodes in constant time). Writes exactly (n * 4 + 2) / 3
   characters and returns that count. */
size_t sc_base64url_encode(const void *data, size_t n, void *output);

/* ---- Token fields ------------------------------------------------------------------------ */

/* The fields of a wtoken (SPEC §4.1) in one pass: the dots found with SSE2, eight digits of a
   decimal checked and combined at once, the base64url fields decoded where they lie. Returns
   the first failing check in this order, or SC_TOKEN_OK: the first field is not "v3"; not 9 fields; the key id is not 1-max_key_id
   alphabet characters; created or lifetime not a canonical decimal in range (lifetime >= 1);
   the nonce not 22 characters of 16 bytes; the target not 8 of 6; the signature not 43 or 86
   characters of 32 or 64 bytes. (The account and headers fields, between target and
   signature, are checked by SignCore, which therefore reports a bad signature field after
   them.) `starts[k]` is where field k starts and `starts[k + 1] - 1` where it ends, for the
   first min(fields, 9) fields (starts[10] is scratch). The caller bounds n (SignCore: 1024
   bytes). With check_key_id_alphabet 0 the key id's length is checked but not its characters:
   a verifier that finds the id among its keys knows them valid, and checks them otherwise. */
typedef struct {
    int32_t fields;
    int32_t starts[11];
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
                   int check_key_id_alphabet, sc_token_fields *out);

/* The parts of a wtoken (SPEC §4.1) and its encoding in one pass, the signer's path:
   "v3." kid "." created "." lifetime "." b64(nonce, 16) "." b64(target) "." b64(account) "."
   headers "." b64(signature). The caller checks every field against its limits and sizes
   `output` (SignCore: WToken.encodedLength). Returns the bytes written. */
typedef struct {
    const void *key_id;
    size_t key_id_length;
    int64_t created, lifetime;
    const void *nonce; /* 16 bytes */
    const void *target;
    size_t target_length; /* 6 in a signer's token */
    const void *account;
    size_t account_length;
    const void *headers;
    size_t headers_length;
    const void *signature;
    size_t signature_length;
} sc_token_parts;

size_t sc_token_encode(const sc_token_parts *parts, void *output);

/* sc_token_encode, and beside it the 43 characters of base64url of the whash at whash32,
   written to a buffer of 48 bytes (three 16-byte stores with SSSE3; bytes 43-47 are left
   undefined): the two header values of the one-pass HS256 sign, behind one CPU check. */
size_t sc_whash_and_token_encode(const sc_token_parts *parts, const void *whash32, void *whash48, void *token);

#endif
