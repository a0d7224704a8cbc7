/* Unit tests for the per-call bookkeeping (shim/tracker.c): exact counts
 * for a known call sequence, class separation, empty calls, call-site
 * statistics, the table-full stop and the eligible size range.  Fixed
 * threshold 100 uses, eligible sizes 128 B .. 8 KiB, sites one frame deep
 * with fake return addresses. */
#include <string.h>

#include "check.h"
#include "fixtures.h"
#include "track/tracker.h"

#define SITE_A ((void *)0x1000)
#define SITE_B ((void *)0x2000)
#define SITE_C ((void *)0x3000)
#define BUF_A ((char *)0x7f0000100000) /* the 1 KiB buffer reused 1000 times */
#define SMALL ((char *)0x7f0000200000) /* 500 distinct 256 B buffers */

static int init(struct hb_tracker *t, uint64_t max_entries, uint32_t fixed)
{
    struct hb_table_params tp = {.bits = 16,
                                 .max_entries = max_entries,
                                 .adapt = 1,
                                 .adapt_hot_pct = 20,
                                 .adapt_chain = 3};
    struct hb_threshold_params thp = {.speculative = 0.25,
                                      .min_size = 128,
                                      .eager_limit = 8192,
                                      .fixed = fixed};
    struct hb_costmodel cm = model();
    return hb_tracker_init(t, &tp, 1, 64, &thp, &cm);
}

/* One call as a wrapper makes it: site lookup, then the record. */
static struct hb_entry *rec(struct hb_tracker *t, unsigned op, const void *addr,
                            uint64_t size, void *ret)
{
    struct hb_use u = {.addr = addr, .span = size, .bytes = size};
    return hb_tracker_record(t, op, &u, hb_tracker_site(t, op, ret));
}

static void rec_empty(struct hb_tracker *t, unsigned op, int proc_null,
                      void *ret)
{
    hb_tracker_record_empty(t, op, proc_null, hb_tracker_site(t, op, ret));
}

static struct hb_entry *entry(struct hb_tracker *t, const void *addr,
                              unsigned op)
{
    uint32_t chain;
    return hb_table_find(&t->table, hb_table_key(addr, op), &chain);
}

/* The site whose frame is ret, or NULL. */
static const struct hb_site *site(const struct hb_tracker *t, void *ret)
{
    for (uint32_t id = 1; id < t->sites.count; id++)
        if (t->sites.site[id].frames[0] == (uintptr_t)ret)
            return &t->sites.site[id];
    return NULL;
}

