/* Unit tests for pending runs (shim/track/tracker.h): calls recorded the
 * wrapper's way (hb_tracker_record_fast, else hb_tracker_record_at) keep
 * their class and site counts on the buffer's entry until the entry's
 * caller or size changes or the tracker folds at exit.  Once folded, every
 * number must be exactly what counting each call at once
 * (hb_tracker_record, as before pending runs) gives: the same call
 * sequence drives two trackers, one each way, and all their counters,
 * sites, size tables, savings and entries are compared. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fixtures.h"
#include "track/tracker.h"

#define SITE_A ((void *)0x1000)
#define SITE_B ((void *)0x2000)
#define BUF ((char *)0x7f0000100000)

static int init(struct hb_tracker *t, int depth, uint64_t max_entries,
                uint32_t fixed, int bits)
{
    struct hb_table_params tp = {.bits = bits,
                                 .max_entries = max_entries,
                                 .adapt = 1,
                                 .adapt_hot_pct = 20,
                                 .adapt_chain = 3};
    struct hb_threshold_params thp = {.speculative = 0.25,
                                      .min_size = 128,
                                      .eager_limit = 8192,
                                      .fixed = fixed};
    struct hb_costmodel cm = model();
    return hb_tracker_init(t, &tp, depth, 64, &thp, &cm);
}

/* Counted at once: site lookup, then the record (hb_track_slow's way). */
static void rec_now(struct hb_tracker *t, unsigned op, const void *addr,
                    uint64_t size, void *ret)
{
    struct hb_use u = {.addr = addr, .span = size, .bytes = size};
    hb_tracker_record(t, op, &u, hb_tracker_site(t, op, ret));
}

/* The generated send binding's way: the leaf fast path, else hb_track. */
static void rec_wrapper(struct hb_tracker *t, unsigned op, const void *addr,
                        uint64_t size, void *ret)
{
    if (!hb_tracker_record_fast(t, op, addr, size, ret))
        hb_tracker_record_at(t, op, addr, size, ret);
}

static int same_stats(const struct hb_class_stats *a,
                      const struct hb_class_stats *b)
{
    return !memcmp(a, b, sizeof(*a));
}

/* Every counter of a site (frames, counters, saving); pending fields of
 * the entries are the only thing allowed to differ. */
static void check_same(const struct hb_tracker *a, const struct hb_tracker *b,
                       const char *what)
{
    int bad = 0;
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        if (!same_stats(&a->cls[op], &b->cls[op])) {
            fprintf(stderr,
                    "%s: class %s: calls %llu/%llu bytes %llu/%llu "
                    "reuse %llu/%llu hot %llu/%llu untracked %llu/%llu\n",
                    what, hb_op_name(op), (unsigned long long)a->cls[op].calls,
                    (unsigned long long)b->cls[op].calls,
                    (unsigned long long)a->cls[op].bytes,
                    (unsigned long long)b->cls[op].bytes,
                    (unsigned long long)a->cls[op].reuse_calls,
                    (unsigned long long)b->cls[op].reuse_calls,
                    (unsigned long long)a->cls[op].hot_calls,
                    (unsigned long long)b->cls[op].hot_calls,
                    (unsigned long long)a->cls[op].untracked_calls,
                    (unsigned long long)b->cls[op].untracked_calls);
            bad++;
        }
        bad += memcmp(&a->sizes[op], &b->sizes[op], sizeof(a->sizes[op])) != 0;
        bad += a->saving_ns[op] != b->saving_ns[op];
    }
    bad += a->sites.count != b->sites.count;
    for (uint32_t i = 0; i < a->sites.count && i < b->sites.count; i++)
        if (memcmp(&a->sites.site[i], &b->sites.site[i],
                   sizeof(a->sites.site[i]))) {
            fprintf(stderr, "%s: site %u: calls %llu/%llu hot %llu/%llu\n",
                    what, i, (unsigned long long)a->sites.site[i].calls,
                    (unsigned long long)b->sites.site[i].calls,
                    (unsigned long long)a->sites.site[i].hot_calls,
                    (unsigned long long)b->sites.site[i].hot_calls);
            bad++;
        }
    bad += a->calls_when_stopped != b->calls_when_stopped;
    bad += a->table.entries != b->table.entries ||
           a->table.hot_entries != b->table.hot_entries ||
           a->table.stopped != b->table.stopped;
    if (bad)
        fprintf(stderr, "%s: %d difference(s)\n", what, bad);
    CHECK(bad == 0);
}

