/* Per-call bookkeeping (see tracker.h): set-up and the slow paths; the
 * per-call functions are inline in the header. */
#include "tracker.h"

#include <string.h>

int hb_tracker_init(struct hb_tracker *t, const struct hb_table_params *tp,
                    int site_depth, uint32_t max_sites,
                    const struct hb_threshold_params *thp,
                    const struct hb_costmodel *cm)
{
    memset(t, 0, sizeof(*t));
    if (hb_table_init(&t->table, tp))
        return -1;
    if (hb_sites_init(&t->sites, site_depth, max_sites)) {
        hb_table_destroy(&t->table);
        return -1;
    }
    t->tp = *thp;
    t->cm = *cm;
    t->none.key = UINTPTR_MAX;
    t->none.p_ret = HB_NO_RET;
    t->last = &t->none;
    hb_cost_thresholds(cm, thp, t->thr);
    return 0;
}

void hb_tracker_destroy(struct hb_tracker *t)
{
    hb_table_destroy(&t->table);
    hb_sites_destroy(&t->sites);
}

unsigned long long hb_tracker_calls(const struct hb_tracker *t)
{
    unsigned long long n = 0;
    for (unsigned op = 0; op < HB_OP_COUNT; op++)
        n += t->cls[op].calls;
    return n;
}

struct hb_entry *hb_tracker_insert(struct hb_tracker *t, uintptr_t key,
                                   uint32_t chain)
{
    int was_growing = !t->table.stopped;
    struct hb_entry *e = hb_table_insert(&t->table, key, chain);
    if (!e && was_growing) {
        hb_tracker_fold(t); /* the calls still pending came before the stop */
        /* the current call is already counted: not before the stop */
        t->calls_when_stopped = hb_tracker_calls(t) - 1;
    }
    return e;
}

/* Calls numbered first..end (1-based uses) that reach thr: the hot ones. */
static uint64_t hot_between(uint64_t first, uint64_t end, uint64_t thr)
{
    uint64_t from = first > thr ? first : thr;
    return end >= from ? end - from + 1 : 0;
}

/* hb_tracker_foreign for each pending call made at a site other than the
 * buffer's first: the most uses seen there is the last call's, and each
 * hot call's copy moves from the first site to p_site, one addition per
 * call as hb_tracker_foreign makes it. */
static void fold_foreign(struct hb_tracker *t, const struct hb_entry *e,
                         uint64_t hot)
{
    struct hb_site *s = &t->sites.site[e->p_site];
    struct hb_site *first = &t->sites.site[e->site];
    if (e->uses > s->max_uses)
        s->max_uses = e->uses;
    double copy = hot ? hb_cost_copy_ns(&t->cm, e->size) : 0;
    for (uint64_t i = 0; i < hot; i++) {
        s->saving_ns += copy;
        first->saving_ns -= copy;
    }
}

/* The pending calls are uses p_start+1 .. uses, all at `size` with the
 * current threshold (a size change is recorded by hb_tracker_record, which
 * folds first), each on a buffer already known (hb_tracker_record counted
 * the first use), from site p_site. */
void hb_tracker_fold_entry(struct hb_tracker *t, struct hb_entry *e)
{
    uint64_t calls = e->uses - e->p_start;
    uint64_t hot = hot_between((uint64_t)e->p_start + 1, e->uses, e->thr);
    uint64_t reuse = calls - (e->p_start == 0);
    struct hb_class_stats *cs = &t->cls[e->op];
    struct hb_site *site = &t->sites.site[e->p_site];
    cs->calls += calls;
    cs->bytes += calls * e->size;
    cs->reuse_calls += reuse;
    cs->hot_calls += hot;
    site->calls += calls;
    site->bytes += calls * e->size;
    site->reuse_calls += reuse;
    site->hot_calls += hot;
    if (e->p_site != e->site)
        fold_foreign(t, e, hot);
    e->p_start = e->uses;
}

static void fold_one(void *obj, void *ctx)
{
    struct hb_entry *e = obj;
    if (e->p_start != e->uses)
        hb_tracker_fold_entry(ctx, e);
}

void hb_tracker_fold(struct hb_tracker *t)
{
    hb_pool_foreach(&t->table.pool, fold_one, t);
}

