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
#include "sizehist.h"

struct hb_tracker {
    struct hb_table table;
    struct hb_sites sites;
    struct hb_class_stats cls[HB_OP_COUNT];
    struct hb_threshold_params tp;
    uint32_t thr[HB_SIZE_CLASSES];
    unsigned long long
        calls_when_stopped; /* all calls when the table stopped */
    /* Filled when a buffer's run of same-size calls closes (slow path):
     * calls per size, and the saving of the hot calls (each at its own
     * size) minus the registrations.  Open runs are added by the report. */
    struct hb_size_hist sizes[HB_OP_COUNT];
    double saving_ns[HB_OP_COUNT];
    struct hb_costmodel cm; /* prices runs and registrations */
};

/* A buffer as one call uses it: the span [addr, addr+span) (true extent for
 * derived datatypes) and the payload bytes. */
struct hb_use {
    const void *addr;
    uint64_t span;
    uint64_t bytes;
};

int hb_tracker_init(struct hb_tracker *t, const struct hb_table_params *tp,
                    int site_depth, uint32_t max_sites,
                    const struct hb_threshold_params *thp,
                    const struct hb_costmodel *cm);
void hb_tracker_destroy(struct hb_tracker *t);

/* The per-call functions below are inline: they are the hot path of every
 * intercepted call (no allocation except a pool chunk every 4096 new
 * buffers, no system call, one hash lookup and one site lookup). */

/* Id of the call site whose innermost frame is site_ret (the wrapper's
 * return address; NULL or sites off: HB_SITE_OTHER).  Must be called from
 * the wrapper's own call stack when sites are deeper than one frame. */
static inline uint16_t hb_tracker_site(struct hb_tracker *t, unsigned op,
                                       void *site_ret)
{
    if (!site_ret || t->sites.depth <= 0)
        return HB_SITE_OTHER;
    return hb_sites_lookup(&t->sites, site_ret, op);
}

/* Slow path of a lookup miss: insert, noting when the table stops. */
struct hb_entry *hb_tracker_insert(struct hb_tracker *t, uintptr_t key,
                                   uint32_t chain);

/* Slow paths of hb_tracker_record, out of line: a call whose size differs
 * from its buffer's current run (closes the run, prices it), and the first
 * hot call of a run (marks the buffer hot, charges a registration). */
void hb_tracker_resize(struct hb_tracker *t, struct hb_entry *e, uint64_t span);
void hb_tracker_hot_run(struct hb_tracker *t, struct hb_entry *e);
/* A call at a site other than the one that first used e's buffer: the
 * figures of this call (its reuse count, its saving when hot) go to the
 * calling site, not only to the buffer's first site. */
void hb_tracker_foreign(struct hb_tracker *t, const struct hb_entry *e,
                        uint16_t site_id);

/* Records one call made at site.  Returns the entry when the buffer is
 * tracked, so a router can ask hb_tracker_call_hot(e) about this call.
 *
 * Every call counts at its own size, and whether it is hot depends on its
 * own size: a call is hot when its size is in [min_size,
 * eager_limit] and the buffer's uses, this one included, reach the
 * threshold for that size.  Per call that costs one compare of the size
 * with the buffer's current run and one of the uses with the threshold
 * cached for that run; counting sizes and pricing the saving happen when
 * a run ends (hb_tracker_resize), which for the usual loop over one size
 * is never, and for a size sweep once per size. */
static inline __attribute__((always_inline)) struct hb_entry *
hb_tracker_record(struct hb_tracker *t, unsigned op, const struct hb_use *u,
                  uint16_t site_id)
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
    /* A new entry has size 0 and every call spans a byte at least, so its
     * first call opens a run here; spans past 4 GiB never match (saturated
     * size) and take the slow path every time, still counted exactly. */
    if (__builtin_expect(u->span != e->size, 0))
        hb_tracker_resize(t, e, u->span);
    if (e->uses >= e->thr) {
        cs->hot_calls++;
        site->hot_calls++;
        if (__builtin_expect(e->uses == e->thr, 0))
            hb_tracker_hot_run(t, e);
    }
    if (__builtin_expect(site_id != e->site, 0))
        hb_tracker_foreign(t, e, site_id);
    return e;
}

/* Whether the call just recorded on e (hb_tracker_record's result, NULL:
 * untracked) is hot.  Routers move exactly these calls, so what is
 * rerouted, what the report counts as hot and what the saving prices are
 * the same calls.  Nothing above HOTBUF_EAGER_LIMIT is hot: above it MPI
 * sends by rendezvous, already zero-copy from the user buffer, so there is
 * no copy to save and the cost model has no gain to weigh R against; a job
 * that wants larger messages rerouted raises the limit, and the report and
 * the saving follow. */
static inline int hb_tracker_call_hot(const struct hb_entry *e)
{
    return e && e->uses >= e->thr;
}

/* The current (open) run of e: its calls, the hot ones among them and
 * what their copies are worth (ns).  Pure: the report reads it at exit. */
struct hb_run {
    uint64_t size, calls, hot;
    double copy_ns;
};
void hb_tracker_open_run(const struct hb_tracker *t, const struct hb_entry *e,
                         struct hb_run *r);

/* All hot calls on e, the open run's included. */
uint32_t hb_tracker_hot_uses(const struct hb_tracker *t,
                             const struct hb_entry *e);

/* A call that moves nothing (zero bytes or MPI_PROC_NULL peer). */
static inline void hb_tracker_record_empty(struct hb_tracker *t, unsigned op,
                                           int proc_null, uint16_t site_id)
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
static inline void hb_tracker_count_rerouted(struct hb_tracker *t, unsigned op,
                                             uint16_t site_id)
{
    t->cls[op].rerouted_calls++;
    t->sites.site[site_id].rerouted_calls++;
}

/* Total calls over all classes. */
unsigned long long hb_tracker_calls(const struct hb_tracker *t);

#endif
