/* Per-call bookkeeping (see tracker.h).  This is the hot path of every
 * intercepted call: no allocation except a pool chunk every 4096 new
 * buffers, no system call, one hash lookup and one site lookup. */
#include "tracker.h"

#include <string.h>

int hb_tracker_init(struct hb_tracker *t, const struct hb_table_params *tp, int site_depth,
                    uint32_t max_sites, const struct hb_threshold_params *thp,
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

static struct hb_site *site_of(struct hb_tracker *t, unsigned op, void *ret, uint16_t *id)
{
    *id = HB_SITE_OTHER;
    if (ret && t->sites.depth > 0)
        *id = hb_sites_lookup(&t->sites, ret, op);
    return &t->sites.site[*id];
}

static struct hb_entry *find_or_insert(struct hb_tracker *t, uintptr_t key, int *seen)
{
    uint32_t chain = 0;
    struct hb_entry *e = hb_table_find(&t->table, key, &chain);
    *seen = e != NULL;
    if (e)
        return e;
    int was_growing = !t->table.stopped;
    e = hb_table_insert(&t->table, key, chain);
    if (!e && was_growing)
        t->calls_when_stopped = hb_tracker_calls(t);
    return e;
}

struct hb_entry *hb_tracker_record(struct hb_tracker *t, unsigned op, const struct hb_use *u,
                                   void *site_ret)
{
    struct hb_class_stats *cs = &t->cls[op];
    uint16_t site_id;
    struct hb_site *site = site_of(t, op, site_ret, &site_id);
    int seen;
    struct hb_entry *e = find_or_insert(t, hb_table_key(u->addr, op), &seen);

    cs->calls++;
    cs->bytes += u->bytes;
    site->calls++;
    site->bytes += u->bytes;
    if (!e) {
        cs->untracked_calls++;
        site->untracked_calls++;
        return NULL;
    }
    if (seen) {
        cs->reuse_calls++;
        site->reuse_calls++;
    } else {
        e->op = (uint8_t)op;
        e->site = site_id;
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

void hb_tracker_record_empty(struct hb_tracker *t, unsigned op, int proc_null, void *site_ret)
{
    uint16_t site_id;
    struct hb_site *site = site_of(t, op, site_ret, &site_id);
    t->cls[op].calls++;
    site->calls++;
    if (proc_null)
        t->cls[op].proc_null_calls++;
    else
        t->cls[op].zero_calls++;
}