static void test_counts(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1 << 20, 100) == 0);
    /* one 1 KiB buffer used 1000 times at site A, 500 distinct 256 B
     * buffers used once each at site B, interleaved */
    int hot_at = 0;
    for (int i = 0; i < 1000; i++) {
        struct hb_entry *e = rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_A);
        CHECK(e != NULL);
        if (e && e->hot && !hot_at)
            hot_at = i + 1;
        if (i < 500)
            CHECK(rec(&t, HB_OP_SEND, SMALL + 256 * i, 256, SITE_B) != NULL);
    }
    const struct hb_class_stats *cs = &t.cls[HB_OP_SEND];
    CHECK_EQ_U64(hot_at, 100); /* hot from the 100th use inclusive */
    CHECK_EQ_U64(cs->calls, 1500);
    CHECK_EQ_U64(cs->reuse_calls, 999);
    CHECK_EQ_U64(cs->hot_calls, 901);
    CHECK_EQ_U64(cs->bytes, 1000 * 1024 + 500 * 256);
    CHECK_EQ_U64(cs->untracked_calls, 0);
    CHECK_EQ_U64(cs->zero_calls, 0);
    CHECK_EQ_U64(cs->proc_null_calls, 0);
    CHECK_EQ_U64(hb_tracker_calls(&t), 1500);
    for (unsigned op = 1; op < HB_OP_COUNT; op++)
        CHECK_EQ_U64(t.cls[op].calls, 0);
    CHECK_EQ_U64(t.table.entries, 501);
    CHECK_EQ_U64(t.table.hot_entries, 1);
    CHECK(t.table.stopped == HB_GROWING);
    CHECK_EQ_U64(t.calls_when_stopped, 0);

    struct hb_entry *a = entry(&t, BUF_A, HB_OP_SEND);
    CHECK(a != NULL);
    if (a) {
        CHECK_EQ_U64(a->uses, 1000);
        CHECK_EQ_U64(hb_tracker_hot_uses(&t, a), 901);
        CHECK(a->hot == 1);
        CHECK_EQ_U64(a->size, 1024);
        CHECK_EQ_U64(a->max_size, 1024);
        CHECK(a->op == HB_OP_SEND);
        CHECK(t.sites.site[a->site].frames[0] == (uintptr_t)SITE_A);
    }
    int small_ok = 0;
    for (int i = 0; i < 500; i++) {
        struct hb_entry *e = entry(&t, SMALL + 256 * i, HB_OP_SEND);
        small_ok += e && e->uses == 1 && e->hot == 0 &&
                    hb_tracker_hot_uses(&t, e) == 0 && e->size == 256 &&
                    t.sites.site[e->site].frames[0] == (uintptr_t)SITE_B;
    }
    CHECK_EQ_U64(small_ok, 500);

    /* site statistics per return address */
    const struct hb_site *sa = site(&t, SITE_A), *sb = site(&t, SITE_B);
    CHECK_EQ_U64(t.sites.count, 3); /* <other> + A + B */
    CHECK(sa && sb && sa != sb);
    if (sa && sb) {
        CHECK_EQ_U64(sa->calls, 1000);
        CHECK_EQ_U64(sa->bytes, 1000 * 1024);
        CHECK_EQ_U64(sa->reuse_calls, 999);
        CHECK_EQ_U64(sa->hot_calls, 901);
        CHECK_EQ_U64(sa->untracked_calls, 0);
        CHECK(sa->op == HB_OP_SEND);
        CHECK_EQ_U64(sb->calls, 500);
        CHECK_EQ_U64(sb->bytes, 500 * 256);
        CHECK_EQ_U64(sb->reuse_calls, 0);
        CHECK_EQ_U64(sb->hot_calls, 0);
    }
    CHECK_EQ_U64(t.sites.site[HB_SITE_OTHER].calls, 0);
    hb_tracker_destroy(&t);
}

/* The same memory as a send buffer and as a put origin: two entries. */
static void test_classes(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1 << 20, 100) == 0);
    for (int i = 0; i < 3; i++)
        rec(&t, HB_OP_SEND, BUF_A, 512, SITE_A);
    for (int i = 0; i < 2; i++)
        rec(&t, HB_OP_PUT, BUF_A, 512, SITE_C);
    CHECK_EQ_U64(t.table.entries, 2);
    struct hb_entry *s = entry(&t, BUF_A, HB_OP_SEND),
                    *p = entry(&t, BUF_A, HB_OP_PUT);
    CHECK(s && p && s != p);
    if (s && p) {
        CHECK_EQ_U64(s->uses, 3);
        CHECK_EQ_U64(p->uses, 2);
        CHECK(s->op == HB_OP_SEND && p->op == HB_OP_PUT);
    }
    CHECK_EQ_U64(t.cls[HB_OP_SEND].calls, 3);
    CHECK_EQ_U64(t.cls[HB_OP_SEND].reuse_calls, 2);
    CHECK_EQ_U64(t.cls[HB_OP_PUT].calls, 2);
    CHECK_EQ_U64(t.cls[HB_OP_PUT].reuse_calls,
                 1); /* the first put is not a reuse */
    CHECK_EQ_U64(t.cls[HB_OP_GET].calls, 0);
    const struct hb_site *sc = site(&t, SITE_C);
    CHECK(sc && sc->op == HB_OP_PUT && sc->calls == 2);
    hb_tracker_destroy(&t);
}