/* Entry by entry: uses, runs, hot state (pending fields aside). */
static void check_entries(struct hb_tracker *a, struct hb_tracker *b,
                          const char *what)
{
    int bad = 0;
    for (uint64_t i = 0; i < a->table.nbuckets; i++)
        for (struct hb_entry *e = a->table.buckets[i]; e; e = e->next) {
            uint32_t chain;
            struct hb_entry *f = hb_table_find(&b->table, e->key, &chain);
            bad += !f || f->uses != e->uses || f->run_start != e->run_start ||
                   f->size != e->size || f->thr != e->thr ||
                   f->hot_uses != e->hot_uses || f->reg_size != e->reg_size ||
                   f->max_size != e->max_size || f->site != e->site ||
                   f->op != e->op || f->hot != e->hot;
        }
    if (bad)
        fprintf(stderr, "%s: %d entries differ\n", what, bad);
    CHECK(bad == 0);
}

/* A known sequence: 10 calls at site A, 5 at B, 4 at A with another size,
 * then exit.  The fold at each change and at exit gives exactly these. */
static void test_known(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1, 1 << 20, 3, 16) == 0);
    for (int i = 0; i < 10; i++)
        rec_wrapper(&t, HB_OP_SEND, BUF, 1024, SITE_A);
    /* pending: the first call was counted at once, nine wait on the entry */
    CHECK_EQ_U64(t.cls[HB_OP_SEND].calls, 1);
    for (int i = 0; i < 5; i++)
        rec_wrapper(&t, HB_OP_SEND, BUF, 1024, SITE_B); /* folds A's nine */
    CHECK_EQ_U64(t.cls[HB_OP_SEND].calls, 11);
    for (int i = 0; i < 4; i++)
        rec_wrapper(&t, HB_OP_SEND, BUF, 512, SITE_A); /* folds B's four */
    CHECK_EQ_U64(t.cls[HB_OP_SEND].calls, 16);
    hb_tracker_fold(&t); /* exit */
    const struct hb_class_stats *cs = &t.cls[HB_OP_SEND];
    CHECK_EQ_U64(cs->calls, 19);
    CHECK_EQ_U64(cs->bytes, 15 * 1024 + 4 * 512);
    CHECK_EQ_U64(cs->reuse_calls, 18);
    /* threshold 3: uses 3..15 at 1 KiB; at 512 B the uses go on (16..19) */
    CHECK_EQ_U64(cs->hot_calls, 13 + 4);
    CHECK_EQ_U64(hb_tracker_calls(&t), 19);
    uint16_t a = hb_tracker_site(&t, HB_OP_SEND, SITE_A);
    uint16_t b = hb_tracker_site(&t, HB_OP_SEND, SITE_B);
    CHECK_EQ_U64(t.sites.site[a].calls, 14);
    CHECK_EQ_U64(t.sites.site[a].bytes, 10 * 1024 + 4 * 512);
    CHECK_EQ_U64(t.sites.site[a].reuse_calls, 13);
    CHECK_EQ_U64(t.sites.site[a].hot_calls, 8 + 4);
    CHECK_EQ_U64(t.sites.site[b].calls, 5);
    CHECK_EQ_U64(t.sites.site[b].hot_calls, 5);
    hb_tracker_fold(&t); /* folding twice adds nothing */
    CHECK_EQ_U64(t.cls[HB_OP_SEND].calls, 19);
    hb_tracker_destroy(&t);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random sequences over few buffers (small table: chains, move to front),
 * few callers (NULL included), sizes around the threshold range and past
 * 4 GiB, all classes, calls counted at once mixed in (routers, persistent
 * requests, derived types), empty calls, and a table that stops. */
