/*
 * CSignBytes, URLs: the one-pass canonicalisation of common URLs (SPEC §2, url.c).
 */
#ifndef SC_URL_H
#define SC_URL_H

#include "sc_runtime.h"

/* ---- URLs (the one-pass canonicalisation of common URLs) ------------------------------- */

/* The canonical URL (SPEC §2) of a common request URL, written to `output` (room for 3 * n + 24
   bytes: the longest canonical form and 16 bytes more, for whole 16-byte blocks read and written
   back past its end); `spare` (as much room) holds the query while its pairs are sorted. Returns the length,
   or -1 when the URL is not of the common kind, which SignCore's general path then handles (a
   differential test and fuzzer check that both agree on every input).

   Common: "https://" or "http://" in lower case; a host of 1-255 unreserved bytes (upper case is
   folded) and no port or userinfo; a path and a query of unreserved bytes, escapes of reserved
   bytes (their hex digits put in upper case) and at most SC_URL_COMMON_MAX_PLUSES '+' (spelled
   "%2B" in the path, "%20" in the query: each moves the rest of the output, so more would make a
   long URL of '+' quadratic); no dot segment; at most SC_URL_COMMON_MAX_PAIRS query pairs, each
   with exactly one '=' and none empty; no fragment, no byte outside ASCII. The pairs are put in
   key order. */
#define SC_URL_COMMON_MAX_PAIRS 16
#define SC_URL_COMMON_MAX_PLUSES 16
ptrdiff_t sc_url_common(const void *input, size_t n, void *output, void *spare);

#endif
