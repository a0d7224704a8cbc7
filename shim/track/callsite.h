/* Call sites: where in the application an MPI call was made.
 *
 * The hot path records raw return addresses only.  At depth 1 (default)
 * the site is the wrapper's own return address, which costs nothing; deeper
 * sites walk the stack with libunwind's unw_backtrace.  A site gets a
 * dense id (1..max; 0 is "<other>" once the table is full) through an
 * open-addressing index, so a lookup is one multiply and a compare or two.
 * Symbolization (function, file:line) happens only at exit, in symbolize.c.
 */
#ifndef HOTBUF_CALLSITE_H
#define HOTBUF_CALLSITE_H

#include <stdint.h>

#include "ops.h"

#include "util/hash.h"

#define HB_MAX_DEPTH 8
#define HB_SITE_OTHER 0

struct hb_site {
    uint64_t key; /* hash of the frames */
    uintptr_t
        frames[HB_MAX_DEPTH]; /* frames[0] = the MPI call's return address */
    uint8_t depth;
    uint8_t op;                        /* operation class of its first call */
    uint8_t persistent;                /* a persistent request's init call */
    HB_CALL_COUNTERS(HB_COUNTER_FIELD) /* track/ops.h */
    uint64_t empty_calls;              /* zero-byte or MPI_PROC_NULL */
    /* The saving of the hot calls made here and the registrations of the
     * buffers first used here (tracker.h), closed runs only. */
    double saving_ns;
    /* The most uses a buffer first used at another site had at a call
     * made here (hb_tracker_foreign). */
    uint64_t max_uses;
};

/* One slot of the open-addressing index; the key is repeated here so a hit
 * touches one cache line. */
struct hb_site_slot {
    uint64_t key; /* 0 = empty */
    uint32_t id;
};

struct hb_sites {
    struct hb_site *site; /* dense, [0] = <other> */
    struct hb_site_slot *index;
    uint32_t mask;
    uint32_t count; /* ids in use, including <other> */
    uint32_t max;   /* capacity of site[] */
    int depth;      /* frames per site; 0 = sites off */
};

int hb_sites_init(struct hb_sites *s, int depth, uint32_t max_sites);
void hb_sites_destroy(struct hb_sites *s);

/* Id of the site whose innermost frame is ret (the MPI wrapper's return
 * address), creating it if there is room.  op is recorded on creation. */
uint16_t hb_sites_lookup_slow(struct hb_sites *s, void *ret, unsigned op);

static inline uint32_t hb_sites_slot(const struct hb_sites *s, uint64_t key)
{
    return (uint32_t)hb_hash_golden(key, 24) & s->mask;
}

/* At depth 1 a known site is one multiply and one compare away. */
static inline uint16_t hb_sites_lookup(struct hb_sites *s, void *ret,
                                       unsigned op)
{
    if (s->depth <= 1) {
        const struct hb_site_slot *slot =
            &s->index[hb_sites_slot(s, (uint64_t)(uintptr_t)ret)];
        if (slot->key == (uint64_t)(uintptr_t)ret)
            return (uint16_t)slot->id;
    }
    return hb_sites_lookup_slow(s, ret, op);
}

#endif
