/* See why.h. */
#include "why.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void hb_why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (!why || !len)
        return;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

void hb_why_append(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    size_t used;

    if (!why || !len)
        return;
    used = strnlen(why, len - 1);
    va_start(ap, fmt);
    vsnprintf(why + used, len - used, fmt, ap);
    va_end(ap);
}
