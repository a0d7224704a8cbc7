/* Unit tests for the buffer-reuse table (shim/reuse_table.c): lookups and
 * inserts, the class in the key, chain lengths, the pool walk, the
 * max_entries stop, the adaptation rule and the hash's spread. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "track/ops.h"
#include "track/reuse_table.h"

#define BASE 0x7f3a12340000ull /* a typical heap/mmap address, 64 KiB aligned */

static struct hb_table_params params(int bits, uint64_t max_entries, int adapt)
{
    struct hb_table_params p = {.bits = bits,
                                .max_entries = max_entries,
                                .adapt = adapt,
                                .adapt_hot_pct = 20,
                                .adapt_chain = 3};
    return p;
}

/* Find, and insert when absent, as the tracker does. */
static struct hb_entry *lookup_insert(struct hb_table *t, uintptr_t key)
{
    uint32_t chain = 0;
    struct hb_entry *e = hb_table_find(t, key, &chain);
    return e ? e : hb_table_insert(t, key, chain);
}

/* Longest chain, by walking every bucket. */
static uint32_t real_max_chain(const struct hb_table *t)
{
    uint32_t best = 0;
    for (uint64_t b = 0; b < t->nbuckets; b++) {
        uint32_t n = 0;
        for (const struct hb_entry *e = t->buckets[b]; e; e = e->next)
            n++;
        if (n > best)
            best = n;
    }
    return best;
}

static void test_find_insert(void)
{
    struct hb_table t;
    struct hb_table_params p = params(10, 1000, 0);
    CHECK(hb_table_init(&t, &p) == 0);
    CHECK_EQ_U64(t.nbuckets, 1024);
    CHECK_EQ_U64(t.entries, 0);
    CHECK(t.stopped == HB_GROWING);

    uintptr_t k = hb_table_key((void *)(BASE + 0x40), HB_OP_SEND);
    uint32_t chain = 99;
    CHECK(hb_table_find(&t, k, &chain) == NULL);
    CHECK_EQ_U64(chain, 0);
    struct hb_entry *e = hb_table_insert(&t, k, chain);
    CHECK(e != NULL);
    if (!e)
        return;
    CHECK(e->key == k);
    CHECK(e->uses == 0 && e->hot_uses == 0 && e->hot == 0 && e->size == 0 &&
          e->thr == 0 && e->run_start == 0 && e->reg_size == 0 &&
          e->max_size == 0);
    CHECK_EQ_U64(t.entries, 1);
    CHECK(hb_table_find(&t, k, &chain) == e);
    e->uses = 7;
    CHECK(hb_table_find(&t, k, &chain)->uses == 7);
    /* a neighbouring address is another buffer */
    CHECK(hb_table_find(&t, hb_table_key((void *)(BASE + 0x41), HB_OP_SEND),
                        &chain) == NULL);

    /* Keys differing only in the class are distinct entries. */
    CHECK(hb_table_key((void *)BASE, HB_OP_SEND) == (uintptr_t)BASE);
    struct hb_entry *by_op[HB_OP_COUNT];
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        uintptr_t key = hb_table_key((void *)BASE, op);
        for (unsigned o2 = 0; o2 < op; o2++)
            CHECK(key != hb_table_key((void *)BASE, o2));
        CHECK(hb_table_find(&t, key, &chain) == NULL);
        by_op[op] = hb_table_insert(&t, key, chain);
        CHECK(by_op[op] != NULL);
    }
    CHECK_EQ_U64(t.entries, 1 + HB_OP_COUNT);
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        CHECK(hb_table_find(&t, hb_table_key((void *)BASE, op), &chain) ==
              by_op[op]);
        for (unsigned o2 = 0; o2 < op; o2++)
            CHECK(by_op[op] != by_op[o2]);
    }
    hb_table_destroy(&t);
}

