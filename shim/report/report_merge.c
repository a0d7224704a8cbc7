/* Step 3 of the report: merge every rank's records on rank 0.  A pure
 * function of its inputs, so tests/unit/test_report.c checks it with
 * synthetic ranks. */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_local.h"
#include "track/reuse_table.h"

double hb_reuse_pct(const struct hb_class_summary *c)
{
    uint64_t named = c->calls - c->zero_calls - c->proc_null_calls;
    return named ? 100.0 * (double)c->reuse_calls / (double)named : 0.0;
}

double hb_site_reuse_pct(const struct hb_site_summary *s)
{
    uint64_t named = s->calls - s->empty_calls;
    return named ? 100.0 * (double)s->reuse_calls / (double)named : 0.0;
}

static void add_counters(struct hb_class_summary *to, const struct hb_class_summary *c)
{
    to->calls += c->calls;
    to->bytes += c->bytes;
    to->reuse_calls += c->reuse_calls;
    to->hot_calls += c->hot_calls;
    to->untracked_calls += c->untracked_calls;
    to->zero_calls += c->zero_calls;
    to->proc_null_calls += c->proc_null_calls;
    to->rerouted_calls += c->rerouted_calls;
    to->buffers += c->buffers;
    to->hot_buffers += c->hot_buffers;
    to->saving_ns += c->saving_ns;
    to->lookup_ns += c->lookup_ns;
    to->other_size_calls += c->other_size_calls;
    if (c->distinct_sizes > to->distinct_sizes)
        to->distinct_sizes = c->distinct_sizes;
    if (c->max_reuse > to->max_reuse)
        to->max_reuse = c->max_reuse;
}

/* Adds (size, calls) to a top list kept sorted by calls, then size (as
 * each rank's list is, so equal counts always list the same way); sizes
 * already in the list accumulate. */
static void add_top_size(uint64_t *size, uint64_t *calls, int cap, uint64_t s, uint64_t n)
{
    int i = 0;
    while (i < cap && calls[i] && size[i] != s)
        i++;
    if (i == cap) { /* not present and full: replace the last if larger */
        if (n <= calls[cap - 1])
            return;
        i = cap - 1;
        calls[i] = 0;
    }
    size[i] = s;
    calls[i] += n;
    for (; i > 0 && (calls[i] > calls[i - 1] ||
                     (calls[i] == calls[i - 1] && size[i] < size[i - 1])); i--) {
        uint64_t ts = size[i], tc = calls[i];
        size[i] = size[i - 1], calls[i] = calls[i - 1];
        size[i - 1] = ts, calls[i - 1] = tc;
    }
}

static void range_add(uint64_t v, uint32_t n_before, uint64_t *min, uint64_t *max, double *avg)
{
    if (n_before == 0 || v < *min)
        *min = v;
    if (n_before == 0 || v > *max)
        *max = v;
    *avg += (double)v; /* divided by the count at the end */
}

/* The top-size lists of ranks only hold HB_TOP_SIZES entries, so the merged
 * list is exact for the sizes every rank reports and a lower bound for the
 * others; with few distinct sizes per class (the usual case) it is exact. */
static void merge_class(struct hb_class_report *cr, const struct hb_class_summary *c)
{
    if (!c->calls)
        return;
    add_counters(&cr->sum, c);
    uint32_t n = cr->ranks++;
    range_add(c->max_reuse, n, &cr->max_reuse_min, &cr->max_reuse_max, &cr->max_reuse_avg);
    for (int k = 0; k < HB_TOP_SIZES && c->top_size_calls[k]; k++)
        add_top_size(cr->sum.top_size, cr->sum.top_size_calls, HB_TOP_SIZES, c->top_size[k],
                     c->top_size_calls[k]);
}

/* Sections without their own merge: structs of counters, summed. */
static void sum_counts(uint64_t *to, const uint64_t *from, size_t bytes)
{
    for (size_t i = 0; i < bytes / sizeof(uint64_t); i++)
        to[i] += from[i];
}

static void merge_table(struct hb_report *r, const struct hb_rank_summary *rs)
{
    r->entries_total += rs->table_entries;
    r->hot_entries_total += rs->table_hot;
    if (rs->table_entries > r->entries_max)
        r->entries_max = rs->table_entries;
    if (rs->table_memory > r->memory_max)
        r->memory_max = rs->table_memory;
    if (rs->max_chain > r->max_chain)
        r->max_chain = rs->max_chain;
    r->sites_total += rs->sites;
    r->site_overflow_calls += rs->site_overflow_calls;
    if (!rs->stopped)
        return;
    int why = rs->stopped == HB_STOP_ADAPTED ? 0 : 1;
    uint32_t *count = why == 0 ? &r->ranks_adapted : &r->ranks_full;
    if (*count == 0 || rs->stopped_after_calls < r->stopped_after_calls_min[why])
        r->stopped_after_calls_min[why] = rs->stopped_after_calls;
    if (*count == 0 || rs->stopped_after_entries < r->stopped_after_entries_min[why])
        r->stopped_after_entries_min[why] = rs->stopped_after_entries;
    (*count)++;
}

