/* Calls per exact message size, one table per operation class.
 *
 * Why this shape: the report needs each call counted at its own size (the
 * paper's Table 1 column is the most frequent size), exactly for the sizes
 * a job really uses, in memory that does not grow with the job.  A fixed
 * open-addressing table holds the first HB_SIZES_EXACT distinct sizes with
 * exact counts (8 KiB per class); calls at sizes first seen after that are
 * only counted in other_calls, so the report's sizes stay exact and it says
 * how many calls it could not itemize.  Applications use few distinct sizes
 * (NetPIPE's sweep: 82; an allgather sweep 4 B..512 KiB: 18), so the table
 * rarely fills.  The tracker feeds it once per run of same-size calls on a
 * buffer (see tracker.h), never per call, so its cost is off the hot path.
 */
#ifndef HOTBUF_SIZEHIST_H
#define HOTBUF_SIZEHIST_H

#include <stdint.h>

#define HB_SIZES_EXACT 256                 /* distinct sizes counted exactly */
#define HB_SIZE_SLOTS (2 * HB_SIZES_EXACT) /* half full at most: short probes */

struct hb_size_count {
    uint64_t size;
    uint64_t calls; /* 0: empty slot */
};

struct hb_size_hist {
    struct hb_size_count slot[HB_SIZE_SLOTS];
    uint32_t distinct;    /* sizes in slot[] */
    uint64_t other_calls; /* calls at sizes past the first HB_SIZES_EXACT */
};

/* Counts calls (> 0) at size. */
void hb_size_hist_add(struct hb_size_hist *h, uint64_t size, uint64_t calls);

/* The n most frequent sizes, by calls descending then size ascending (so
 * equal counts always list the same way); unused places get calls 0. */
void hb_size_hist_top(const struct hb_size_hist *h, uint64_t *size,
                      uint64_t *calls, int n);

#endif
