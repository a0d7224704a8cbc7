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
    /* The entry hb_tracker_record_fast counted last (never NULL: `none`,
     * whose p_ret matches no caller, until then).  Entries are never freed
     * while the tracker lives. */
    struct hb_entry *last;
    struct hb_entry none;
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

/* Pending runs.  The wrapper's common call (a predefined datatype, one
 * thread) goes through hb_tracker_record_at, which counts a call on a
 * known buffer from the same caller at the same size as before by
 * incrementing the entry's uses and nothing else: the class and site
 * counters of those calls are added later, all at once ("folded"), when
 * the entry is next recorded any other way and at exit (hb_tracker_fold).
 * Every other call is counted at once (hb_tracker_record), so the counters
 * are exact between folds except for the calls still pending.  A call is
 * pending only when the entry is armed for its caller: the slow path arms
 * it after looking the caller's site up, and only when the return address
 * alone decides the site (HOTBUF_CALLSITE_DEPTH <= 1; deeper sites need the
 * stack, so there every call takes the slow path). */
#define HB_NO_RET UINTPTR_MAX

/* Adds e's pending calls to the class and site counters. */
void hb_tracker_fold_entry(struct hb_tracker *t, struct hb_entry *e);

/* Folds every entry: before reading the counters (report, table stop). */
void hb_tracker_fold(struct hb_tracker *t);

/* Records one call made at site, counting it at once.  Returns the entry
 * when the buffer is tracked, so a router can ask hb_tracker_call_hot(e)
 * about this call.
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
        /* Its pending calls came before this one: counted first, at the
         * size and threshold they had. */
        if (__builtin_expect(e->p_start != e->uses, 0))
            hb_tracker_fold_entry(t, e);
    } else if ((e = hb_tracker_insert(t, key, chain))) {
        e->op = (uint8_t)op;
        e->site = site_id;
        e->p_ret = HB_NO_RET;
    } else {
        cs->untracked_calls++;
        site->untracked_calls++;
        return NULL;
    }
    e->uses++;
    e->p_start = e->uses; /* counted: nothing pending */
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

/* The part of hb_tracker_record_at that makes no call: counts the call
 * (uses + 1) and returns 1 when it joins e's pending run and is not the one
 * that reaches the threshold; else returns 0 having done nothing. */
static inline __attribute__((always_inline)) int
hb_tracker_record_fast(struct hb_tracker *t, unsigned op, const void *addr,
                       uint64_t bytes, void *ret)
{
    uintptr_t key = hb_table_key(addr, op);
    /* The last buffer first: a loop over one buffer skips the hash and
     * the bucket load, which sit on a latency-bound ping-pong's path. */
    struct hb_entry *e = t->last;
    if (e->key != key) {
        e = t->table.buckets[hb_table_bucket(&t->table, key)];
        if (!e || e->key != key)
            return 0;
    }
    if (e->p_ret == (uintptr_t)ret && e->size == bytes &&
        e->uses + 1 != e->thr) {
        e->uses++;
        t->last = e;
        return 1;
    }
    return 0;
}

/* Slow path of hb_tracker_record_at: looks the site up, counts the call at
 * once and arms the entry for further calls from ret. */
struct hb_entry *hb_tracker_record_at_slow(struct hb_tracker *t, unsigned op,
                                           const void *addr, uint64_t bytes,
                                           void *ret);

/* Records one call of `bytes` contiguous bytes at addr (span = bytes) made
 * from return address ret (the site is looked up from it as by
 * hb_tracker_site).  Counts as hb_tracker_record does once folded; a call
 * on a buffer whose chain starts with it, from the caller and at the size
 * of its pending run, costs one hash, three compares and an increment. */
static inline __attribute__((always_inline)) struct hb_entry *
hb_tracker_record_at(struct hb_tracker *t, unsigned op, const void *addr,
                     uint64_t bytes, void *ret)
{
    uintptr_t key = hb_table_key(addr, op);
    struct hb_entry *e = t->table.buckets[hb_table_bucket(&t->table, key)];
    if (__builtin_expect(e && e->key == key && e->p_ret == (uintptr_t)ret &&
                             e->size == bytes,
                         1)) {
        if (__builtin_expect(++e->uses == e->thr, 0))
            hb_tracker_hot_run(t, e);
        return e;
    }
    return hb_tracker_record_at_slow(t, op, addr, bytes, ret);
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

#define HB_SITE_NONE 0xffff /* no site known (not a valid site id) */

/* The site of the call e was just recorded for, when the entry knows it
 * (armed: HOTBUF_CALLSITE_DEPTH <= 1), else HB_SITE_NONE. */
static inline uint16_t hb_tracker_call_site(const struct hb_entry *e)
{
    return e && e->p_ret != HB_NO_RET ? e->p_site : HB_SITE_NONE;
}

/* A call at site that hotbuf moved itself (RMA, Allgather, point-to-point)
 * instead of MPI. */
static inline void hb_tracker_count_rerouted(struct hb_tracker *t, unsigned op,
                                             uint16_t site_id)
{
    t->cls[op].rerouted_calls++;
    t->sites.site[site_id].rerouted_calls++;
}

/* Total calls over all classes. */
unsigned long long hb_tracker_calls(const struct hb_tracker *t);

#endif