static int cmp_site_key(const void *a, const void *b)
{
    const struct hb_site_summary *x = a, *y = b;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_site_calls(const void *a, const void *b)
{
    const struct hb_site_summary *x = a, *y = b;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    return cmp_site_key(a, b);
}

static void fold_site(struct hb_site_summary *to, const struct hb_site_summary *s,
                      size_t max_buffers)
{
    to->ranks += s->ranks;
    to->calls += s->calls;
    to->bytes += s->bytes;
    to->reuse_calls += s->reuse_calls;
    to->hot_calls += s->hot_calls;
    to->untracked_calls += s->untracked_calls;
    to->empty_calls += s->empty_calls;
    to->rerouted_calls += s->rerouted_calls;
    to->buffers += s->buffers;
    to->hot_buffers += s->hot_buffers;
    to->saving_ns += s->saving_ns;
    if (s->max_reuse > to->max_reuse)
        to->max_reuse = s->max_reuse;
    for (uint32_t i = 0; i < s->ntop; i++)
        hb_top_buffers_insert(to->top, &to->ntop, max_buffers, &s->top[i]);
}

/* Rank i's header in the gathered records. */
static const struct hb_rank_summary *header(const void *records, size_t size, int i)
{
    return (const struct hb_rank_summary *)((const char *)records + (size_t)i * size);
}

/* Same (op, name) on several ranks -> one site. */
static int merge_sites(struct hb_report *r, const void *records, size_t size, int nranks,
                       const struct hb_site_summary *const *sites, size_t max_sites,
                       size_t max_buffers)
{
    size_t total = 0;
    for (int i = 0; i < nranks; i++)
        total += header(records, size, i)->nsites;
    struct hb_site_summary *all = calloc(total ? total : 1, sizeof(*all));
    if (!all)
        return -1;
    size_t n = 0;
    for (int i = 0; i < nranks; i++)
        for (uint64_t k = 0; k < header(records, size, i)->nsites; k++) {
            all[n] = sites[i][k];
            all[n].name[HB_NAME_LEN - 1] = 0; /* never trust a received string */
            if (all[n].ntop > max_buffers)
                all[n].ntop = (uint32_t)max_buffers;
            n++;
        }
    qsort(all, n, sizeof(*all), cmp_site_key);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !cmp_site_key(&all[m - 1], &all[i])) {
            fold_site(&all[m - 1], &all[i], max_buffers);
            continue;
        }
        all[m++] = all[i];
    }
    qsort(all, m, sizeof(*all), cmp_site_calls);
    r->sites = all;
    r->nsites = m < max_sites ? m : max_sites;
    return 0;
}

size_t hb_report_record_size(const struct hb_report_layout *l)
{
    size_t size = sizeof(struct hb_rank_summary);
    for (size_t i = 0; i < l->n; i++)
        size += l->sec[i]->record_size;
    return size;
}

static size_t acc_size(const struct hb_report_section *s)
{
    return s->acc_size ? s->acc_size : s->record_size;
}

static int sections_alloc(struct hb_report *r, const struct hb_report_layout *l)
{
    if (l->n > HB_REPORT_MAX_SECTIONS)
        return -1;
    r->layout = *l;
    for (size_t k = 0; k < l->n; k++)
        if (!(r->acc[k] = calloc(1, acc_size(l->sec[k]))))
            return -1;
    return 0;
}

/* Rank i's section records, after its header, folded into the accumulators. */
static void merge_sections(struct hb_report *r, const void *rec)
{
    const char *p = (const char *)rec + sizeof(struct hb_rank_summary);
    for (size_t k = 0; k < r->layout.n; k++) {
        const struct hb_report_section *s = r->layout.sec[k];
        if (s->merge)
            s->merge(r->acc[k], p);
        else
            sum_counts(r->acc[k], (const uint64_t *)p, s->record_size);
        p += s->record_size;
    }
}

static void merge_classes(struct hb_report *r, const struct hb_rank_summary *rs,
                          uint32_t *sized)
{
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        const struct hb_class_summary *c = &rs->cls[op];
        struct hb_class_report *cr = &r->cls[op];
        merge_class(cr, c);
        if (c->top_size_calls[0])
            range_add(c->top_size[0], sized[op]++, &cr->freq_size_min, &cr->freq_size_max,
                      &cr->freq_size_avg);
    }
}

int hb_report_merge(struct hb_report *r, const struct hb_report_layout *l, const void *records,
                    int nranks, const struct hb_site_summary *const *sites, size_t max_sites,
                    size_t max_buffers)
{
    size_t size = hb_report_record_size(l);
    memset(r, 0, sizeof(*r));
    r->nranks = nranks;
    if (sections_alloc(r, l))
        return -1;
    if (max_buffers > HB_TOP_BUFFERS)
        max_buffers = HB_TOP_BUFFERS;
    uint32_t sized[HB_OP_COUNT] = {0};
    for (int i = 0; i < nranks; i++) {
        merge_classes(r, header(records, size, i), sized);
        merge_table(r, header(records, size, i));
        merge_sections(r, header(records, size, i));
    }
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        struct hb_class_report *cr = &r->cls[op];
        if (cr->ranks)
            cr->max_reuse_avg /= cr->ranks;
        if (sized[op])
            cr->freq_size_avg /= sized[op];
    }
    return merge_sites(r, records, size, nranks, sites, max_sites, max_buffers);
}

void hb_report_free(struct hb_report *r)
{
    free(r->sites);
    r->sites = NULL;
    r->nsites = 0;
    for (size_t k = 0; k < HB_REPORT_MAX_SECTIONS; k++) {
        free(r->acc[k]);
        r->acc[k] = NULL;
    }
}
