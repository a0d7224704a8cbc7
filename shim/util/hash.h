/* Multiplicative (Fibonacci) hashing: key * 2^64/phi, top bits kept, as
 * Linux's hash_long.  Consecutive keys (addresses 64 B apart, return
 * addresses in one function) land far apart, which is what the reuse
 * table, the call-site table and the datatype cache need. */
#ifndef HOTBUF_UTIL_HASH_H
#define HOTBUF_UTIL_HASH_H

#include <stdint.h>

#define HB_GOLDEN_RATIO_64 0x61C8864680B583EBull

/* The top `bits` bits (1..64) of key * HB_GOLDEN_RATIO_64. */
static inline uint64_t hb_hash_golden(uint64_t key, unsigned bits)
{
    return (key * HB_GOLDEN_RATIO_64) >> (64 - bits);
}

#endif
