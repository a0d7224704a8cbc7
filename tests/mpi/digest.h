/* FNV-1a, for the test programs to print a digest of what they received:
 * the tests compare it between runs with and without hotbuf. */
#ifndef HOTBUF_TEST_DIGEST_H
#define HOTBUF_TEST_DIGEST_H

#include <stddef.h>

#define DIGEST_INIT 1469598103934665603ul

static inline unsigned long digest_more(unsigned long h, const void *p, size_t len)
{
    const unsigned char *b = (const unsigned char *)p; /* also C++ */
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 1099511628211ul;
    return h;
}

static inline unsigned long digest(const void *p, size_t len)
{
    return digest_more(DIGEST_INIT, p, len);
}

#endif
