/* Per-call bookkeeping (see tracker.h): set-up and the slow paths; the
 * per-call functions are inline in the header. */
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

struct hb_entry *hb_tracker_insert(struct hb_tracker *t, uintptr_t key, uint32_t chain)
{
    int was_growing = !t->table.stopped;
    struct hb_entry *e = hb_table_insert(&t->table, key, chain);
    if (!e && was_growing) /* the current call is already counted: not before the stop */
        t->calls_when_stopped = hb_tracker_calls(t) - 1;
    return e;
}
