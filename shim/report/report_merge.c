/* Step 3 of the report: merge every rank's records on rank 0.  A pure
 * function of its inputs, so tests/unit/test_report.c checks it with
 * synthetic ranks. */
#include <limits.h>
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

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static void add_counters(struct hb_class_summary *to,
                         const struct hb_class_summary *c)
{
    const struct hb_class_summary *from = c;
    HB_CALL_COUNTERS(HB_COUNTER_ADD)
    HB_BUFFER_SUMS(HB_COUNTER_ADD)
    to->zero_calls += c->zero_calls;
    to->proc_null_calls += c->proc_null_calls;
    to->other_size_calls += c->other_size_calls;
    to->saving_ns += c->saving_ns;
    to->lookup_ns += c->lookup_ns;
    to->distinct_sizes = max_u64(to->distinct_sizes, c->distinct_sizes);
    to->max_reuse = max_u64(to->max_reuse, c->max_reuse);
    for (int k = 0; k < HB_USES_BUCKETS; k++)
        to->uses_hist[k] += c->uses_hist[k];
}

/* Adds (size, calls) to a top list kept sorted by calls, then size (as
 * each rank's list is, so equal counts always list the same way); sizes
 * already in the list accumulate. */
static void add_top_size(uint64_t *size, uint64_t *calls, int cap, uint64_t s,
                         uint64_t n)
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
                     (calls[i] == calls[i - 1] && size[i] < size[i - 1]));
         i--) {
        uint64_t ts = size[i], tc = calls[i];
        size[i] = size[i - 1], calls[i] = calls[i - 1];
        size[i - 1] = ts, calls[i - 1] = tc;
    }
}