/* Keys landing in one bucket: find reports the chain it walked. */
static void test_chains(void)
{
    struct hb_table t;
    struct hb_table_params p = params(4, 1000, 0);
    CHECK(hb_table_init(&t, &p) == 0);
    uintptr_t same[4];
    int n = 0;
    uint64_t target = hb_table_bucket(&t, BASE);
    for (uintptr_t a = BASE; n < 4; a += 64)
        if (hb_table_bucket(&t, a) == target)
            same[n++] = a;
    uintptr_t other = BASE;
    while (hb_table_bucket(&t, other) == target)
        other += 64;

    uint32_t chain = 99;
    for (int i = 0; i < 3; i++) {
        CHECK(hb_table_find(&t, same[i], &chain) == NULL);
        CHECK_EQ_U64(chain, i);
        CHECK(hb_table_insert(&t, same[i], chain) != NULL);
        CHECK_EQ_U64(t.max_chain, i + 1);
    }
    CHECK(hb_table_find(&t, same[3], &chain) == NULL);
    CHECK_EQ_U64(chain, 3);
    chain = 99;
    CHECK(hb_table_find(&t, other, &chain) == NULL);
    CHECK_EQ_U64(chain, 0);
    for (int i = 0; i < 3; i++)
        CHECK(hb_table_find(&t, same[i], &chain) != NULL);
    CHECK_EQ_U64(real_max_chain(&t), 3);
    CHECK_EQ_U64(t.max_chain, 3);
    /* move to front: a found entry heads its chain, the others keep order */
    struct hb_entry *first = hb_table_find(&t, same[0], &chain);
    CHECK(t.buckets[target] == first);
    struct hb_entry *mid = hb_table_find(&t, same[1], &chain);
    CHECK(t.buckets[target] == mid && mid->next == first);
    CHECK_EQ_U64(real_max_chain(&t), 3);
    CHECK(hb_table_find(&t, same[3], &chain) == NULL);
    CHECK_EQ_U64(chain, 3);
    hb_table_destroy(&t);
}

/* ---- foreach over several pool chunks ---------------------------------------- */

struct visits {
    uint8_t *count; /* per inserted key index */
    size_t n;
    size_t total;
    int bad;
};

static void count_visit(const struct hb_entry *e, void *arg)
{
    struct visits *v = arg;
    uintptr_t i = (e->key - BASE) / 64;
    v->total++;
    if (e->key < BASE || (e->key - BASE) % 64 || i >= v->n || e->uses != i + 1)
        v->bad++;
    else if (v->count[i] < 255)
        v->count[i]++;
}

static void test_foreach(void)
{
    static const size_t sizes[] = {
        0, 1, 4095, 4096, 4097, 4096 * 2, 4096 * 2 + 1, 4096 * 3 + 100};
    size_t mem_one_chunk = 0, mem_two_chunks = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        struct hb_table t;
        struct hb_table_params p = params(16, 1 << 20, 0);
        CHECK(hb_table_init(&t, &p) == 0);
        for (size_t i = 0; i < n; i++) {
            struct hb_entry *e = lookup_insert(&t, BASE + 64 * i);
            CHECK(e != NULL);
            if (e)
                e->uses = (uint32_t)i + 1;
        }
        CHECK_EQ_U64(t.entries, n);
        struct visits v = {.count = calloc(n + 1, 1), .n = n};
        hb_table_foreach(&t, count_visit, &v);
        size_t once = 0;
        for (size_t i = 0; i < n; i++)
            once += v.count[i] == 1;
        if (v.total != n || once != n || v.bad)
            fprintf(
                stderr,
                "foreach over %zu entries: %zu visits, %zu visited once, %d bad\n",
                n, v.total, once, v.bad);
        CHECK_EQ_U64(v.total, n);
        CHECK_EQ_U64(once, n);
        CHECK_EQ_U64(v.bad, 0);
        free(v.count);
        if (n == 4096)
            mem_one_chunk = hb_table_memory(&t);
        if (n == 4097)
            mem_two_chunks = hb_table_memory(&t);
        hb_table_destroy(&t);
    }
    /* The pool grows in chunks of 4096 entries, counted in the memory. */
    CHECK(mem_two_chunks >= mem_one_chunk + 4096 * sizeof(struct hb_entry));
    struct hb_table t;
    struct hb_table_params p = params(12, 100, 0);
    CHECK(hb_table_init(&t, &p) == 0);
    CHECK(hb_table_memory(&t) >= 4096 * sizeof(void *));
    hb_table_destroy(&t);
}

/* ---- max_entries ---------------------------------------------------------------- */