/* Zero-byte and MPI_PROC_NULL calls: counted apart, not in the table. */
static void test_empty(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1 << 20, 100) == 0);
    rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_A);
    for (int i = 0; i < 3; i++)
        rec_empty(&t, HB_OP_SEND, 0, SITE_B);
    for (int i = 0; i < 2; i++)
        rec_empty(&t, HB_OP_SEND, 1, SITE_B);
    rec_empty(&t, HB_OP_GET, 1, SITE_C);
    const struct hb_class_stats *cs = &t.cls[HB_OP_SEND];
    CHECK_EQ_U64(cs->calls, 6);
    CHECK_EQ_U64(cs->zero_calls, 3);
    CHECK_EQ_U64(cs->proc_null_calls, 2);
    CHECK_EQ_U64(cs->reuse_calls, 0);
    CHECK_EQ_U64(cs->bytes, 1024);
    CHECK_EQ_U64(cs->untracked_calls, 0);
    CHECK_EQ_U64(cs->hot_calls, 0);
    CHECK_EQ_U64(t.cls[HB_OP_GET].calls, 1);
    CHECK_EQ_U64(t.cls[HB_OP_GET].proc_null_calls, 1);
    CHECK_EQ_U64(t.cls[HB_OP_GET].zero_calls, 0);
    CHECK_EQ_U64(t.table.entries, 1);
    CHECK_EQ_U64(hb_tracker_calls(&t), 7);
    const struct hb_site *sb = site(&t, SITE_B);
    CHECK(sb && sb->calls == 5 && sb->bytes == 0 && sb->reuse_calls == 0);
    hb_tracker_destroy(&t);
}

/* Sites off, no return address, and a full site table. */
static void test_sites(void)
{
    struct hb_tracker t;
    struct hb_table_params tp = {.bits = 12, .max_entries = 1000};
    struct hb_threshold_params thp = {.speculative = 0.25,
                                      .min_size = 128,
                                      .eager_limit = 8192,
                                      .fixed = 100};
    struct hb_costmodel cm = model();

    /* depth 0: every call is <other>, no site is created */
    CHECK(hb_tracker_init(&t, &tp, 0, 64, &thp, &cm) == 0);
    rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_A);
    rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_B);
    CHECK_EQ_U64(t.sites.count, 1);
    CHECK_EQ_U64(t.sites.site[HB_SITE_OTHER].calls, 2);
    CHECK_EQ_U64(t.cls[HB_OP_SEND].reuse_calls, 1);
    hb_tracker_destroy(&t);

    /* depth 1, NULL return address: no site */
    CHECK(hb_tracker_init(&t, &tp, 1, 64, &thp, &cm) == 0);
    rec(&t, HB_OP_SEND, BUF_A, 1024, NULL);
    CHECK_EQ_U64(t.sites.count, 1);
    CHECK_EQ_U64(hb_tracker_site(&t, HB_OP_SEND, NULL), HB_SITE_OTHER);
    /* the same address gives the same id */
    uint16_t id = hb_tracker_site(&t, HB_OP_SEND, SITE_A);
    CHECK(id != HB_SITE_OTHER);
    CHECK_EQ_U64(hb_tracker_site(&t, HB_OP_SEND, SITE_A), id);
    CHECK(hb_tracker_site(&t, HB_OP_SEND, SITE_B) != id);
    hb_tracker_destroy(&t);

    /* 2 sites at most: the third and later addresses count as <other> */
    CHECK(hb_tracker_init(&t, &tp, 1, 2, &thp, &cm) == 0);
    for (int i = 0; i < 10; i++) {
        rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_A);
        rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_B);
        if (i < 4)
            rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_C);
        if (i < 3)
            rec(&t, HB_OP_SEND, BUF_A, 1024, (void *)0x4000);
    }
    CHECK_EQ_U64(t.sites.count, 3);
    CHECK(site(&t, SITE_A) && site(&t, SITE_A)->calls == 10);
    CHECK(site(&t, SITE_B) && site(&t, SITE_B)->calls == 10);
    CHECK(site(&t, SITE_C) == NULL);
    CHECK_EQ_U64(t.sites.site[HB_SITE_OTHER].calls, 7);
    CHECK_EQ_U64(t.sites.site[HB_SITE_OTHER].reuse_calls, 7);
    CHECK_EQ_U64(t.cls[HB_OP_SEND].calls, 27);
    hb_tracker_destroy(&t);
}

