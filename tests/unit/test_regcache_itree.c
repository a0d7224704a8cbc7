/* Unit tests for the registration cache's building blocks: the interval
 * tree (against a brute-force array) and the lock-free invalidation queue
 * (single-threaded semantics and a multi-producer stress run). */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "regcache/interval_tree.h"
#include "regcache/inval_queue.h"
#include "check.h"

/* xorshift64*: deterministic, seedable, no global state in the library. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static uintptr_t rnd_below(uintptr_t n)
{
    return (uintptr_t)(rnd() % n);
}

/* ---- interval tree ---------------------------------------------------- */

#define NODES 600
#define SPACE 1000

struct model {
    struct hb_itree_node nodes[NODES];
    int in_tree[NODES];
};

static int covers(const struct hb_itree_node *n, uintptr_t s, uintptr_t e)
{
    return n->start <= s && n->end >= e;
}

static int overlaps(const struct hb_itree_node *n, uintptr_t s, uintptr_t e)
{
    return n->start < e && n->end > s;
}

static int node_index(struct model *m, const struct hb_itree_node *n)
{
    if (n < m->nodes || n >= m->nodes + NODES)
        return -1;
    return (int)(n - m->nodes);
}

struct visit_log {
    struct model *m;
    int seen[NODES];
    int count;
    uintptr_t last_start;
    int ordered;
};

static int log_visit(struct hb_itree_node *n, void *arg)
{
    struct visit_log *log = arg;
    int i = node_index(log->m, n);

    if (i < 0)
        return -1;
    if (log->count && n->start < log->last_start)
        log->ordered = 0;
    log->last_start = n->start;
    log->seen[i]++;
    log->count++;
    return 0;
}

static void check_queries(struct hb_itree *t, struct model *m, uintptr_t s,
                          uintptr_t e)
{
    struct hb_itree_node *c = hb_itree_find_covering(t, s, e);
    struct hb_itree_node *o = hb_itree_find_overlap(t, s, e);
    struct visit_log log;
    int i, any_cover = 0, n_over = 0, ok = 1;

    memset(&log, 0, sizeof(log));
    log.m = m;
    log.ordered = 1;
    for (i = 0; i < NODES; i++) {
        if (!m->in_tree[i])
            continue;
        any_cover |= covers(&m->nodes[i], s, e);
        n_over += overlaps(&m->nodes[i], s, e);
    }
    CHECK(any_cover == (c != NULL));
    if (c) {
        CHECK(node_index(m, c) >= 0 && m->in_tree[node_index(m, c)]);
        CHECK(covers(c, s, e));
    }
    CHECK((n_over > 0) == (o != NULL));
    if (o)
        CHECK(overlaps(o, s, e));
    CHECK(hb_itree_visit_overlaps(t, s, e, log_visit, &log) == 0);
    CHECK_EQ_U64(log.count, n_over);
    CHECK(log.ordered);
    for (i = 0; i < NODES; i++)
        if (log.seen[i] > 1 || (log.seen[i] && !m->in_tree[i]) ||
            (log.seen[i] == 0 && m->in_tree[i] && overlaps(&m->nodes[i], s, e)))
            ok = 0;
    CHECK(ok);
}

static void random_range(uintptr_t *s, uintptr_t *e, uintptr_t maxlen)
{
    *s = rnd_below(SPACE);
    *e = *s + 1 + rnd_below(maxlen);
}

