/* The per-call bookkeeping: one intercepted call -> reuse table, call
 * site and class counters.  MPI-free, so unit tests and the lookup
 * benchmark drive it directly; shim/track_mpi.c turns MPI arguments
 * (datatypes, counts) into the byte extents used here. */
#ifndef HOTBUF_TRACKER_H
#define HOTBUF_TRACKER_H

#include "callsite.h"
#include "costmodel.h"
#include "ops.h"
#include "reuse_table.h"

struct hb_tracker {
    struct hb_table table;
    struct hb_sites sites;
    struct hb_class_stats cls[HB_OP_COUNT];
    struct hb_threshold_params tp;
    uint32_t thr[HB_SIZE_CLASSES];
    unsigned long long calls_when_stopped;  /* all calls when the table stopped */
};

/* A buffer as one call uses it: the span [addr, addr+span) (true extent for
 * derived datatypes) and the payload bytes. */
struct hb_use {
    const void *addr;
    uint64_t span;
    uint64_t bytes;
};

int hb_tracker_init(struct hb_tracker *t, const struct hb_table_params *tp, int site_depth,
                    uint32_t max_sites, const struct hb_threshold_params *thp,
                    const struct hb_costmodel *cm);
void hb_tracker_destroy(struct hb_tracker *t);

/* The per-call functions below are inline: they are the hot path of every
 * intercepted call (no allocation except a pool chunk every 4096 new
 * buffers, no system call, one hash lookup and one site lookup). */

/* Id of the call site whose innermost frame is site_ret (the wrapper's
 * return address; NULL or sites off: HB_SITE_OTHER).  Must be called from
 * the wrapper's own call stack when sites are deeper than one frame. */
static inline uint16_t hb_tracker_site(struct hb_tracker *t, unsigned op, void *site_ret)
{
    if (!site_ret || t->sites.depth <= 0)
        return HB_SITE_OTHER;
    return hb_sites_lookup(&t->sites, site_ret, op);
}

/* Slow path of a lookup miss: insert, noting when the table stops. */
struct hb_entry *hb_tracker_insert(struct hb_tracker *t, uintptr_t key, uint32_t chain);

/* Records one call made at site.  Returns the entry when the buffer is
 * tracked, so a later router can look at e->hot. */
static inline __attribute__((always_inline)) struct hb_entry *
hb_tracker_record(struct hb_tracker *t, unsigned op,
                                                 const struct hb_use *u, uint16_t site_id)
{
    struct hb_class_stats *cs = &t->cls[op];
    struct hb_site *site = &t->sites.site[site_id];
    uintptr_t key = hb_table_key(u->addr, op);
    uint32_t chain = 0;
    struct hb_entry *e = hb_table_find(&t->table, key, &chain);

    cs->calls++;
    cs->bytes += u->bytes;
    site->calls++;
    site->bytes += u->bytes;
    if (e) {
        cs->reuse_calls++;
        site->reuse_calls++;
    } else if ((e = hb_tracker_insert(t, key, chain))) {
        e->op = (uint8_t)op;
        e->site = site_id;
    } else {
        cs->untracked_calls++;
        site->untracked_calls++;
        return NULL;
    }
    e->uses++;
    e->bytes += u->bytes;
    e->size = u->span > UINT32_MAX ? UINT32_MAX : (uint32_t)u->span;
    if (!e->hot && e->uses >= hb_threshold_for(t->thr, &t->tp, u->span))
        hb_table_mark_hot(&t->table, e);
    if (e->hot) {
        e->hot_uses++;
        cs->hot_calls++;
        site->hot_calls++;
    }
    return e;
}

/* A call that moves nothing (zero bytes or MPI_PROC_NULL peer). */
static inline void hb_tracker_record_empty(struct hb_tracker *t, unsigned op, int proc_null,
                                           uint16_t site_id)
{
    t->cls[op].calls++;
    t->sites.site[site_id].calls++;
    t->sites.site[site_id].empty_calls++;
    if (proc_null)
        t->cls[op].proc_null_calls++;
    else
        t->cls[op].zero_calls++;
}

/* A call at site that hotbuf moved itself (RMA, Allgather) instead of MPI. */
static inline void hb_tracker_count_rerouted(struct hb_tracker *t, unsigned op, uint16_t site_id)
{
    t->cls[op].rerouted_calls++;
    t->sites.site[site_id].rerouted_calls++;
}

/* Total calls over all classes. */
unsigned long long hb_tracker_calls(const struct hb_tracker *t);

#endif