/* HOTBUF_TABLE_MAX_ENTRIES = 16: the table stops at the first buffer it
 * cannot take; "stopped after N calls" counts the calls made before it. */
static void test_stop(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 16, 100) == 0);
    for (int i = 0; i < 6; i++)
        rec_empty(&t, HB_OP_SEND, 0, SITE_A);
    for (int i = 0; i < 4; i++)
        rec_empty(&t, HB_OP_PUT, 1, SITE_C);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 16; i++)
            CHECK(rec(&t, HB_OP_SEND, SMALL + 256 * i, 256, SITE_A) != NULL);
    CHECK(t.table.stopped == HB_GROWING);
    CHECK_EQ_U64(hb_tracker_calls(&t), 42);
    for (int i = 16; i < 21; i++)
        CHECK(rec(&t, HB_OP_SEND, SMALL + 256 * i, 256, SITE_B) == NULL);
    for (int i = 0; i < 3; i++)
        CHECK(rec(&t, HB_OP_SEND, SMALL, 256, SITE_A) !=
              NULL); /* known buffers go on */
    CHECK(rec(&t, HB_OP_PUT, SMALL + 256 * 30, 256, SITE_C) == NULL);
    const struct hb_class_stats *cs = &t.cls[HB_OP_SEND];
    CHECK(t.table.stopped == HB_STOP_FULL);
    CHECK_EQ_U64(t.table.stopped_after_entries, 16);
    CHECK_EQ_U64(t.table.entries, 16);
    CHECK_EQ_U64(t.calls_when_stopped, 42);
    CHECK_EQ_U64(cs->untracked_calls, 5);
    CHECK_EQ_U64(t.cls[HB_OP_PUT].untracked_calls, 1);
    CHECK_EQ_U64(cs->calls, 6 + 32 + 5 + 3);
    CHECK_EQ_U64(cs->reuse_calls, 16 + 3);
    CHECK_EQ_U64(cs->bytes, (32 + 5 + 3) * 256);
    /* every call after the stop is either untracked or on a known buffer */
    CHECK_EQ_U64(hb_tracker_calls(&t) - t.calls_when_stopped, 5 + 3 + 1);
    const struct hb_site *sb = site(&t, SITE_B);
    CHECK(sb && sb->untracked_calls == 5 && sb->calls == 5);
    CHECK(entry(&t, SMALL + 256 * 16, HB_OP_SEND) == NULL);
    hb_tracker_destroy(&t);
}

