/*
 * CSignBytes: the portable C of SignCore, no cryptographic library behind it, one header and one
 * file per concern: runtime (randomness, constant-time comparison and wiping, pages, atomics and
 * lock, the CPU probe), encoding (base64url, the signing input, the wtoken's fields) and URL (the
 * one-pass canonicalisation of common URLs). It includes no third-party header and builds on
 * Linux and every Apple platform. The crypto itself is in a backend: libsodium and OpenSSL
 * through CSignShim, or swift-crypto.
 */
#ifndef CSIGNBYTES_H
#define CSIGNBYTES_H

#include "sc_runtime.h"
#include "sc_encoding.h"
#include "sc_url.h"

#endif
