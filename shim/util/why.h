/* The one-line "why" every set-up path returns: 0 or -1 from the call, and
 * the reason as one line of text in a buffer the caller owns (see
 * transport.h, memmon.h).  The caller prints it once (rank 0's note) or
 * puts it in the report; the callee never prints.
 *
 * Both functions accept why == NULL or len == 0 (the caller does not want
 * the reason) and always leave a terminated string otherwise. */
#ifndef HOTBUF_UTIL_WHY_H
#define HOTBUF_UTIL_WHY_H

#include <stddef.h>

/* Replaces the text in why. */
void hb_why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to the text already in why, truncating at len - 1. */
void hb_why_append(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
