/*
 * The SSSE3 choice as the passes' dispatchers read it: inline, a relaxed load of what the CPU said
 * when the library loaded, so that a dispatcher is a test and a jump, not a call. `sc_has_ssse3` is
 * the exported form, for the tests.
 */
#ifndef SC_CPU_H
#define SC_CPU_H
#if defined(__x86_64__)
#include <stdatomic.h>

/* 0 or 1, set when the library loads (a constructor asks the CPU) and by sc_use_ssse3 (tests);
   0 before, which only means the portable forms. */
extern atomic_int sc_ssse3_state;

static inline int has_ssse3(void) { return atomic_load_explicit(&sc_ssse3_state, memory_order_relaxed); }
#endif
#endif