static void test_itree_random(void)
{
    static struct model m;
    struct hb_itree t;
    int step, i;

    memset(&m, 0, sizeof(m));
    hb_itree_init(&t);
    for (step = 0; step < 20000; step++) {
        i = (int)rnd_below(NODES);
        if (m.in_tree[i]) {
            hb_itree_remove(&t, &m.nodes[i]);
            m.in_tree[i] = 0;
        } else {
            /* Mix short and long ranges; duplicates of start are common. */
            random_range(&m.nodes[i].start, &m.nodes[i].end,
                         rnd_below(4) ? 20 : 300);
            hb_itree_insert(&t, &m.nodes[i]);
            m.in_tree[i] = 1;
        }
        if (step % 7 == 0)
            CHECK(hb_itree_check(&t) == 0);
        if (step % 3 == 0) {
            uintptr_t s, e;

            random_range(&s, &e, rnd_below(2) ? 5 : 100);
            check_queries(&t, &m, s, e);
        }
    }
    CHECK(hb_itree_check(&t) == 0);
    for (i = 0; i < NODES; i++)
        if (m.in_tree[i])
            hb_itree_remove(&t, &m.nodes[i]);
    CHECK_EQ_U64(hb_itree_count(&t), 0);
    CHECK(hb_itree_any(&t) == NULL);
}

static void test_itree_empty_and_edges(void)
{
    struct hb_itree t;
    struct hb_itree_node a = {.start = 100, .end = 200};
    struct hb_itree_node b = {.start = 200, .end = 300};

    hb_itree_init(&t);
    CHECK(hb_itree_find_covering(&t, 0, 1) == NULL);
    CHECK(hb_itree_find_overlap(&t, 0, UINTPTR_MAX) == NULL);
    hb_itree_insert(&t, &a);
    hb_itree_insert(&t, &b);
    /* Half-open: touching ranges do not overlap. */
    CHECK(hb_itree_find_overlap(&t, 0, 100) == NULL);
    CHECK(hb_itree_find_overlap(&t, 300, 400) == NULL);
    CHECK(hb_itree_find_overlap(&t, 199, 200) == &a);
    CHECK(hb_itree_find_overlap(&t, 200, 201) == &b);
    CHECK(hb_itree_find_covering(&t, 100, 200) == &a);
    CHECK(hb_itree_find_covering(&t, 150, 250) == NULL); /* spans both */
    CHECK(hb_itree_find_covering(&t, 200, 300) == &b);
    hb_itree_remove(&t, &a);
    CHECK(hb_itree_find_overlap(&t, 100, 200) == NULL);
    CHECK(hb_itree_check(&t) == 0);
}

/* Sequential inserts are the worst case for an unbalanced tree. */
static void test_itree_balance(void)
{
    enum { N = 1 << 14 };
    static struct hb_itree_node nodes[N];
    struct hb_itree t;
    int i;

    hb_itree_init(&t);
    for (i = 0; i < N; i++) {
        nodes[i].start = (uintptr_t)i * 4096;
        nodes[i].end = nodes[i].start + 4096;
        hb_itree_insert(&t, &nodes[i]);
    }
    CHECK(hb_itree_check(&t) == 0);
    /* AVL height bound: < 1.45 log2(n + 2); log2(N) is 14 here. */
    CHECK(t.root->height <= 14 * 145 / 100 + 2);
    CHECK(hb_itree_find_covering(&t, 5000 * 4096 + 7, 5000 * 4096 + 9) ==
          &nodes[5000]);
    for (i = 0; i < N; i += 2)
        hb_itree_remove(&t, &nodes[i]);
    CHECK(hb_itree_check(&t) == 0);
    CHECK(hb_itree_find_overlap(&t, 4096 * 10, 4096 * 11) == NULL);
    CHECK(hb_itree_find_overlap(&t, 4096 * 11, 4096 * 12) == &nodes[11]);
}

/* ---- invalidation queue ---------------------------------------------- */

struct drained {
    uintptr_t start[512];
    uintptr_t end[512];
    int n;
    int everything;
    struct hb_invalq *q; /* for re-entrant pushes */
    int reenter;
};

static void record(void *arg, uintptr_t start, uintptr_t end)
{
    struct drained *d = arg;

    if (start == 0 && end == UINTPTR_MAX) {
        d->everything++;
        return;
    }
    if (d->n < 512) {
        d->start[d->n] = start;
        d->end[d->n] = end;
    }
    d->n++;
    if (d->reenter > 0) {
        d->reenter--;
        hb_invalq_push(d->q, 5000, 5001); /* as a hook fired from fn */
    }
}