static void differential(int depth, uint64_t max_entries, uint32_t fixed,
                         uint64_t seed, int calls)
{
    static const uint64_t sizes[] = {
        64, 128, 1024, 1024, 1024, 8192, 9000, (1ull << 32) + 5, 4096};
    void *const rets[] = {SITE_A, SITE_B, (void *)0x3000, NULL};
    struct hb_tracker a, b;
    char what[96];
    snprintf(what, sizeof(what), "depth %d, max %llu, thr %u, seed %llu", depth,
             (unsigned long long)max_entries, fixed, (unsigned long long)seed);
    CHECK(init(&a, depth, max_entries, fixed, 8) == 0);
    CHECK(init(&b, depth, max_entries, fixed, 8) == 0);
    uint64_t s = seed, last_size = 0;
    void *last_ret = NULL;
    const char *last_addr = NULL;
    for (int i = 0; i < calls; i++) {
        uint64_t r = rng_next(&s);
        unsigned op = r % 8 < 6 ? HB_OP_SEND : (unsigned)(r % HB_OP_COUNT);
        const char *addr = BUF + 4096 * ((r >> 8) % 40);
        uint64_t size = sizes[(r >> 16) % 9];
        void *ret = rets[(r >> 24) % 4];
        /* runs: most calls repeat the previous buffer, caller and size */
        if ((r >> 32) % 4) {
            size = last_size ? last_size : size;
            ret = last_size ? last_ret : ret;
            addr = last_addr ? last_addr : addr;
        }
        last_size = size, last_ret = ret, last_addr = addr;
        switch ((r >> 40) % 16) {
        case 0: /* counted at once on both (router, persistent, derived) */
            rec_now(&a, op, addr, size, ret);
            rec_now(&b, op, addr, size, ret);
            break;
        case 1:
            hb_tracker_record_empty(&a, op, (r >> 48) & 1,
                                    hb_tracker_site(&a, op, ret));
            hb_tracker_record_empty(&b, op, (r >> 48) & 1,
                                    hb_tracker_site(&b, op, ret));
            break;
        default:
            rec_now(&a, op, addr, size, ret);
            rec_wrapper(&b, op, addr, size, ret);
        }
        if (i == calls / 2) { /* a fold in the middle changes nothing */
            hb_tracker_fold(&b);
            check_same(&a, &b, what);
        }
    }
    hb_tracker_fold(&b); /* exit */
    check_same(&a, &b, what);
    check_entries(&a, &b, what);
    CHECK_EQ_U64(hb_tracker_calls(&a), hb_tracker_calls(&b));
    hb_tracker_destroy(&a);
    hb_tracker_destroy(&b);
}

/* The site of the call just recorded (the send path counts a rerouted
 * send there): known at depth 1, from the entry, not at depth 3. */
static void test_call_site(void)
{
    struct hb_tracker t;
    CHECK(init(&t, 1, 1 << 20, 3, 16) == 0);
    struct hb_entry *e =
        hb_tracker_record_at(&t, HB_OP_SEND, BUF, 1024, SITE_A);
    CHECK_EQ_U64(hb_tracker_call_site(e),
                 hb_tracker_site(&t, HB_OP_SEND, SITE_A));
    e = hb_tracker_record_at(&t, HB_OP_SEND, BUF, 1024, SITE_A); /* pending */
    CHECK_EQ_U64(hb_tracker_call_site(e),
                 hb_tracker_site(&t, HB_OP_SEND, SITE_A));
    e = hb_tracker_record_at(&t, HB_OP_SEND, BUF, 1024, SITE_B);
    CHECK_EQ_U64(hb_tracker_call_site(e),
                 hb_tracker_site(&t, HB_OP_SEND, SITE_B));
    CHECK_EQ_U64(hb_tracker_call_site(NULL), HB_SITE_NONE);
    hb_tracker_destroy(&t);
    CHECK(init(&t, 3, 1 << 20, 3, 16) == 0);
    e = hb_tracker_record_at(&t, HB_OP_SEND, BUF, 1024, SITE_A);
    CHECK_EQ_U64(hb_tracker_call_site(e), HB_SITE_NONE);
    hb_tracker_destroy(&t);
}

int main(void)
{
    test_known();
    test_call_site();
    for (uint64_t seed = 1; seed <= 20; seed++) {
        differential(1, 1 << 20, 5, seed, 20000);
        differential(1, 1 << 20, 0, seed, 20000); /* from the cost model */
        differential(0, 1 << 20, 5, seed, 5000);
        differential(3, 1 << 20, 5, seed, 2000);
        differential(1, 25, 5, seed, 20000); /* stops: full */
    }
    return CHECK_DONE();
}