/* Only sizes in [min_size, eager_limit] can become hot, bounds included. */
static void test_size_range(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1 << 20, 100) == 0);
    static const struct {
        uint64_t size;
        int hot;
    } cases[] = {{1, 0},    {64, 0},   {127, 0},  {128, 1},
                 {1000, 1}, {8192, 1}, {8193, 0}, {65536, 0}};
    const size_t n = sizeof(cases) / sizeof(cases[0]);
    for (int use = 0; use < 300; use++)
        for (size_t i = 0; i < n; i++)
            rec(&t, HB_OP_SEND, SMALL + 0x100000 * i, cases[i].size, SITE_A);
    int eligible = 0;
    for (size_t i = 0; i < n; i++) {
        struct hb_entry *e = entry(&t, SMALL + 0x100000 * i, HB_OP_SEND);
        CHECK(e != NULL);
        if (!e)
            continue;
        if (e->hot != cases[i].hot)
            fprintf(stderr, "size %llu: hot %d\n",
                    (unsigned long long)cases[i].size, e->hot);
        CHECK(e->hot == cases[i].hot);
        CHECK_EQ_U64(e->uses, 300);
        CHECK_EQ_U64(hb_tracker_hot_uses(&t, e), cases[i].hot ? 201 : 0);
        eligible += cases[i].hot;
    }
    CHECK_EQ_U64(t.table.hot_entries, eligible);
    CHECK_EQ_U64(t.cls[HB_OP_SEND].hot_calls, 201 * eligible);
    hb_tracker_destroy(&t);

    /* From the cost model (no fixed threshold): 4 KiB is hot at the 7th use
     * (ceil(0.25 * 10250 / 380)), 128 B never (C <= V). */
    CHECK(init(&t, 1 << 20, 0) == 0);
    int hot_at = 0;
    for (int i = 0; i < 20; i++) {
        struct hb_entry *e = rec(&t, HB_OP_SEND, BUF_A, 4096, SITE_A);
        if (e && e->hot && !hot_at)
            hot_at = i + 1;
        rec(&t, HB_OP_SEND, SMALL, 128, SITE_A);
    }
    CHECK_EQ_U64(hot_at, 7);
    struct hb_entry *e = entry(&t, SMALL, HB_OP_SEND);
    CHECK(e && !e->hot);
    hb_tracker_destroy(&t);
}

/* Issue 11: hotness is per call size.  One buffer sent 600 times at 1 KiB
 * and then 1000 times at 32 KiB (above the 8 KiB eager limit): the 1 KiB
 * calls from the 100th use on are hot, none of the 32 KiB ones.  A second
 * buffer at 512 B, 8 KiB, 512 B stays hot across eligible sizes. */
static void test_hot_per_call_size(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1 << 20, 100) == 0);
    const struct hb_class_stats *cs = &t.cls[HB_OP_SEND];
    unsigned long long wrong = 0, hot = 0;
    for (int i = 0; i < 1600; i++) {
        uint64_t size = i < 600 ? 1024 : 32768, before = cs->hot_calls;
        struct hb_entry *e = rec(&t, HB_OP_SEND, BUF_A, size, SITE_A);
        int want = i + 1 >= 100 && size <= 8192;
        wrong += (cs->hot_calls - before) != (unsigned long long)want;
        wrong += hb_tracker_call_hot(e) != want; /* what a router sees */
        hot += want;
    }
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(hot, 501);
    CHECK_EQ_U64(cs->hot_calls, 501);
    const struct hb_site *sa = site(&t, SITE_A);
    CHECK(sa && sa->hot_calls == 501 && sa->calls == 1600);
    CHECK_EQ_U64(t.table.hot_entries, 1);

    for (int i = 0; i < 300; i++)
        rec(&t, HB_OP_SEND, SMALL, i < 150 || i >= 250 ? 512 : 8192, SITE_B);
    CHECK_EQ_U64(cs->hot_calls - 501, 51 + 100 + 50);
    CHECK_EQ_U64(t.table.hot_entries, 2);
    struct hb_entry *a = entry(&t, BUF_A, HB_OP_SEND),
                    *b = entry(&t, SMALL, HB_OP_SEND);
    CHECK(a && a->max_size == 32768 && a->reg_size == 1024 &&
          hb_tracker_hot_uses(&t, a) == 501);
    CHECK(b && b->max_size == 8192 && b->reg_size == 8192 &&
          hb_tracker_hot_uses(&t, b) == 201);

    /* reused past the threshold, but only above the eager limit: never hot */
    for (int i = 0; i < 200; i++)
        CHECK(!hb_tracker_call_hot(rec(&t, HB_OP_PUT, BUF_A, 16384, SITE_C)));
    CHECK_EQ_U64(t.cls[HB_OP_PUT].hot_calls, 0);
    CHECK_EQ_U64(t.table.hot_entries, 2);
    CHECK(!hb_tracker_call_hot(NULL)); /* untracked */
    hb_tracker_destroy(&t);
}

