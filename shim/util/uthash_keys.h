/* uthash with a cheaper hash for 64-bit keys.  hotbuf's hash tables key on
 * a handle's or an address's bits (8 bytes): uthash's default, Jenkins'
 * hash over the bytes, costs about a hundred instructions per lookup on
 * the point-to-point wrappers' path (Wait/Test look every request up).
 * The multiplicative hash of util/hash.h spreads aligned pointers and
 * consecutive handles as well; uthash uses the low bits of the value, so
 * the top 32 bits of the product are handed over.  Other key lengths keep
 * Jenkins'.  Include this instead of <uthash.h>. */
#ifndef HOTBUF_UTIL_UTHASH_KEYS_H
#define HOTBUF_UTIL_UTHASH_KEYS_H

#include <stdint.h>
#include <string.h>

#include "util/hash.h"

#define HASH_FUNCTION(keyptr, keylen, hashv)                                   \
    do {                                                                       \
        if ((keylen) == sizeof(uint64_t)) {                                    \
            uint64_t k_;                                                       \
            memcpy(&k_, (keyptr), sizeof(k_));                                 \
            (hashv) = (unsigned)hb_hash_golden(k_, 32);                        \
        } else {                                                               \
            HASH_JEN(keyptr, keylen, hashv);                                   \
        }                                                                      \
    } while (0)

#include <uthash.h>

#endif
