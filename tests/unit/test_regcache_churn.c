/* Unit tests for regcache/regcache_churn.c, driven through a real
 * registration cache (regcache/regcache.c) over a counting mock of
 * reg/dereg: memory that stays mapped registers once and is never
 * skipped; memory unmapped after every use (hb_regcache_invalidate, as
 * the memory monitor does at munmap) registers a handful of times in a
 * thousand tries instead of every time; memory that churned once is
 * skipped for 16 tries and then stands again; a registration that grew
 * (merged into a longer one) is not churn; two addresses of one slot
 * forget each other.  Also the cache's serials: the same on a hit,
 * a new one after an invalidation. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "regcache/regcache.h"
#include "regcache/regcache_churn.h"
#include "util/hash.h"

static size_t reg_calls;

static int mock_reg(void *ctx, void *addr, size_t len, void **handle)
{
    (void)ctx, (void)addr, (void)len;
    *handle = (void *)++reg_calls;
    return 0;
}

static void mock_dereg(void *ctx, void *handle)
{
    (void)ctx, (void)handle;
}

static struct hb_regcache *cache(void)
{
    static const struct hb_regcache_ops ops = {mock_reg, mock_dereg};
    struct hb_regcache *rc = NULL;
    CHECK(hb_regcache_create(&ops, NULL, 0, 0, &rc) == 0);
    return rc;
}

/* One use of the buffer at addr the way the point-to-point path does it:
 * ask, register and note, or skip.  Returns 1 when it registered. */
static int use(struct hb_regcache *rc, struct hb_churn *c, uintptr_t addr,
               size_t len, int unmap_after)
{
    struct hb_region *r;
    if (!hb_churn_try(c, (void *)addr))
        return 0;
    CHECK(hb_regcache_get(rc, (void *)addr, len, &r) == 0);
    hb_churn_note(c, (void *)addr, hb_region_serial(r), hb_region_len(r));
    hb_regcache_put(rc, r);
    if (unmap_after)
        hb_regcache_invalidate(rc, (void *)addr, len);
    return 1;
}

static void test_serials(void)
{
    struct hb_regcache *rc = cache();
    struct hb_region *a, *b, *c;
    void *p = (void *)((uintptr_t)1 << 32);
    CHECK(hb_regcache_get(rc, p, 4096, &a) == 0);
    CHECK(hb_regcache_get(rc, p, 100, &b) == 0); /* a hit */
    CHECK(a == b);
    CHECK_EQ_U64(hb_region_serial(a), hb_region_serial(b));
    uint64_t first = hb_region_serial(a);
    hb_regcache_put(rc, a);
    hb_regcache_put(rc, b);
    hb_regcache_invalidate(rc, p, 4096);
    CHECK(hb_regcache_get(rc, p, 4096, &c) == 0);
    CHECK(hb_region_serial(c) != first);
    hb_regcache_put(rc, c);
    hb_regcache_destroy(rc);
}

static void test_stable(void)
{
    static struct hb_churn c;
    struct hb_regcache *rc = cache();
    size_t before = reg_calls, used = 0;
    for (int i = 0; i < 1000; i++)
        used += (size_t)use(rc, &c, (uintptr_t)1 << 33, 16384, 0);
    CHECK_EQ_U64(used, 1000);            /* never skipped */
    CHECK_EQ_U64(reg_calls - before, 1); /* registered once */
    hb_regcache_destroy(rc);
}

/* Registered at tries 1, 2, 19, 84, 341 (skips 16, 64, 256, then 1024
 * each): 5 registrations in 1000 tries where every one registered
 * before. */
static void test_always_fresh(void)
{
    static struct hb_churn c;
    struct hb_regcache *rc = cache();
    size_t before = reg_calls, used = 0;
    for (int i = 0; i < 1000; i++)
        used += (size_t)use(rc, &c, (uintptr_t)1 << 34, 16384, 1);
    CHECK_EQ_U64(used, 5);
    CHECK_EQ_U64(reg_calls - before, 5);
    hb_regcache_destroy(rc);
}

/* Unmapped once: skipped 16 tries, then its registration stands again
 * and it is never skipped after (the level starts over). */
static void test_churned_once(void)
{
    static struct hb_churn c;
    struct hb_regcache *rc = cache();
    uintptr_t a = (uintptr_t)1 << 35;
    CHECK(use(rc, &c, a, 8192, 1)); /* registered, then unmapped */
    CHECK(use(rc, &c, a, 8192, 0)); /* a new registration: level 1 */
    int skipped = 0;
    for (int i = 0; i < 16; i++)
        skipped += !use(rc, &c, a, 8192, 0);
    CHECK_EQ_U64(skipped, 16);
    for (int i = 0; i < 100; i++)
        CHECK(use(rc, &c, a, 8192, 0)); /* the same registration */
    CHECK(use(rc, &c, a, 8192, 1));     /* unmapped once more */
    CHECK(use(rc, &c, a, 8192, 0));     /* level 1 again, not 2 */
    skipped = 0;
    for (int i = 0; i < 17; i++)
        skipped += !use(rc, &c, a, 8192, 0);
    CHECK_EQ_U64(skipped, 16);
    hb_regcache_destroy(rc);
}

/* Two addresses of the same slot: the second pushes the first out, which
 * then starts over (never skipped on its first try). */
static void test_collision(void)
{
    static struct hb_churn c;
    uintptr_t a = (uintptr_t)1 << 36, b = a;
    uint64_t slot = hb_hash_golden(a, HB_CHURN_BITS);
    do
        b += 4096;
    while (hb_hash_golden(b, HB_CHURN_BITS) != slot);
    hb_churn_note(&c, (void *)a, 1, 4096);
    hb_churn_note(&c, (void *)a, 2, 4096); /* churned: skip 16 */
    CHECK(!hb_churn_try(&c, (void *)a));
    hb_churn_note(&c, (void *)b, 7, 4096); /* b takes the slot */
    CHECK(hb_churn_try(&c, (void *)a));
    CHECK(hb_churn_try(&c, (void *)b));
}

/* A longer use of the same buffer: the cache merges the old registration
 * into a longer one (a new serial), which is growth, not churn; the same
 * length again after an unmap is churn. */
static void test_growth(void)
{
    static struct hb_churn c;
    struct hb_regcache *rc = cache();
    uintptr_t a = (uintptr_t)1 << 37;
    CHECK(use(rc, &c, a, 1024, 0));  /* one page */
    CHECK(use(rc, &c, a, 32768, 0)); /* eight: merged, a new serial */
    CHECK(use(rc, &c, a, 32768, 1)); /* a hit; then unmapped */
    CHECK(use(rc, &c, a, 32768, 0)); /* the same length anew: churn */
    CHECK(!use(rc, &c, a, 32768, 0));
    hb_regcache_destroy(rc);
}

int main(void)
{
    test_serials();
    test_stable();
    test_always_fresh();
    test_churned_once();
    test_collision();
    test_growth();
    return CHECK_DONE();
}