/* Sizes: each call at its own size, in a bounded table.  One buffer at
 * 300 distinct sizes (size i used i % 3 + 1 times), then 5 more calls at
 * the first size: the first HB_SIZES_EXACT sizes are exact, later ones
 * only counted as "other". */
static void test_size_table(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1 << 20, 100) == 0);
    uint64_t other = 0;
    for (int i = 0; i < 300; i++)
        for (int k = 0; k <= i % 3; k++) {
            rec(&t, HB_OP_SEND, BUF_A, 1000 + (uint64_t)i, SITE_A);
            other += i >= HB_SIZES_EXACT;
        }
    for (int k = 0; k < 5; k++)
        rec(&t, HB_OP_SEND, BUF_A, 1000, SITE_A);
    rec(&t, HB_OP_SEND, BUF_A, 2000, SITE_A); /* closes the run of 5 */
    const struct hb_size_hist *h = &t.sizes[HB_OP_SEND];
    CHECK_EQ_U64(h->distinct, HB_SIZES_EXACT);
    CHECK_EQ_U64(h->other_calls, other);
    uint64_t size[3], calls[3];
    hb_size_hist_top(h, size, calls, 3);
    /* 1000 x(1+5); then the sizes used 3 times, smallest first */
    CHECK(size[0] == 1000 && calls[0] == 6);
    CHECK(size[1] == 1002 && calls[1] == 3 && size[2] == 1005 && calls[2] == 3);
    hb_tracker_destroy(&t);
}

/* One buffer, first used at A (10 calls), then at B (290 calls): B made
 * all 201 hot calls (uses 100..300), so B gets their saving (a copy each)
 * and its max uses; A keeps the registration (10.25 us).  Closed runs and
 * the open one both count: a size change at B's 201st call closes the
 * first run midway. */
static void test_credit_calling_site(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1000, 100) == 0);
    for (int i = 0; i < 10; i++)
        rec(&t, HB_OP_SEND, BUF_A, 1024, SITE_A);
    for (int i = 0; i < 290; i++)
        rec(&t, HB_OP_SEND, BUF_A, i < 200 ? 1024 : 1000, SITE_B);
    const struct hb_site *a = site(&t, SITE_A), *b = site(&t, SITE_B);
    const struct hb_entry *e = entry(&t, BUF_A, HB_OP_SEND);
    struct hb_run run;
    hb_tracker_open_run(&t, e, &run);
    /* what the report adds at exit: the open run, to the first site */
    double a_saving = a->saving_ns + run.copy_ns, b_saving = b->saving_ns;
    /* hot: uses 100..210 at 1 KiB, 211..300 at 1000 B */
    double want_b =
        111 * hb_cost_copy_ns(&t.cm, 1024) + 90 * hb_cost_copy_ns(&t.cm, 1000);
    CHECK_EQ_U64(a->hot_calls, 0);
    CHECK_EQ_U64(b->hot_calls, 201);
    CHECK_EQ_U64(a->max_uses, 0); /* its own buffer: the report takes e->uses */
    CHECK_EQ_U64(b->max_uses, 300);
    CHECK(b_saving > want_b - 1e-6 && b_saving < want_b + 1e-6);
    CHECK(a_saving > -10250 - 1e-6 && a_saving < -10250 + 1e-6);
    CHECK(t.saving_ns[HB_OP_SEND] + run.copy_ns > want_b - 10250 - 1e-6 &&
          t.saving_ns[HB_OP_SEND] + run.copy_ns < want_b - 10250 + 1e-6);
    hb_tracker_destroy(&t);
}

int main(void)
{
    test_counts();
    test_classes();
    test_empty();
    test_sites();
    test_stop();
    test_size_range();
    test_hot_per_call_size();
    test_size_table();
    test_credit_calling_site();
    return CHECK_DONE();
}