static void test_full(void)
{
    struct hb_table t;
    struct hb_table_params p =
        params(10, 100, 1); /* adapt on: full must win anyway */
    p.adapt_chain = 1000;
    CHECK(hb_table_init(&t, &p) == 0);
    for (int i = 0; i < 100; i++)
        CHECK(lookup_insert(&t, BASE + 64 * i) != NULL);
    CHECK_EQ_U64(t.entries, 100);
    CHECK(t.stopped == HB_GROWING);
    CHECK(lookup_insert(&t, BASE + 64 * 100) == NULL);
    CHECK(t.stopped == HB_STOP_FULL);
    CHECK_EQ_U64(t.stopped_after_entries, 100);
    for (int i = 101; i < 200; i++)
        CHECK(lookup_insert(&t, BASE + 64 * i) == NULL);
    CHECK_EQ_U64(t.entries, 100);
    CHECK_EQ_U64(t.stopped_after_entries, 100);
    CHECK(t.stopped == HB_STOP_FULL);
    uint32_t chain;
    int found = 0;
    for (int i = 0; i < 100; i++) {
        struct hb_entry *e = hb_table_find(&t, BASE + 64 * i, &chain);
        found += e && e->key == BASE + 64 * (uintptr_t)i;
    }
    CHECK_EQ_U64(found, 100);
    CHECK(hb_table_find(&t, BASE + 64 * 100, &chain) == NULL);
    hb_table_destroy(&t);
}

/* ---- adaptation ------------------------------------------------------------------ */

/* With no hot entries, 16 buckets and adapt_chain 3, the table stops once
 * some chain has grown to 3 entries (header: "once fewer than adapt_hot_pct %
 * of the tracked buffers are hot and a chain has grown to adapt_chain
 * entries ... no new buffer is inserted").  The expected stop point is
 * computed from the bucket of each key. */
static void test_adapt_cold(void)
{
    struct hb_table t;
    struct hb_table_params p = params(4, 1 << 20, 1);
    CHECK(hb_table_init(&t, &p) == 0);
    uint32_t per_bucket[16] = {0};
    uint64_t expect_entries = 0;
    for (uintptr_t a = BASE;; a += 64) {
        uint64_t b = hb_table_bucket(&t, a);
        expect_entries++;
        if (++per_bucket[b] == p.adapt_chain)
            break;
    }
    uint64_t inserted = 0;
    int i;
    for (i = 0; i < 1000; i++) {
        if (!lookup_insert(&t, BASE + 64 * (uintptr_t)i))
            break;
        inserted++;
    }
    if (t.stopped_after_entries != expect_entries ||
        real_max_chain(&t) != p.adapt_chain)
        fprintf(
            stderr,
            "adaptation: stopped after %llu entries (longest chain %u, max_chain %u); "
            "a chain of %u is reached at %llu entries\n",
            (unsigned long long)t.stopped_after_entries, real_max_chain(&t),
            t.max_chain, p.adapt_chain, (unsigned long long)expect_entries);
    CHECK(i < 1000);
    CHECK(t.stopped == HB_STOP_ADAPTED);
    CHECK_EQ_U64(t.stopped_after_entries, t.entries);
    CHECK_EQ_U64(inserted, t.entries);
    CHECK(t.entries <= 2 * 16 + 1); /* pigeonhole bound for a chain of 3 */
    /* the documented rule: the stop comes after a chain has reached adapt_chain */
    CHECK_EQ_U64(t.stopped_after_entries, expect_entries);
    CHECK_EQ_U64(real_max_chain(&t), p.adapt_chain);
    /* max_chain is the longest chain in the table, as the report prints it */
    CHECK_EQ_U64(t.max_chain, real_max_chain(&t));
    /* stopped: no more inserts, lookups of known buffers go on */
    CHECK(lookup_insert(&t, BASE + 64 * 5000) == NULL);
    CHECK(t.stopped == HB_STOP_ADAPTED);
    uint32_t chain;
    for (uint64_t k = 0; k < inserted; k++)
        CHECK(hb_table_find(&t, BASE + 64 * k, &chain) != NULL);
    hb_table_destroy(&t);
}

/* Enough hot buffers keep the table growing whatever the chains; it stops
 * exactly when the hot share falls below adapt_hot_pct. */