static void test_invalq_basic(void)
{
    static struct hb_invalq q;
    struct drained d;

    memset(&d, 0, sizeof(d));
    hb_invalq_init(&q);
    hb_invalq_push(&q, 1500, 1600); /* nothing covered yet */
    CHECK_EQ_U64(atomic_load(&q.stat_filtered), 1);
    hb_invalq_cover(&q, 1000, 2000);
    hb_invalq_push(&q, 1500, 1600);
    hb_invalq_push(&q, 2000, 3000); /* touches, no overlap */
    hb_invalq_push(&q, 10, 1001);
    hb_invalq_push(&q, 7, 7); /* empty */
    CHECK_EQ_U64(hb_invalq_drain(&q, record, &d), 2);
    CHECK_EQ_U64(d.n, 2);
    CHECK(d.start[0] + d.start[1] == 1500 + 10);
    CHECK_EQ_U64(atomic_load(&q.stat_pushes), 5);
    CHECK_EQ_U64(atomic_load(&q.stat_filtered), 2);
    CHECK_EQ_U64(hb_invalq_drain(&q, record, &d), 0);
    CHECK_EQ_U64(atomic_load(&q.pending), 0);
}

static void test_invalq_overflow(void)
{
    static struct hb_invalq q;
    struct drained d;
    int i;

    memset(&d, 0, sizeof(d));
    hb_invalq_init(&q);
    hb_invalq_cover(&q, 0, 1 << 20);
    for (i = 0; i < HB_INVALQ_SLOTS + 72; i++)
        hb_invalq_push(&q, (uintptr_t)i * 10, (uintptr_t)i * 10 + 5);
    CHECK_EQ_U64(atomic_load(&q.stat_overflows), 72);
    CHECK_EQ_U64(hb_invalq_drain(&q, record, &d), HB_INVALQ_SLOTS + 72);
    CHECK_EQ_U64(d.n, HB_INVALQ_SLOTS);
    CHECK_EQ_U64(d.everything, 1); /* conservative: flush all, once */
    CHECK_EQ_U64(atomic_load(&q.pending), 0);
}

/* A hook fired while the consumer is inside fn must not be lost. */
static void test_invalq_reentrant(void)
{
    static struct hb_invalq q;
    struct drained d;

    memset(&d, 0, sizeof(d));
    hb_invalq_init(&q);
    hb_invalq_cover(&q, 0, 10000);
    d.q = &q;
    d.reenter = 3;
    hb_invalq_push(&q, 1, 2);
    hb_invalq_drain(&q, record, &d);
    hb_invalq_drain(&q, record, &d);
    hb_invalq_drain(&q, record, &d);
    hb_invalq_drain(&q, record, &d);
    CHECK_EQ_U64(d.n, 4);
    CHECK_EQ_U64(atomic_load(&q.pending), 0);
}

/* A producer preempted between claiming a slot and publishing it must not
 * hide pushes that completed after it (the multi-producer ring buffer
 * failure mode).  White-box: park slot 0 in the WRITING state. */
static void test_invalq_stalled_producer(void)
{
    static struct hb_invalq q;
    struct drained d;
    int i;

    memset(&d, 0, sizeof(d));
    hb_invalq_init(&q);
    hb_invalq_cover(&q, 0, 10000);
    atomic_store(&q.slots[0].state, 1); /* claimed, never published */
    atomic_fetch_add(&q.pending, 1);    /* as that producer did */
    for (i = 0; i < 3; i++)
        hb_invalq_push(&q, 100 + (uintptr_t)i, 101 + (uintptr_t)i);
    CHECK_EQ_U64(hb_invalq_drain(&q, record, &d), 3);
    CHECK_EQ_U64(d.n, 3);
    CHECK_EQ_U64(atomic_load(&q.pending), 1); /* the stalled one */
    q.slots[0].start = 7;                     /* it finally publishes */
    q.slots[0].end = 8;
    atomic_store(&q.slots[0].state, 2);
    CHECK_EQ_U64(hb_invalq_drain(&q, record, &d), 1);
    CHECK(d.n == 4 && d.start[3] == 7);
    CHECK_EQ_U64(atomic_load(&q.pending), 0);
}

