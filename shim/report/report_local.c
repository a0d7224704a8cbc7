/* This rank's part of the report (see report_local.h).  Runs once, at
 * MPI_Finalize, so it may allocate and walk the whole table. */
#define _GNU_SOURCE /* qsort_r */
#include "report_local.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "track/symbolize.h"

struct walk {
    const struct hb_tracker *t;
    struct hb_rank_summary *rs;
    struct hb_site_summary *site_agg; /* indexed by site id */
    size_t max_buffers;
    int rank;
    struct hb_size_hist *sizes; /* [HB_OP_COUNT]: closed runs + open ones */
};

void hb_top_buffers_insert(struct hb_site_buffer *top, uint32_t *n, size_t cap,
                           const struct hb_site_buffer *b)
{
    size_t i = *n;
    if (i == cap && (cap == 0 || top[cap - 1].uses >= b->uses))
        return;
    if (i == cap)
        i--;
    else
        (*n)++;
    while (i > 0 && top[i - 1].uses < b->uses) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = *b;
}

/* Each buffer's open run (the calls since its size last changed) is added
 * here to what the tracker counted when runs closed, so every call is
 * counted at its own size and priced as the tracker prices closed runs. */
static void visit_entry(const struct hb_entry *e, void *arg)
{
    struct walk *w = arg;
    struct hb_class_summary *c = &w->rs->cls[e->op];
    struct hb_site_summary *s = &w->site_agg[e->site];
    struct hb_run run;
    hb_tracker_open_run(w->t, e, &run);
    hb_size_hist_add(&w->sizes[e->op], run.size, run.calls);

    c->buffers++;
    c->hot_buffers += e->hot;
    c->uses_hist[hb_uses_bucket(e->uses)]++;
    c->saving_ns += run.copy_ns;
    if (e->uses > c->max_reuse)
        c->max_reuse = e->uses;
    s->buffers++;
    s->hot_buffers += e->hot;
    s->saving_ns += run.copy_ns;
    if (e->uses > s->max_reuse)
        s->max_reuse = e->uses;
    struct hb_site_buffer b = {
        .addr = e->key & ((1ull << 56) - 1),
        .size = e->max_size,
        .uses = e->uses,
        .hot_uses = e->hot_uses + run.hot,
        .rank = w->rank,
        .hot = e->hot,
    };
    hb_top_buffers_insert(s->top, &s->ntop, w->max_buffers, &b);
}

/* Most frequent sizes per class, each call at its own size. */
static void top_sizes(struct walk *w)
{
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        struct hb_class_summary *c = &w->rs->cls[op];
        hb_size_hist_top(&w->sizes[op], c->top_size, c->top_size_calls,
                         HB_TOP_SIZES);
        c->distinct_sizes = w->sizes[op].distinct;
        c->other_size_calls = w->sizes[op].other_calls;
    }
}

static void copy_counters(const struct hb_tracker *t,
                          const struct hb_costmodel *cm,
                          struct hb_rank_summary *rs)
{
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        const struct hb_class_stats *s = &t->cls[op], *from = s;
        struct hb_class_summary *c = &rs->cls[op], *to = c;
        HB_CALL_COUNTERS(HB_COUNTER_COPY)
        c->zero_calls = s->zero_calls;
        c->proc_null_calls = s->proc_null_calls;
        c->lookup_ns = (double)(s->calls - s->zero_calls - s->proc_null_calls) *
                       cm->lookup_ns;
        c->saving_ns =
            t->saving_ns[op]; /* closed runs; visit_entry adds open ones */
    }
    rs->table_entries = t->table.entries;
    rs->table_hot = t->table.hot_entries;
    rs->table_memory = hb_table_memory(&t->table);
    rs->max_chain = t->table.max_chain;
    rs->stopped = t->table.stopped;
    rs->stopped_after_entries = t->table.stopped_after_entries;
    rs->stopped_after_calls = t->calls_when_stopped;
    rs->sites = t->sites.count - 1;
}