struct hb_entry *hb_tracker_record_at_slow(struct hb_tracker *t, unsigned op,
                                           const void *addr, uint64_t bytes,
                                           void *ret)
{
    uint16_t site = hb_tracker_site(t, op, ret);
    struct hb_use u = {addr, bytes, bytes};
    struct hb_entry *e = hb_tracker_record(t, op, &u, site);
    /* Arm only where ret alone gives the site: depth 1 (ret -> site, fixed
     * once looked up) or 0 (every call is <other>).  A size that does not
     * fit the entry's size never matches, so stays on this path. */
    if (e && t->sites.depth <= 1) {
        e->p_ret = (uintptr_t)ret;
        e->p_site = site;
    }
    return e;
}

/* Calls of e's current run when its uses stand at `end`, and how many of
 * them were hot: those whose use number (1-based) reached the threshold. */
static void run_counts(const struct hb_entry *e, uint64_t end, uint64_t *calls,
                       uint64_t *hot)
{
    uint64_t first = (uint64_t)e->run_start + 1, thr = e->thr;
    *calls = end - e->run_start;
    *hot = end >= thr && *calls ? end - (first > thr ? first : thr) + 1 : 0;
}

static void price_run(const struct hb_tracker *t, const struct hb_entry *e,
                      uint64_t end, struct hb_run *r)
{
    r->size = e->size;
    run_counts(e, end, &r->calls, &r->hot);
    r->copy_ns = r->hot ? (double)r->hot * hb_cost_copy_ns(&t->cm, e->size) : 0;
}

void hb_tracker_open_run(const struct hb_tracker *t, const struct hb_entry *e,
                         struct hb_run *r)
{
    price_run(t, e, e->uses, r);
}

/* Saving goes to the class and to the site that first used the buffer
 * (the report lists buffers there); hb_tracker_foreign moves the share of
 * calls made elsewhere to their sites. */
static void add_saving(struct hb_tracker *t, const struct hb_entry *e,
                       double ns)
{
    t->saving_ns[e->op] += ns;
    t->sites.site[e->site].saving_ns += ns;
}

/* The run's saving is priced when it closes (or by the report) and added
 * to the buffer's first site, every hot call of the run at the run's size;
 * this call's share moves to its own site now.  The class total is the
 * same either way. */
void hb_tracker_foreign(struct hb_tracker *t, const struct hb_entry *e,
                        uint16_t site_id)
{
    struct hb_site *s = &t->sites.site[site_id];
    if (e->uses > s->max_uses)
        s->max_uses = e->uses;
    if (e->uses < e->thr)
        return;
    double copy = hb_cost_copy_ns(&t->cm, e->size);
    s->saving_ns += copy;
    t->sites.site[e->site].saving_ns -= copy;
}

/* The run ended with the call before this one (e->uses counts this one). */
static void close_run(struct hb_tracker *t, struct hb_entry *e)
{
    struct hb_run r;
    price_run(t, e, e->uses - 1, &r);
    if (!r.calls)
        return;
    hb_size_hist_add(&t->sizes[e->op], r.size, r.calls);
    e->hot_uses += (uint32_t)r.hot;
    if (r.hot)
        add_saving(t, e, r.copy_ns);
}

void hb_tracker_resize(struct hb_tracker *t, struct hb_entry *e, uint64_t span)
{
    close_run(t, e);
    e->size = span > UINT32_MAX ? UINT32_MAX : (uint32_t)span;
    e->run_start = e->uses - 1;
    e->thr = hb_threshold_for(t->thr, &t->tp, span);
    if (e->size > e->max_size)
        e->max_size = e->size;
    if (e->uses >
        e->thr) /* hot from its first call; == is left to the caller */
        hb_tracker_hot_run(t, e);
}

/* R is charged whenever the registered extent must grow: at the buffer's
 * first hot call, and at a hot call larger than any hot call before (a
 * registration of the smaller extent does not cover it).  Smaller hot
 * calls reuse the registration.  Called once per run, so idempotent. */
void hb_tracker_hot_run(struct hb_tracker *t, struct hb_entry *e)
{
    if (!e->hot)
        hb_table_mark_hot(&t->table, e);
    if (e->size <= e->reg_size)
        return;
    e->reg_size = e->size;
    add_saving(t, e, -hb_cost_reg_ns(&t->cm, e->size));
}

uint32_t hb_tracker_hot_uses(const struct hb_tracker *t,
                             const struct hb_entry *e)
{
    struct hb_run r;
    hb_tracker_open_run(t, e, &r);
    return e->hot_uses + (uint32_t)r.hot;
}