static void test_adapt_hot(void)
{
    struct hb_table t;
    struct hb_table_params p = params(4, 1 << 20, 1);
    CHECK(hb_table_init(&t, &p) == 0);
    uintptr_t a = BASE;
    for (int i = 0; i < 200; i++, a += 64) {
        struct hb_entry *e = lookup_insert(&t, a);
        CHECK(e != NULL);
        if (e)
            hb_table_mark_hot(&t, e);
    }
    CHECK(t.stopped == HB_GROWING);
    CHECK_EQ_U64(t.hot_entries, 200);
    CHECK(t.max_chain > p.adapt_chain); /* 200 entries in 16 buckets */
    /* 200 hot of 1000 is 20 %: not "fewer than" 20 %, still growing */
    for (int i = 200; i < 1000; i++, a += 64)
        CHECK(lookup_insert(&t, a) != NULL);
    CHECK(t.stopped == HB_GROWING);
    CHECK_EQ_U64(t.entries, 1000);
    /* 200 of 1001 is below 20 % */
    CHECK(lookup_insert(&t, a) != NULL);
    a += 64;
    CHECK_EQ_U64(t.entries, 1001);
    CHECK(lookup_insert(&t, a) == NULL);
    CHECK(t.stopped == HB_STOP_ADAPTED);
    CHECK_EQ_U64(t.stopped_after_entries, 1001);
    hb_table_destroy(&t);

    /* One in four hot (25 %): never adapts. */
    CHECK(hb_table_init(&t, &p) == 0);
    int nulls = 0;
    for (int i = 0; i < 4000; i++) {
        struct hb_entry *e = lookup_insert(&t, BASE + 64 * (uintptr_t)i);
        if (!e)
            nulls++;
        else if (i % 4 == 0)
            hb_table_mark_hot(&t, e);
    }
    CHECK_EQ_U64(nulls, 0);
    CHECK(t.stopped == HB_GROWING);
    CHECK_EQ_U64(t.entries, 4000);
    CHECK_EQ_U64(t.hot_entries, 1000);
    hb_table_destroy(&t);
}

static void test_adapt_off(void)
{
    struct hb_table t;
    struct hb_table_params p = params(4, 1 << 20, 0);
    CHECK(hb_table_init(&t, &p) == 0);
    int nulls = 0;
    for (int i = 0; i < 5000; i++)
        nulls += lookup_insert(&t, BASE + 64 * (uintptr_t)i) == NULL;
    CHECK_EQ_U64(nulls, 0);
    CHECK(t.stopped == HB_GROWING);
    CHECK_EQ_U64(t.entries, 5000);
    CHECK(t.max_chain >= 5000 / 16);
    CHECK_EQ_U64(t.max_chain, real_max_chain(&t));
    hb_table_destroy(&t);

    /* adapt off still stops at max_entries */
    p.max_entries = 50;
    CHECK(hb_table_init(&t, &p) == 0);
    for (int i = 0; i < 60; i++)
        lookup_insert(&t, BASE + 64 * (uintptr_t)i);
    CHECK(t.stopped == HB_STOP_FULL);
    CHECK_EQ_U64(t.entries, 50);
    hb_table_destroy(&t);
}

/* ---- spread of the golden-ratio hash ------------------------------------------------ */

static void test_distribution(void)
{
    static const uintptr_t bases[] = {BASE, 0x555555558000ull,
                                      0x7ffc00000000ull, 0x10000000ull};
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
        struct hb_table t;
        struct hb_table_params p = params(20, 1 << 20, 0);
        CHECK(hb_table_init(&t, &p) == 0);
        int nulls = 0;
        for (uintptr_t i = 0; i < 100000; i++)
            nulls += lookup_insert(&t, bases[b] + 64 * i) == NULL;
        CHECK_EQ_U64(nulls, 0);
        CHECK_EQ_U64(t.entries, 100000);
        uint32_t real = real_max_chain(&t);
        if (real > 3)
            fprintf(stderr, "base 0x%llx: longest chain %u\n",
                    (unsigned long long)bases[b], real);
        CHECK(real <= 3);
        CHECK_EQ_U64(t.max_chain, real);
        hb_table_destroy(&t);
    }
}

int main(void)
{
    test_find_insert();
    test_chains();
    test_foreach();
    test_full();
    test_adapt_cold();
    test_adapt_hot();
    test_adapt_off();
    test_distribution();
    return CHECK_DONE();
}