static int cmp_site_calls(const void *a, const void *b, void *arg)
{
    const struct hb_sites *sites = arg;
    uint64_t x = sites->site[*(const uint32_t *)a].calls;
    uint64_t y = sites->site[*(const uint32_t *)b].calls;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Moves the busiest max_sites sites, symbolized, to the front of agg
 * (indexed by site id on entry).  Returns how many. */
static size_t pick_sites(const struct hb_sites *sites,
                         struct hb_site_summary *agg, size_t max_sites)
{
    const uint32_t n = sites->count;
    uint32_t *ids = malloc(n * sizeof(*ids));
    struct hb_site_summary *picked =
        calloc(max_sites ? max_sites : 1, sizeof(*picked));
    if (!ids || !picked) {
        free(ids);
        free(picked);
        return 0;
    }
    for (uint32_t id = 0; id < n; id++)
        ids[id] = id;
    qsort_r(ids, n, sizeof(*ids), cmp_site_calls, (void *)sites);
    size_t keep = 0;
    struct hb_symbolizer *sym = hb_symbolizer_open();
    for (uint32_t i = 0; i < n && keep < max_sites && sites->site[ids[i]].calls;
         i++) {
        const struct hb_site *s = &sites->site[ids[i]];
        struct hb_site_summary *a = &picked[keep++];
        *a = agg[ids[i]];
        a->op = s->op;
        a->ranks = 1;
        const struct hb_site *from = s;
        struct hb_site_summary *to = a;
        HB_CALL_COUNTERS(HB_COUNTER_COPY)
        a->empty_calls = s->empty_calls;
        a->persistent = s->persistent && ids[i] != HB_SITE_OTHER;
        a->saving_ns += s->saving_ns; /* open runs were added by visit_entry */
        if (s->max_uses > a->max_reuse) /* buffers first used elsewhere */
            a->max_reuse = s->max_uses;
        if (ids[i] == HB_SITE_OTHER)
            snprintf(a->name, HB_NAME_LEN, "%s", HB_SITE_OTHER_NAME);
        else
            hb_symbolize_frames(sym, s->frames, s->depth, a->name, HB_NAME_LEN);
    }
    hb_symbolizer_close(sym);
    memcpy(agg, picked, keep * sizeof(*agg));
    free(picked);
    free(ids);
    return keep;
}

int hb_report_local(const struct hb_tracker *t, const struct hb_costmodel *cm,
                    int rank, size_t max_sites, size_t max_buffers,
                    struct hb_rank_summary *rs,
                    struct hb_site_summary **out_sites)
{
    memset(rs, 0, sizeof(*rs));
    *out_sites = NULL;
    copy_counters(t, cm, rs);
    struct walk w = {.t = t,
                     .rs = rs,
                     .rank = rank,
                     .max_buffers = max_buffers > HB_TOP_BUFFERS
                                        ? HB_TOP_BUFFERS
                                        : max_buffers};
    uint32_t nsites = t->sites.count ? t->sites.count : 1;
    w.site_agg = calloc(nsites, sizeof(*w.site_agg));
    w.sizes = malloc(sizeof(t->sizes));
    if (!w.site_agg || !w.sizes) {
        free(w.site_agg);
        free(w.sizes);
        return -1;
    }
    memcpy(w.sizes, t->sizes, sizeof(t->sizes));
    hb_table_foreach(&t->table, visit_entry, &w);
    top_sizes(&w);
    free(w.sizes);
    /* Site 0 collects the calls past HOTBUF_MAX_SITES, and every call when
     * sites are off: only the former is an overflow. */
    rs->site_overflow_calls =
        t->sites.depth > 0 ? t->sites.site[HB_SITE_OTHER].calls : 0;
    rs->nsites =
        t->sites.count ? pick_sites(&t->sites, w.site_agg, max_sites) : 0;
    *out_sites = w.site_agg;
    return 0;
}
