/* The copy hotbuf uses for application data it moves itself (the
 * Allgather's collective buffer, point-to-point staging).
 *
 * Why not plain memcpy: glibc's memcpy picks its loop by size, and from a
 * few KiB up to its non-temporal threshold it uses `rep movsb`, which most
 * CPUs run at full speed but some do not: the emulated CPU of the test bed
 * (QEMU TCG) runs it at about 500 MB/s against 3 GB/s for the vector loop
 * that glibc takes for 4 KiB.  Copying in 4 KiB pieces keeps to that loop.
 * On a CPU with a fast `rep movsb` the pieces are slower (0.75-0.9 of
 * memcpy on the development host), so neither routine is right
 * everywhere: hotbuf times both at start (hb_copy_probe) and takes the
 * pieces only where they are clearly faster (hb_copy_pick).
 *
 * The choice is one fact about the process's CPU and C library, set once
 * at start before any copy (hb_copy_use), hence a file-scope variable
 * rather than a context every caller would have to carry. */
#ifndef HOTBUF_UTIL_COPY_H
#define HOTBUF_UTIL_COPY_H

#include <stddef.h>

enum hb_copy_routine {
    HB_COPY_MEMCPY, /* one memcpy call */
    HB_COPY_PIECES, /* memcpy of HB_COPY_PIECE bytes at a time */
};

#define HB_COPY_PIECE 4096
#define HB_COPY_PROBE_BYTES 65536 /* the Allgather's blocks where it counts */

/* Best-of-5 times (ns) of one HB_COPY_PROBE_BYTES copy by each routine. */
struct hb_copy_probe {
    double memcpy_ns, pieces_ns;
};

/* ns per copy of len bytes by routine r: the best of 5 batches of iters
 * copies (the minimum is what the routine costs, the rest is other
 * processes on the node).  Shared by the probe below and the cost model's
 * copy curve (track/costmodel.c), which times the MPI's copy: memcpy. */
double hb_copy_time_ns(enum hb_copy_routine r, void *dst, const void *src,
                       size_t len, int iters);

/* Times both routines; 0, or -1 when the buffers cannot be had. */
int hb_copy_probe(struct hb_copy_probe *p);

/* The pieces when they take at most half memcpy's time (a margin timer
 * noise on a shared node does not cross), else memcpy. */
enum hb_copy_routine hb_copy_pick(const struct hb_copy_probe *p);

void hb_copy_use(enum hb_copy_routine r);
enum hb_copy_routine hb_copy_in_use(void);
const char *hb_copy_routine_name(enum hb_copy_routine r);

/* memcpy's contract: n bytes, the ranges do not overlap. */
void hb_copy(void *dst, const void *src, size_t n);

#endif