#define PRODUCERS 4
#define PUSHES 50000

struct stress {
    struct hb_invalq q;
    atomic_int last_returned[PRODUCERS]; /* highest id whose push returned */
    unsigned char delivered[PRODUCERS][PUSHES];
    unsigned long everything;
    atomic_int stop;
};

struct producer_arg {
    struct stress *s;
    int id;
};

static void *producer(void *arg)
{
    struct producer_arg *pa = arg;
    int i;

    for (i = 0; i < PUSHES; i++) {
        uintptr_t start = ((uintptr_t)pa->id * PUSHES + (uintptr_t)i) * 2 + 2;

        hb_invalq_push(&pa->s->q, start, start + 1);
        atomic_store(&pa->s->last_returned[pa->id], i);
    }
    return NULL;
}

static void stress_record(void *arg, uintptr_t start, uintptr_t end)
{
    struct stress *s = arg;
    uintptr_t key;

    (void)end;
    if (start == 0) {
        s->everything++;
        return;
    }
    key = (start - 2) / 2;
    s->delivered[key / PUSHES][key % PUSHES]++;
}

/* Every push that returned before a drain started is delivered by that
 * drain, unless it overflowed (then a flush-everything covers it). */
static int returned_all_delivered(struct stress *s, const int *snap)
{
    unsigned long missing = 0;
    int p, i;

    for (p = 0; p < PRODUCERS; p++)
        for (i = 0; i <= snap[p]; i++)
            missing += s->delivered[p][i] == 0;
    return missing <= atomic_load(&s->q.stat_overflows) &&
           (missing == 0 || s->everything > 0);
}

static void test_invalq_stress(void)
{
    static struct stress s;
    struct producer_arg args[PRODUCERS];
    pthread_t th[PRODUCERS];
    int snap[PRODUCERS];
    int p, i, rounds = 0, ok = 1, dup = 0;

    memset(&s, 0, sizeof(s));
    hb_invalq_init(&s.q);
    hb_invalq_cover(&s.q, 0, UINTPTR_MAX);
    for (p = 0; p < PRODUCERS; p++) {
        atomic_init(&s.last_returned[p], -1);
        args[p].s = &s;
        args[p].id = p;
        pthread_create(&th[p], NULL, producer, &args[p]);
    }
    for (;;) {
        int done = 1;

        for (p = 0; p < PRODUCERS; p++) {
            snap[p] = atomic_load(&s.last_returned[p]);
            done &= snap[p] == PUSHES - 1;
        }
        hb_invalq_drain(&s.q, stress_record, &s);
        if (rounds++ % 64 == 0 && !returned_all_delivered(&s, snap))
            ok = 0;
        if (done)
            break;
    }
    for (p = 0; p < PRODUCERS; p++)
        pthread_join(th[p], NULL);
    hb_invalq_drain(&s.q, stress_record, &s);
    CHECK(ok);
    CHECK(returned_all_delivered(&s, snap));
    for (p = 0; p < PRODUCERS; p++)
        for (i = 0; i < PUSHES; i++)
            dup += s.delivered[p][i] > 1;
    CHECK_EQ_U64(dup, 0);
    CHECK_EQ_U64(atomic_load(&s.q.pending), 0);
}

int main(void)
{
    test_itree_empty_and_edges();
    test_itree_random();
    test_itree_balance();
    test_invalq_basic();
    test_invalq_overflow();
    test_invalq_reentrant();
    test_invalq_stalled_producer();
    test_invalq_stress();
    return CHECK_DONE();
}
