/* Unit tests for the fixed-size object pool (shim/util/pool.c): zeroed
 * objects, alignment, reuse of put-back objects, growth across chunks, the
 * max_objs cap, the memory figure, and foreach's contract (only for pools
 * that never put back); plus the small util helpers (why, memlock split). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/memlock.h"
#include "util/pool.h"
#include "util/why.h"

struct obj {
    uint64_t a;
    char name[13]; /* 21 bytes: rounded up to 24 */
};

static void count_one(void *obj, void *ctx)
{
    (void)obj;
    (*(size_t *)ctx)++;
}

static int all_zero(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i])
            return 0;
    return 1;
}

static void test_init(void)
{
    struct hb_pool p;
    CHECK(hb_pool_init(&p, 0, 16, 0) == -1);
    CHECK(hb_pool_init(&p, 8, 0, 0) == -1);
    CHECK(hb_pool_init(&p, 1, 16, 0) == 0);
    CHECK_EQ_U64(p.obj_size, sizeof(void *)); /* room for the free-list link */
    CHECK_EQ_U64(hb_pool_memory(&p),
                 0); /* nothing mapped before the first get */
    hb_pool_destroy(&p);
}

/* Objects are zeroed, 8-byte aligned, distinct, and spread over chunks. */
static void test_get_grow(void)
{
    enum { PER = 10, N = 35 };
    struct hb_pool p;
    struct obj *o[N];
    CHECK(hb_pool_init(&p, sizeof(struct obj), PER, 0) == 0);
    CHECK_EQ_U64(p.obj_size, 24);
    for (int i = 0; i < N; i++) {
        o[i] = hb_pool_get(&p);
        CHECK(o[i] != NULL);
        if (!o[i])
            return;
        CHECK(all_zero(o[i], sizeof(*o[i])));
        CHECK(((uintptr_t)o[i] & 7) == 0);
        memset(o[i], 0xa5, sizeof(*o[i]));
        o[i]->a = (uint64_t)i;
    }
    for (int i = 0; i < N; i++)
        CHECK_EQ_U64(o[i]->a, i); /* no two objects overlap */
    CHECK_EQ_U64(p.live, N);
    CHECK_EQ_U64(p.nchunks, (N + PER - 1) / PER);
    CHECK(hb_pool_memory(&p) >= (size_t)p.nchunks * PER * p.obj_size);
    size_t seen = 0;
    CHECK(hb_pool_foreach(&p, count_one, &seen) == 0);
    CHECK_EQ_U64(seen, N);
    hb_pool_destroy(&p);
    CHECK_EQ_U64(hb_pool_memory(&p), 0);
}

/* Put-back objects come back first (LIFO), zeroed; no new chunk meanwhile. */
static void test_put_reuse(void)
{
    struct hb_pool p;
    CHECK(hb_pool_init(&p, sizeof(struct obj), 4, 0) == 0);
    struct obj *a = hb_pool_get(&p), *b = hb_pool_get(&p), *c = hb_pool_get(&p);
    CHECK(a && b && c);
    if (!a || !b || !c)
        return;
    memset(b, 0xff, sizeof(*b));
    memset(c, 0xff, sizeof(*c));
    hb_pool_put(&p, b);
    hb_pool_put(&p, c);
    CHECK_EQ_U64(p.live, 1);
    struct obj *x = hb_pool_get(&p), *y = hb_pool_get(&p);
    CHECK(x == c && y == b);
    CHECK(all_zero(x, sizeof(*x)) && all_zero(y, sizeof(*y)));
    CHECK_EQ_U64(p.nchunks, 1);
    size_t seen = 0;
    CHECK(hb_pool_foreach(&p, count_one, &seen) ==
          -1); /* puts happened: refused */
    CHECK_EQ_U64(seen, 0);
    /* many get/put cycles: the pool does not grow */
    for (int i = 0; i < 1000; i++)
        hb_pool_put(&p, hb_pool_get(&p));
    CHECK_EQ_U64(p.nchunks, 1);
    CHECK_EQ_U64(p.live, 3);
    hb_pool_destroy(&p);
}

/* max_objs bounds the live objects, not the objects ever made. */
static void test_cap(void)
{
    struct hb_pool p;
    void *o[5];
    CHECK(hb_pool_init(&p, 16, 2, 5) == 0);
    for (int i = 0; i < 5; i++)
        CHECK((o[i] = hb_pool_get(&p)) != NULL);
    CHECK(hb_pool_get(&p) == NULL);
    hb_pool_put(&p, o[2]);
    void *again = hb_pool_get(&p);
    CHECK(again == o[2]);
    CHECK(hb_pool_get(&p) == NULL);
    hb_pool_destroy(&p);
}

static void test_why(void)
{
    char buf[16] = "old";
    hb_why(buf, sizeof(buf), "a %d", 1);
    CHECK_STR(buf, "a 1");
    hb_why_append(buf, sizeof(buf), "; b %s", "two");
    CHECK_STR(buf, "a 1; b two");
    hb_why_append(buf, sizeof(buf), "%s", "-overflowing");
    CHECK_EQ_U64(strlen(buf), sizeof(buf) - 1); /* truncated, terminated */
    hb_why(NULL, 0, "ignored %d", 2);           /* the caller wants no reason */
    hb_why_append(buf, 0, "ignored");
}

/* The cache and the transport share hotbuf's part of RLIMIT_MEMLOCK
 * without overlap, hotbuf never claims more than half (the rest is the
 * MPI's own: issue 11, defect 13), and the transport's hint is a limit
 * whose share really holds its bytes. */
static void test_memlock_split(void)
{
    size_t limits[] = {1, 4096, 65536, 320 * 1024, 8u << 20, 1u << 30};
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        size_t l = limits[i], hb = hb_memlock_hotbuf_share(l);
        CHECK(hb_memlock_cache_share(l) + hb_memlock_transport_share(l) == hb);
        CHECK(hb <= l / 2); /* the MPI keeps half */
        CHECK_EQ_U64(hb_memlock_transport_share(l), l / 8);
        CHECK(hb_memlock_cache_share(l) <= l / 8 * 3);
    }
    CHECK_EQ_U64(hb_memlock_cache_share(8u << 20), 3u << 20);
    CHECK_EQ_U64(hb_memlock_cache_share(0), 0); /* no limit: no cap */
    CHECK_EQ_U64(hb_memlock_hotbuf_share(0), 0);
    size_t pinned = 40 * 1024, need = hb_memlock_limit_for_transport(pinned);
    CHECK_EQ_U64(need, 320 * 1024);
    CHECK(hb_memlock_transport_share(need) >= pinned);
    CHECK(hb_memlock_transport_share(need - 4096) < pinned);
}

int main(void)
{
    test_init();
    test_get_grow();
    test_put_reuse();
    test_cap();
    test_why();
    test_memlock_split();
    return CHECK_DONE();
}