static void range_add(uint64_t v, uint32_t n_before, uint64_t *min,
                      uint64_t *max, double *avg)
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
static void merge_class(struct hb_class_report *cr,
                        const struct hb_class_summary *c)
{
    if (!c->calls)
        return;
    add_counters(&cr->sum, c);
    uint32_t n = cr->ranks++;
    range_add(c->max_reuse, n, &cr->max_reuse_min, &cr->max_reuse_max,
              &cr->max_reuse_avg);
    for (int k = 0; k < HB_TOP_SIZES && c->top_size_calls[k]; k++)
        add_top_size(cr->sum.top_size, cr->sum.top_size_calls, HB_TOP_SIZES,
                     c->top_size[k], c->top_size_calls[k]);
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
    if (*count == 0 ||
        rs->stopped_after_calls < r->stopped_after_calls_min[why])
        r->stopped_after_calls_min[why] = rs->stopped_after_calls;
    if (*count == 0 ||
        rs->stopped_after_entries < r->stopped_after_entries_min[why])
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

static void fold_site(struct hb_site_summary *to,
                      const struct hb_site_summary *s, size_t max_buffers)
{
    const struct hb_site_summary *from = s;
    to->ranks += s->ranks;
    to->max_reuse = max_u64(to->max_reuse, s->max_reuse);
    HB_CALL_COUNTERS(HB_COUNTER_ADD)
    HB_BUFFER_SUMS(HB_COUNTER_ADD)
    to->empty_calls += s->empty_calls;
    to->saving_ns += s->saving_ns;
    to->persistent |= s->persistent;
    for (uint32_t i = 0; i < s->ntop; i++)
        hb_top_buffers_insert(to->top, &to->ntop, max_buffers, &s->top[i]);
}

/* ---- sites: an index by (op, name), bounded by site_cap ---------------- */

/* FNV-1a of (op, name): where a site sits in the index. */
static uint64_t site_hash(const struct hb_site_summary *s)
{
    uint64_t h = 1469598103934665603ull ^ s->op;
    for (const char *c = s->name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

/* The index slot holding s's key, or the empty one where it would go. */
static size_t hash_slot(const struct hb_report *r,
                        const struct hb_site_summary *s)
{
    size_t mask = r->hash_size - 1, i = site_hash(s) & mask;
    while (r->site_hash[i] && cmp_site_key(&r->sites[r->site_hash[i] - 1], s))
        i = (i + 1) & mask;
    return i;
}

/* Doubles the site table, up to site_cap, and rebuilds the index (kept
 * at most half full).  -1: at the cap or no memory; the table is intact
 * either way, so merging goes on and later new sites are left out. */
static int grow_sites(struct hb_report *r)
{
    if (r->site_room >= r->site_cap)
        return -1;
    size_t room = r->site_room ? 2 * r->site_room : 16, hsize = 1;
    if (room > r->site_cap)
        room = r->site_cap;
    while (hsize < 2 * room)
        hsize *= 2;
    struct hb_site_summary *s = realloc(r->sites, room * sizeof(*s));
    if (!s)
        return -1;
    r->sites = s;
    uint32_t *h = calloc(hsize, sizeof(*h));
    if (!h)
        return -1;
    free(r->site_hash);
    r->site_hash = h;
    r->hash_size = hsize;
    r->site_room = room;
    for (size_t k = 0; k < r->nsites; k++)
        r->site_hash[hash_slot(r, &r->sites[k])] = (uint32_t)k + 1;
    return 0;
}

/* Same (op, name) on several ranks -> one site.  A site first seen when
 * the table is full is counted as left out, with its calls. */
static void merge_site(struct hb_report *r, const struct hb_site_summary *in)
{
    struct hb_site_summary s = *in;
    s.name[HB_NAME_LEN - 1] = 0; /* never trust a received string */
    if (s.ntop > r->max_buffers)
        s.ntop = (uint32_t)r->max_buffers;
    size_t i = r->hash_size ? hash_slot(r, &s) : 0;
    if (r->hash_size && r->site_hash[i]) {
        fold_site(&r->sites[r->site_hash[i] - 1], &s, r->max_buffers);
        return;
    }
    if (r->nsites == r->site_room) {
        if (grow_sites(r)) {
            r->sites_left_out++;
            r->site_calls_left_out += s.calls;
            return;
        }
        i = hash_slot(r, &s);
    }
    r->sites[r->nsites++] = s;
    r->site_hash[i] = (uint32_t)r->nsites;
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
            range_add(c->top_size[0], sized[op]++, &cr->freq_size_min,
                      &cr->freq_size_max, &cr->freq_size_avg);
    }
}

/* Site indices are uint32_t and the index doubles the table: keep both
 * far from overflowing whatever cap the caller asks for. */
#define SITE_CAP_MAX ((size_t)1 << 28)

int hb_report_merge_begin(struct hb_report *r, const struct hb_report_layout *l,
                          size_t site_cap, size_t max_buffers)
{
    memset(r, 0, sizeof(*r));
    r->site_cap = site_cap < SITE_CAP_MAX ? site_cap : SITE_CAP_MAX;
    r->max_buffers =
        max_buffers < HB_TOP_BUFFERS ? max_buffers : HB_TOP_BUFFERS;
    return sections_alloc(r, l);
}

void hb_report_merge_rank(struct hb_report *r, const void *record,
                          const struct hb_site_summary *sites, size_t nsites)
{
    const struct hb_rank_summary *rs = record;
    merge_classes(r, rs, r->sized);
    merge_table(r, rs);
    merge_sections(r, record);
    for (size_t k = 0; k < nsites; k++)
        merge_site(r, &sites[k]);
    r->nranks++;
}

void hb_report_merge_end(struct hb_report *r, size_t max_sites)
{
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        struct hb_class_report *cr = &r->cls[op];
        if (cr->ranks)
            cr->max_reuse_avg /= cr->ranks;
        if (r->sized[op])
            cr->freq_size_avg /= r->sized[op];
    }
    free(r->site_hash);
    r->site_hash = NULL;
    r->hash_size = 0;
    if (r->nsites)
        qsort(r->sites, r->nsites, sizeof(*r->sites), cmp_site_calls);
    if (r->nsites > max_sites)
        r->nsites = max_sites;
}

/* Rank i's header in the gathered records. */
static const struct hb_rank_summary *header(const void *records, size_t size,
                                            int i)
{
    return (const struct hb_rank_summary *)((const char *)records +
                                            (size_t)i * size);
}

int hb_report_merge(struct hb_report *r, const struct hb_report_layout *l,
                    const void *records, int nranks,
                    const struct hb_site_summary *const *sites,
                    size_t max_sites, size_t max_buffers)
{
    size_t size = hb_report_record_size(l), total = 0;
    for (int i = 0; i < nranks; i++)
        total += header(records, size, i)->nsites;
    if (hb_report_merge_begin(r, l, total, max_buffers))
        return -1;
    for (int i = 0; i < nranks; i++)
        hb_report_merge_rank(r, header(records, size, i), sites[i],
                             header(records, size, i)->nsites);
    hb_report_merge_end(r, max_sites);
    return r->sites_left_out ? -1 : 0; /* room for all was asked: no memory */
}

void hb_report_free(struct hb_report *r)
{
    free(r->sites);
    free(r->site_hash);
    r->sites = NULL;
    r->site_hash = NULL;
    r->nsites = 0;
    for (size_t k = 0; k < HB_REPORT_MAX_SECTIONS; k++) {
        free(r->acc[k]);
        r->acc[k] = NULL;
    }
}

/* ---- the gather's arithmetic --------------------------------------------- */

/* Rank 0's budget, in quarters: one for the batch of messages it holds,
 * two for the merged site table, one for its own record, sites and the
 * rest (requests, statuses, section accumulators). */
#define SLOT_OVERHEAD 256 /* per rank of a batch: request, status */

static size_t round8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Sites per rank: all asked for, unless one message would not fit a
 * quarter of the budget or an int; then as many as do. */
static size_t sites_that_fit(size_t rec, size_t site, size_t max_sites,
                             size_t quarter)
{
    size_t room = quarter < INT_MAX ? quarter : INT_MAX;
    room -= SLOT_OVERHEAD + 8;
    if (rec > room)
        return (size_t)-1;
    size_t fit = (room - rec) / site;
    return max_sites < fit ? max_sites : fit;
}

/* The index of the site table has a power of two >= 2 x cap slots, so at
 * most 4 x cap: 16 bytes per site besides the record. */
static size_t table_bytes(size_t cap, size_t site)
{
    size_t hsize = 1;
    while (hsize < 2 * cap)
        hsize *= 2;
    return cap * site + hsize * sizeof(uint32_t);
}

int hb_report_gather_plan(int nranks, size_t record_size, size_t site_size,
                          size_t max_sites, size_t budget,
                          struct hb_gather_plan *p)
{
    memset(p, 0, sizeof(*p));
    size_t quarter = budget / 4;
    if (nranks < 1 || !site_size)
        return -1;
    size_t sites = sites_that_fit(record_size, site_size, max_sites, quarter);
    if (sites == (size_t)-1)
        return -1;
    size_t msg = round8(record_size + sites * site_size);
    size_t batch = quarter / (msg + SLOT_OVERHEAD);
    size_t others = (size_t)nranks - 1;
    if (batch > others)
        batch = others ? others : 1;
    p->max_sites = sites;
    p->msg_count = (int)msg;
    p->batch = (int)batch;
    p->rounds = (int)((others + batch - 1) / batch);
    p->max_displ = (long long)((batch - 1) * msg);
    p->site_cap = 2 * quarter / (site_size + 4 * sizeof(uint32_t));
    p->root_bytes = batch * (msg + SLOT_OVERHEAD) +
                    table_bytes(p->site_cap, site_size) + msg + 4 * record_size;
    return p->root_bytes <= budget ? 0 : -1;
}
