/* hotbuf's data copy and its start-up choice (see copy.h). */
#include "copy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* Read on every copy, written once at start (relaxed: no other memory
 * hangs on it). */
static int routine_in_use = HB_COPY_MEMCPY;

static void copy_pieces(char *dst, const char *src, size_t n)
{
    while (n > HB_COPY_PIECE) {
        memcpy(dst, src, HB_COPY_PIECE);
        dst += HB_COPY_PIECE;
        src += HB_COPY_PIECE;
        n -= HB_COPY_PIECE;
    }
    memcpy(dst, src, n);
}

void hb_copy(void *dst, const void *src, size_t n)
{
    if (n > HB_COPY_PIECE &&
        __atomic_load_n(&routine_in_use, __ATOMIC_RELAXED) == HB_COPY_PIECES)
        copy_pieces(dst, src, n);
    else
        memcpy(dst, src, n);
}

void hb_copy_use(enum hb_copy_routine r)
{
    __atomic_store_n(&routine_in_use, (int)r, __ATOMIC_RELAXED);
}

enum hb_copy_routine hb_copy_in_use(void)
{
    return (enum hb_copy_routine)__atomic_load_n(&routine_in_use,
                                                 __ATOMIC_RELAXED);
}

const char *hb_copy_routine_name(enum hb_copy_routine r)
{
    return r == HB_COPY_PIECES ? "pieces" : "memcpy";
}

/* Through a volatile pointer: the compiler may neither drop the copies
 * nor turn the pieces back into one memcpy. */
static void (*volatile copy_fn)(char *, const char *, size_t);

static void whole(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n);
}

double hb_copy_time_ns(enum hb_copy_routine r, void *dst, const void *src,
                       size_t len, int iters)
{
    double best = INFINITY;
    copy_fn = r == HB_COPY_PIECES ? copy_pieces : whole;
    for (int batch = 0; batch < 5; batch++) {
        double t0 = hb_clock_ns();
        for (int i = 0; i < iters; i++)
            copy_fn(dst, src, len);
        double t = (hb_clock_ns() - t0) / iters;
        if (t < best)
            best = t;
    }
    return best;
}

int hb_copy_probe(struct hb_copy_probe *p)
{
    char *src = malloc(HB_COPY_PROBE_BYTES), *dst = malloc(HB_COPY_PROBE_BYTES);
    if (!src || !dst) {
        free(src);
        free(dst);
        return -1;
    }
    memset(src, 1, HB_COPY_PROBE_BYTES);
    memset(dst, 2, HB_COPY_PROBE_BYTES);
    /* alternated, so a burst of load on the node hits both alike */
    p->memcpy_ns = p->pieces_ns = INFINITY;
    for (int round = 0; round < 2; round++) {
        p->memcpy_ns =
            fmin(p->memcpy_ns, hb_copy_time_ns(HB_COPY_MEMCPY, dst, src,
                                               HB_COPY_PROBE_BYTES, 4));
        p->pieces_ns =
            fmin(p->pieces_ns, hb_copy_time_ns(HB_COPY_PIECES, dst, src,
                                               HB_COPY_PROBE_BYTES, 4));
    }
    free(src);
    free(dst);
    return 0;
}

enum hb_copy_routine hb_copy_pick(const struct hb_copy_probe *p)
{
    return p->pieces_ns > 0 && 2 * p->pieces_ns <= p->memcpy_ns
               ? HB_COPY_PIECES
               : HB_COPY_MEMCPY;
}
