/* Unit tests for the registration cache (regcache/regcache.c).
 *
 * The reg/dereg callbacks are a mock that records every call, can be told
 * to fail (a memlock limit in bytes, or the next N calls with an errno),
 * can fire hb_regcache_invalidate() from inside reg or dereg (a memory
 * hook running on the thread that holds the cache lock), and flags any
 * deregistration of a region the test still holds.  Addresses are fake:
 * the cache never touches the memory it registers.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regcache/regcache.h"
#include "check.h"

static uintptr_t PG; /* page size, set in main */
#define BASE ((uintptr_t)1 << 32)
#define MOCK_CAP (1u << 18)

/* ---- mock registration ---------------------------------------------- */

struct mock_reg {
    uintptr_t addr;
    size_t len;
    int live;
    uint64_t reg_time; /* model clock when reg was called */
};

struct mock {
    struct mock_reg *regs; /* handle h is regs[h - 1] */
    atomic_int *held;      /* references the test holds, per handle */
    size_t nregs;
    size_t live_count, live_bytes;
    size_t reg_calls, dereg_calls;
    size_t bad_deregs; /* unknown, double or still-held handle */
    size_t memlock;    /* fail with -ENOMEM beyond this; 0 = no limit */
    int fail_err;      /* fail the next fail_count calls with this */
    int fail_count;
    int destroying;       /* destroy may release held regions */
    size_t dereg_log[64]; /* handles in dereg order (first 64) */
    /* Memory-hook simulation. */
    struct hb_regcache *rc;
    int reg_hook_count;      /* invalidate the range being registered */
    uintptr_t reg_hook_addr; /* ... or this range if reg_hook_len != 0 */
    size_t reg_hook_len;
    uintptr_t dereg_hook_addr; /* invalidate this range from dereg */
    size_t dereg_hook_len;
    /* Model clock for the coherence invariant. */
    atomic_ulong clock;
    void (*on_invalidate)(struct mock *m, uintptr_t addr, size_t len,
                          uint64_t when);
};

static void mock_init(struct mock *m)
{
    memset(m, 0, sizeof(*m));
    m->regs = calloc(MOCK_CAP, sizeof(*m->regs));
    m->held = calloc(MOCK_CAP + 1, sizeof(*m->held));
    if (!m->regs || !m->held)
        abort();
}

static void mock_fini(struct mock *m)
{
    free(m->regs);
    free(m->held);
}

/* Invalidates through the cache and tells the model when it happened. */
static void mock_invalidate(struct mock *m, uintptr_t addr, size_t len)
{
    uint64_t when = atomic_fetch_add(&m->clock, 1) + 1;

    if (m->on_invalidate)
        m->on_invalidate(m, addr, len, when);
    hb_regcache_invalidate(m->rc, (void *)addr, len);
}

static size_t handle_of(const void *handle)
{
    return (size_t)(uintptr_t)handle;
}

static int mock_reg(void *ctx, void *addr, size_t len, void **handle)
{
    struct mock *m = ctx;
    struct mock_reg *r;
    uint64_t now = atomic_fetch_add(&m->clock, 1) + 1;

    m->reg_calls++;
    if (m->reg_hook_count > 0) {
        m->reg_hook_count--;
        if (m->reg_hook_len)
            mock_invalidate(m, m->reg_hook_addr, m->reg_hook_len);
        else
            mock_invalidate(m, (uintptr_t)addr + len / 2, 1);
    }
    if (m->fail_count > 0) {
        m->fail_count--;
        return m->fail_err;
    }
    if (m->memlock && m->live_bytes + len > m->memlock)
        return -ENOMEM;
    if (m->nregs == MOCK_CAP)
        abort();
    r = &m->regs[m->nregs++];
    r->addr = (uintptr_t)addr;
    r->len = len;
    r->live = 1;
    r->reg_time = now;
    m->live_count++;
    m->live_bytes += len;
    *handle = (void *)(uintptr_t)m->nregs;
    return 0;
}

static void mock_dereg(void *ctx, void *handle)
{
    struct mock *m = ctx;
    size_t h = handle_of(handle);

    if (m->dereg_calls < 64)
        m->dereg_log[m->dereg_calls] = h;
    m->dereg_calls++;
    if (h == 0 || h > m->nregs || !m->regs[h - 1].live ||
        (atomic_load(&m->held[h]) > 0 && !m->destroying)) {
        m->bad_deregs++;
        return;
    }
    m->regs[h - 1].live = 0;
    m->live_count--;
    m->live_bytes -= m->regs[h - 1].len;
    if (m->dereg_hook_len) {
        uintptr_t a = m->dereg_hook_addr;

        m->dereg_hook_len = 0;
        mock_invalidate(m, a, PG);
    }
}

static const struct hb_regcache_ops mock_ops = {mock_reg, mock_dereg};

static struct hb_regcache *make_cache(struct mock *m, size_t max_entries,
                                      size_t max_bytes)
{
    struct hb_regcache *rc = NULL;

    mock_init(m);
    CHECK(hb_regcache_create(&mock_ops, m, max_entries, max_bytes, &rc) == 0);
    m->rc = rc;
    return rc;
}

static struct mock_reg *reg_of(struct mock *m, const struct hb_region *r)
{
    return &m->regs[handle_of(hb_region_handle(r)) - 1];
}

/* get + bookkeeping + the checks every successful get must pass. */
static int acquire(struct mock *m, uintptr_t addr, size_t len,
                   struct hb_region **out)
{
    struct hb_region *r = NULL;
    int err = hb_regcache_get(m->rc, (void *)addr, len, &r);
    uintptr_t ra;

    if (err)
        return err;
    ra = (uintptr_t)hb_region_addr(r);
    CHECK(ra <= addr && ra + hb_region_len(r) >= addr + len);
    CHECK(ra % PG == 0 && hb_region_len(r) % PG == 0);
    CHECK(reg_of(m, r)->live);
    CHECK(reg_of(m, r)->addr == ra && reg_of(m, r)->len == hb_region_len(r));
    atomic_fetch_add(&m->held[handle_of(hb_region_handle(r))], 1);
    *out = r;
    return 0;
}

static struct hb_region *acquire_ok(struct mock *m, uintptr_t addr, size_t len)
{
    struct hb_region *r = NULL;

    CHECK(acquire(m, addr, len, &r) == 0);
    return r;
}

static void release(struct mock *m, struct hb_region *r)
{
    atomic_fetch_sub(&m->held[handle_of(hb_region_handle(r))], 1);
    hb_regcache_put(m->rc, r);
}

/* Registers [addr, addr+len) and leaves it cached but idle. */
static size_t cache_idle(struct mock *m, uintptr_t addr, size_t len)
{
    struct hb_region *r = acquire_ok(m, addr, len);
    size_t h = handle_of(hb_region_handle(r));

    release(m, r);
    return h;
}

static struct hb_regcache_stats stats_of(struct mock *m)
{
    struct hb_regcache_stats s;

    hb_regcache_stats(m->rc, &s);
    return s;
}

/* Destroys the cache and checks every reg was matched by one dereg. */
static void finish(struct mock *m)
{
    m->destroying = 1;
    hb_regcache_destroy(m->rc);
    CHECK_EQ_U64(m->dereg_calls, m->nregs);
    CHECK_EQ_U64(m->live_count, 0);
    CHECK_EQ_U64(m->live_bytes, 0);
    CHECK_EQ_U64(m->bad_deregs, 0);
    mock_fini(m);
}

/* ---- lookups ---------------------------------------------------------- */

static void test_exact_hit(void)
{
    struct mock m;
    struct hb_regcache_stats s;
    struct hb_region *r1, *r2;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    r1 = acquire_ok(&m, a, 100);
    release(&m, r1);
    r2 = acquire_ok(&m, a, 100);
    CHECK(r1 == r2);
    CHECK_EQ_U64(m.reg_calls, 1);
    CHECK(m.regs[0].addr == a && m.regs[0].len == PG);
    CHECK_EQ_U64(m.dereg_calls, 0); /* lazy: put does not deregister */
    s = stats_of(&m);
    CHECK_EQ_U64(s.hits, 1);
    CHECK_EQ_U64(s.misses, 1);
    CHECK_EQ_U64(s.entries, 1);
    CHECK_EQ_U64(s.in_use, 1);
    CHECK_EQ_U64(s.pinned_bytes, PG);
    release(&m, r2);
    CHECK_EQ_U64(stats_of(&m).in_use, 0);
    finish(&m);
}

static void test_containment_hit(void)
{
    struct mock m;
    struct hb_region *r1, *r2, *r3;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    r1 = acquire_ok(&m, a, 4 * PG);
    r2 = acquire_ok(&m, a + PG + 10, 100); /* inside, while held */
    r3 = acquire_ok(&m, a + 3 * PG, PG);   /* last page exactly */
    CHECK(r1 == r2 && r1 == r3);
    CHECK_EQ_U64(m.reg_calls, 1);
    CHECK_EQ_U64(stats_of(&m).hits, 2);
    release(&m, r1);
    release(&m, r2);
    release(&m, r3);
    CHECK_EQ_U64(stats_of(&m).in_use, 0);
    finish(&m);
}

static void test_page_alignment(void)
{
    struct mock m;
    struct hb_region *r;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    r = acquire_ok(&m, a + 100, 10);
    CHECK((uintptr_t)hb_region_addr(r) == a && hb_region_len(r) == PG);
    release(&m, r);
    /* Two bytes straddling a page boundary need two pages; the new
     * registration absorbs the overlapping one-page region. */
    r = acquire_ok(&m, a + PG - 1, 2);
    CHECK((uintptr_t)hb_region_addr(r) == a && hb_region_len(r) == 2 * PG);
    CHECK(m.regs[1].addr == a && m.regs[1].len == 2 * PG);
    CHECK_EQ_U64(m.dereg_calls, 1);
    CHECK_EQ_U64(stats_of(&m).merges, 1);
    release(&m, r);
    /* The last byte of the next page: adjacent, so a separate region. */
    r = acquire_ok(&m, a + 3 * PG - 1, 1);
    CHECK((uintptr_t)hb_region_addr(r) == a + 2 * PG);
    CHECK(hb_region_len(r) == PG);
    CHECK_EQ_U64(stats_of(&m).entries, 2);
    release(&m, r);
    finish(&m);
}

static void test_bad_arguments(void)
{
    struct mock m;
    struct hb_region *r = NULL;
    struct hb_regcache *rc2 = NULL;
    struct hb_regcache_ops no_dereg = {mock_reg, NULL};

    make_cache(&m, 0, 0);
    CHECK(hb_regcache_get(m.rc, (void *)BASE, 0, &r) == -EINVAL);
    CHECK(hb_regcache_get(m.rc, (void *)(UINTPTR_MAX - 10), 100, &r) ==
          -EINVAL);
    CHECK(hb_regcache_get(m.rc, (void *)(UINTPTR_MAX - 10), 5, &r) ==
          -EINVAL); /* page round-up wraps */
    CHECK_EQ_U64(stats_of(&m).failures, 3);
    CHECK_EQ_U64(m.reg_calls, 0);
    CHECK(hb_regcache_create(&no_dereg, &m, 0, 0, &rc2) == -EINVAL);
    CHECK(hb_regcache_create(NULL, &m, 0, 0, &rc2) == -EINVAL);
    finish(&m);
}

/* ---- overlap and merging --------------------------------------------- */

static void test_partial_overlap_idle(void)
{
    struct mock m;
    struct hb_region *r;
    struct hb_regcache_stats s;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    cache_idle(&m, a, 2 * PG);
    r = acquire_ok(&m, a + PG, 2 * PG);
    CHECK((uintptr_t)hb_region_addr(r) == a && hb_region_len(r) == 3 * PG);
    CHECK_EQ_U64(m.dereg_log[0], 1); /* the absorbed region */
    s = stats_of(&m);
    CHECK_EQ_U64(s.misses, 2);
    CHECK_EQ_U64(s.merges, 1);
    CHECK_EQ_U64(s.entries, 1);
    CHECK_EQ_U64(s.pinned_bytes, 3 * PG);
    release(&m, r);
    finish(&m);
}

static void test_partial_overlap_held(void)
{
    struct mock m;
    struct hb_region *r1, *r2, *r3;
    size_t h1;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    r1 = acquire_ok(&m, a, 2 * PG);
    h1 = handle_of(hb_region_handle(r1));
    r2 = acquire_ok(&m, a + PG, 2 * PG);
    CHECK(r2 != r1);
    CHECK((uintptr_t)hb_region_addr(r2) == a && hb_region_len(r2) == 3 * PG);
    CHECK_EQ_U64(m.dereg_calls, 0); /* r1 is still in use */
    CHECK_EQ_U64(stats_of(&m).entries, 2);
    CHECK_EQ_U64(stats_of(&m).pinned_bytes, 5 * PG);
    r3 = acquire_ok(&m, a, PG); /* served by r2, not r1 */
    CHECK(r3 == r2);
    release(&m, r1); /* retired: dereg now */
    CHECK_EQ_U64(m.dereg_calls, 1);
    CHECK_EQ_U64(m.dereg_log[0], h1);
    release(&m, r2);
    release(&m, r3);
    CHECK_EQ_U64(m.dereg_calls, 1); /* r2 stays cached */
    CHECK_EQ_U64(stats_of(&m).entries, 1);
    finish(&m);
}

static void test_adjacent_ranges(void)
{
    struct mock m;
    struct hb_region *r;
    struct hb_regcache_stats s;
    uintptr_t a = BASE + 16 * PG;
    size_t h1, h2;

    make_cache(&m, 0, 0);
    h1 = cache_idle(&m, a, PG);
    h2 = cache_idle(&m, a + PG, PG);
    CHECK(h1 != h2);
    s = stats_of(&m);
    CHECK_EQ_U64(s.entries, 2);
    CHECK_EQ_U64(s.merges, 0);
    /* A request spanning both absorbs both. */
    r = acquire_ok(&m, a + PG - 8, 16);
    CHECK((uintptr_t)hb_region_addr(r) == a && hb_region_len(r) == 2 * PG);
    s = stats_of(&m);
    CHECK_EQ_U64(s.merges, 2);
    CHECK_EQ_U64(s.entries, 1);
    CHECK_EQ_U64(m.dereg_calls, 2);
    release(&m, r);
    r = acquire_ok(&m, a + PG / 2, PG);
    CHECK_EQ_U64(stats_of(&m).hits, 1);
    release(&m, r);
    finish(&m);
}

/* ---- caps and eviction ----------------------------------------------- */

static void test_in_use_never_evicted(void)
{
    struct mock m;
    struct hb_region *r1, *r2, *r3 = NULL;
    size_t h1;

    make_cache(&m, 2, 0);
    r1 = acquire_ok(&m, BASE, PG);
    r2 = acquire_ok(&m, BASE + 4 * PG, PG);
    h1 = handle_of(hb_region_handle(r1));
    CHECK(acquire(&m, BASE + 8 * PG, PG, &r3) == -ENOSPC);
    CHECK_EQ_U64(m.dereg_calls, 0);
    CHECK_EQ_U64(stats_of(&m).failures, 1);
    release(&m, r1);
    r3 = acquire_ok(&m, BASE + 8 * PG, PG); /* evicts the idle r1 */
    CHECK_EQ_U64(m.dereg_calls, 1);
    CHECK_EQ_U64(m.dereg_log[0], h1);
    CHECK_EQ_U64(stats_of(&m).evictions, 1);
    CHECK(reg_of(&m, r2)->live);
    release(&m, r2);
    release(&m, r3);
    finish(&m);
}

static void test_lru_max_entries(void)
{
    struct mock m;
    size_t ha, hb, hc;

    make_cache(&m, 3, 0);
    ha = cache_idle(&m, BASE, PG);
    hb = cache_idle(&m, BASE + 2 * PG, PG);
    hc = cache_idle(&m, BASE + 4 * PG, PG);
    cache_idle(&m, BASE, PG); /* touch A: LRU order is now B, C, A */
    CHECK_EQ_U64(stats_of(&m).hits, 1);
    cache_idle(&m, BASE + 6 * PG, PG);
    CHECK_EQ_U64(m.dereg_calls, 1);
    CHECK_EQ_U64(m.dereg_log[0], hb);
    cache_idle(&m, BASE + 8 * PG, PG);
    CHECK_EQ_U64(m.dereg_log[1], hc);
    cache_idle(&m, BASE, PG); /* A survived both evictions */
    CHECK(m.regs[ha - 1].live);
    CHECK_EQ_U64(stats_of(&m).hits, 2);
    CHECK_EQ_U64(stats_of(&m).evictions, 2);
    CHECK_EQ_U64(stats_of(&m).entries, 3);
    finish(&m);
}

static void test_lru_max_bytes(void)
{
    struct mock m;
    struct hb_region *r = NULL;
    size_t ha, hb, hc, hd;

    make_cache(&m, 0, 4 * PG);
    ha = cache_idle(&m, BASE, 2 * PG);
    hb = cache_idle(&m, BASE + 4 * PG, PG);
    hc = cache_idle(&m, BASE + 6 * PG, PG);
    CHECK_EQ_U64(stats_of(&m).pinned_bytes, 4 * PG);
    cache_idle(&m, BASE + 4 * PG, PG); /* touch B: order A, C, B */
    hd = cache_idle(&m, BASE + 8 * PG, PG);
    CHECK_EQ_U64(m.dereg_log[0], ha); /* oldest goes first */
    CHECK_EQ_U64(stats_of(&m).pinned_bytes, 3 * PG);
    cache_idle(&m, BASE + 10 * PG, 2 * PG); /* order C, B, D: C goes */
    CHECK_EQ_U64(m.dereg_calls, 2);
    CHECK_EQ_U64(m.dereg_log[1], hc);
    CHECK(m.regs[hb - 1].live && m.regs[hd - 1].live);
    CHECK_EQ_U64(stats_of(&m).pinned_bytes, 4 * PG);
    CHECK(acquire(&m, BASE + 20 * PG, 5 * PG, &r) == -E2BIG);
    CHECK_EQ_U64(m.dereg_calls, 2); /* a hopeless request evicts nothing */
    finish(&m);
}

/* A union larger than max_bytes is not attempted: the request alone is. */
static void test_merge_respects_max_bytes(void)
{
    struct mock m;
    struct hb_region *r;
    struct hb_regcache_stats s;

    make_cache(&m, 0, 4 * PG);
    cache_idle(&m, BASE, 3 * PG);
    r = acquire_ok(&m, BASE + 2 * PG, 3 * PG); /* union would be 5 pages */
    CHECK((uintptr_t)hb_region_addr(r) == BASE + 2 * PG);
    CHECK(hb_region_len(r) == 3 * PG);
    s = stats_of(&m);
    CHECK_EQ_U64(s.merges, 0);
    CHECK_EQ_U64(s.evictions, 1); /* the old region made room */
    CHECK_EQ_U64(s.pinned_bytes, 3 * PG);
    release(&m, r);
    finish(&m);
}

/* ---- registration failures ------------------------------------------- */

static void test_reg_fail_evict_retry(void)
{
    struct mock m;
    struct hb_region *r;
    struct hb_regcache_stats s;
    size_t ha, hb, hc;

    make_cache(&m, 0, 0);
    m.memlock = 3 * PG;
    ha = cache_idle(&m, BASE, PG);
    hb = cache_idle(&m, BASE + 2 * PG, PG);
    hc = cache_idle(&m, BASE + 4 * PG, PG);
    r = acquire_ok(&m, BASE + 8 * PG, 2 * PG); /* ENOMEM, evict 2, retry */
    s = stats_of(&m);
    CHECK_EQ_U64(s.reg_failures, 1);
    CHECK_EQ_U64(s.evictions, 2);
    CHECK_EQ_U64(s.failures, 0);
    CHECK_EQ_U64(m.dereg_log[0], ha);
    CHECK_EQ_U64(m.dereg_log[1], hb);
    CHECK(m.regs[hc - 1].live);
    release(&m, r);
    cache_idle(&m, BASE + 4 * PG, PG);
    CHECK_EQ_U64(stats_of(&m).hits, 1);
    finish(&m);
}

static void test_reg_fail_all_in_use(void)
{
    struct mock m;
    struct hb_region *r1, *r2, *r3 = NULL;
    struct hb_regcache_stats s;

    make_cache(&m, 0, 0);
    m.memlock = 2 * PG;
    r1 = acquire_ok(&m, BASE, PG);
    r2 = acquire_ok(&m, BASE + 2 * PG, PG);
    CHECK(acquire(&m, BASE + 4 * PG, PG, &r3) == -ENOMEM);
    s = stats_of(&m);
    CHECK_EQ_U64(s.failures, 1);
    CHECK_EQ_U64(s.reg_failures, 1);
    CHECK_EQ_U64(s.entries, 2);
    CHECK_EQ_U64(m.dereg_calls, 0);
    release(&m, r1);
    r3 = acquire_ok(&m, BASE + 4 * PG, PG);
    CHECK_EQ_U64(m.dereg_calls, 1);
    release(&m, r2);
    release(&m, r3);
    finish(&m);
}

/* Errors that eviction cannot fix are returned without evicting. */
static void test_reg_fail_hard_error(void)
{
    struct mock m;
    struct hb_region *r = NULL;

    make_cache(&m, 0, 0);
    cache_idle(&m, BASE, PG);
    m.fail_err = -EFAULT;
    m.fail_count = 1;
    CHECK(acquire(&m, BASE + 4 * PG, PG, &r) == -EFAULT);
    CHECK_EQ_U64(m.dereg_calls, 0);
    CHECK_EQ_U64(stats_of(&m).evictions, 0);
    cache_idle(&m, BASE + 4 * PG, PG); /* the next try succeeds */
    finish(&m);
}

/* If the merged range cannot be registered, the request alone is. */
static void test_merge_failure_falls_back(void)
{
    struct mock m;
    struct hb_region *r;

    make_cache(&m, 0, 0);
    cache_idle(&m, BASE, 2 * PG);
    m.fail_err = -EACCES;
    m.fail_count = 1;
    r = acquire_ok(&m, BASE + PG, 2 * PG);
    CHECK((uintptr_t)hb_region_addr(r) == BASE + PG);
    CHECK(hb_region_len(r) == 2 * PG);
    CHECK_EQ_U64(m.reg_calls, 3);
    release(&m, r);
    finish(&m);
}

/* ---- invalidation ----------------------------------------------------- */

static void test_invalidate_idle(void)
{
    struct mock m;
    struct hb_region *r;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    cache_idle(&m, a, PG);
    hb_regcache_invalidate(m.rc, (void *)(a + 10), 1);
    CHECK_EQ_U64(m.dereg_calls, 0); /* invalidate itself calls nothing */
    hb_regcache_reap(m.rc);
    CHECK_EQ_U64(m.dereg_calls, 1);
    CHECK_EQ_U64(stats_of(&m).invalidations, 1);
    CHECK_EQ_U64(stats_of(&m).entries, 0);
    r = acquire_ok(&m, a, PG);
    CHECK_EQ_U64(m.reg_calls, 2);
    release(&m, r);
    /* Without an explicit reap, the next get applies it. */
    hb_regcache_invalidate(m.rc, (void *)a, PG);
    r = acquire_ok(&m, a, PG);
    CHECK_EQ_U64(m.reg_calls, 3);
    CHECK_EQ_U64(m.dereg_calls, 2);
    CHECK_EQ_U64(stats_of(&m).hits, 0);
    release(&m, r);
    finish(&m);
}

static void test_invalidate_held(void)
{
    struct mock m;
    struct hb_region *r1, *r2;
    struct hb_regcache_stats s;
    size_t h1;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    r1 = acquire_ok(&m, a, PG);
    h1 = handle_of(hb_region_handle(r1));
    hb_regcache_invalidate(m.rc, (void *)a, PG);
    r2 = acquire_ok(&m, a, PG);
    CHECK(r2 != r1);
    CHECK_EQ_U64(m.reg_calls, 2);
    CHECK_EQ_U64(m.dereg_calls, 0); /* r1 still in flight */
    s = stats_of(&m);
    CHECK_EQ_U64(s.entries, 2);
    CHECK_EQ_U64(s.in_use, 2);
    CHECK_EQ_U64(s.invalidations, 1);
    release(&m, r1);
    CHECK_EQ_U64(m.dereg_calls, 1);
    CHECK_EQ_U64(m.dereg_log[0], h1);
    release(&m, r2);
    CHECK_EQ_U64(m.dereg_calls, 1);
    finish(&m);
}

static void test_invalidate_many_regions(void)
{
    struct mock m;
    size_t ha;
    uintptr_t b = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    ha = cache_idle(&m, b, PG);
    cache_idle(&m, b + 2 * PG, 2 * PG);
    cache_idle(&m, b + 5 * PG, PG);
    cache_idle(&m, b + 8 * PG, 2 * PG);
    /* Touching but not overlapping: half-open ranges. */
    hb_regcache_invalidate(m.rc, (void *)(b + PG), PG);
    hb_regcache_reap(m.rc);
    CHECK_EQ_U64(stats_of(&m).invalidations, 0);
    /* Covers the 2nd and 3rd, one byte of the 4th. */
    hb_regcache_invalidate(m.rc, (void *)(b + 2 * PG), 6 * PG + 1);
    hb_regcache_reap(m.rc);
    CHECK_EQ_U64(stats_of(&m).invalidations, 3);
    CHECK_EQ_U64(stats_of(&m).entries, 1);
    CHECK(m.regs[ha - 1].live);
    cache_idle(&m, b, PG);
    CHECK_EQ_U64(stats_of(&m).hits, 1);
    /* One byte in the middle of a big region drops all of it. */
    cache_idle(&m, b + 32 * PG, 16 * PG);
    hb_regcache_invalidate(m.rc, (void *)(b + 40 * PG + 123), 1);
    cache_idle(&m, b + 33 * PG, PG);
    CHECK_EQ_U64(stats_of(&m).invalidations, 4);
    CHECK_EQ_U64(stats_of(&m).hits, 1);
    finish(&m);
}

/* A memory hook fires inside ops->reg on the thread holding the cache
 * lock and invalidates the range being registered: the get must not
 * return that registration (and must not deadlock). */
static void test_invalidate_during_reg(void)
{
    struct mock m;
    struct hb_region *r = NULL;
    uintptr_t a = BASE + 16 * PG;

    make_cache(&m, 0, 0);
    m.reg_hook_count = 1;
    r = acquire_ok(&m, a, PG);
    CHECK_EQ_U64(m.reg_calls, 2);
    CHECK(handle_of(hb_region_handle(r)) == 2);
    CHECK_EQ_U64(m.dereg_calls, 1);
    CHECK_EQ_U64(stats_of(&m).invalidations, 1);
    release(&m, r);
    /* A range that is invalidated on every attempt: give up cleanly. */
    m.reg_hook_count = 1000;
    CHECK(acquire(&m, a + 8 * PG, PG, &r) == -EAGAIN);
    CHECK_EQ_U64(stats_of(&m).failures, 1);
    CHECK_EQ_U64(m.live_count, 1);
    m.reg_hook_count = 0;
    finish(&m);
}

/* A hook fired by a deregistration (free() inside ibv_dereg_mr) is
 * honoured before any later get. */
static void test_invalidate_during_dereg(void)
{
    struct mock m;
    uintptr_t x = BASE, y = BASE + 8 * PG;

    make_cache(&m, 0, 0);
    cache_idle(&m, x, PG);
    cache_idle(&m, y, PG);
    m.dereg_hook_addr = x;
    m.dereg_hook_len = PG;
    hb_regcache_invalidate(m.rc, (void *)y, PG);
    hb_regcache_reap(m.rc); /* deregisters y, whose hook invalidates x */
    cache_idle(&m, x, PG);
    CHECK_EQ_U64(stats_of(&m).hits, 0);
    CHECK_EQ_U64(m.reg_calls, 3);
    finish(&m);
}

/* More pending invalidations than queue slots: the cache flushes
 * everything instead of losing one. */
static void test_invalidate_overflow(void)
{
    struct mock m;
    struct hb_regcache_stats s;
    uintptr_t far = BASE + 1000 * PG;
    int i;

    make_cache(&m, 0, 0);
    cache_idle(&m, BASE, PG);
    cache_idle(&m, far, PG);
    for (i = 0; i < 200; i++)
        hb_regcache_invalidate(m.rc, (void *)(BASE + (2 + i) * PG), 8);
    hb_regcache_invalidate(m.rc, (void *)BASE, 8); /* the one that counts */
    s = stats_of(&m);
    CHECK(s.invalidate_overflows > 0);
    cache_idle(&m, BASE, PG);
    cache_idle(&m, far, PG); /* conservatively flushed too */
    s = stats_of(&m);
    CHECK_EQ_U64(s.hits, 0);
    CHECK_EQ_U64(s.invalidations, 2);
    CHECK_EQ_U64(s.invalidate_calls, 201);
    /* Outside anything ever registered: filtered without queueing. */
    hb_regcache_invalidate(m.rc, (void *)(BASE / 2), PG);
    CHECK_EQ_U64(stats_of(&m).invalidate_filtered, 1);
    finish(&m);
}

/* ---- destroy --------------------------------------------------------- */

static void test_destroy_releases_everything(void)
{
    struct mock m;
    struct hb_region *held, *retired;

    make_cache(&m, 0, 0);
    held = acquire_ok(&m, BASE, PG);
    retired = acquire_ok(&m, BASE + 4 * PG, PG);
    hb_regcache_invalidate(m.rc, (void *)(BASE + 4 * PG), PG);
    hb_regcache_reap(m.rc); /* now retired, still referenced */
    cache_idle(&m, BASE + 8 * PG, 3 * PG);
    cache_idle(&m, BASE + 16 * PG, PG);
    hb_regcache_invalidate(m.rc, (void *)(BASE + 16 * PG), 1); /* pending */
    (void)held;
    (void)retired;
    CHECK_EQ_U64(m.live_count, 4);
    finish(&m); /* checks reg_calls == dereg_calls, nothing live */
}

/* ---- randomised model check ------------------------------------------ */

#define SPACE_PAGES 64
#define MAX_HELD 48

struct model {
    struct mock m;
    uint64_t last_inval[SPACE_PAGES]; /* model clock of last overlap */
    struct hb_region *held[MAX_HELD];
    int nheld;
    int expect_success; /* no caps, no limit: every get must succeed */
    unsigned long gets, puts, invals, hits_seen;
};

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t rnd_below(uint64_t n)
{
    return rnd() % n;
}

static void model_mark(struct mock *mk, uintptr_t addr, size_t len,
                       uint64_t when)
{
    struct model *md = (struct model *)mk; /* mock is the first member */
    uintptr_t p;

    for (p = 0; p < SPACE_PAGES; p++) {
        uintptr_t ps = BASE + p * PG;

        if (ps < addr + len && ps + PG > addr)
            md->last_inval[p] = when;
    }
}

static void random_range(uintptr_t *addr, size_t *len, size_t max_pages)
{
    size_t max = max_pages * PG;

    *len = 1 + (rnd_below(2) ? rnd_below(PG) : rnd_below(max));
    *addr = BASE + rnd_below(SPACE_PAGES * PG - *len);
}

/* The coherence invariant: no page of r was invalidated after r was
 * registered. */
static int registered_after_invalidations(struct model *md,
                                          const struct hb_region *r)
{
    uintptr_t a = (uintptr_t)hb_region_addr(r);
    uintptr_t p, first = (a - BASE) / PG;
    uint64_t t = reg_of(&md->m, r)->reg_time;

    if (a < BASE || first + hb_region_len(r) / PG > SPACE_PAGES)
        return 0;
    for (p = first; p < first + hb_region_len(r) / PG; p++)
        if (md->last_inval[p] >= t)
            return 0;
    return 1;
}

static void model_get(struct model *md)
{
    struct hb_region *r = NULL;
    uintptr_t addr;
    size_t len;
    uint64_t hits_before = stats_of(&md->m).hits;
    int err;

    random_range(&addr, &len, 6);
    err = acquire(&md->m, addr, len, &r);
    md->gets++;
    if (err) {
        CHECK(err == -ENOSPC || err == -ENOMEM || err == -E2BIG ||
              err == -EAGAIN);
        CHECK(!md->expect_success);
        return;
    }
    CHECK(registered_after_invalidations(md, r));
    md->hits_seen += stats_of(&md->m).hits - hits_before;
    md->held[md->nheld++] = r;
}

static void model_put(struct model *md)
{
    int i = (int)rnd_below((uint64_t)md->nheld);

    release(&md->m, md->held[i]);
    md->held[i] = md->held[--md->nheld];
    md->puts++;
}

static void model_invalidate(struct model *md)
{
    uintptr_t addr;
    size_t len;

    random_range(&addr, &len, 8);
    mock_invalidate(&md->m, addr, len);
    md->invals++;
}

/* Arms a hook that invalidates a random range from inside the next reg. */
static void model_arm_reg_hook(struct model *md)
{
    random_range(&md->m.reg_hook_addr, &md->m.reg_hook_len, 4);
    md->m.reg_hook_count = 1;
}

static size_t distinct_held(struct model *md)
{
    size_t n = 0;
    int i, j;

    for (i = 0; i < md->nheld; i++) {
        for (j = 0; j < i && md->held[j] != md->held[i]; j++)
            ;
        n += j == i;
    }
    return n;
}

static void model_check_accounting(struct model *md, size_t max_entries,
                                   size_t max_bytes)
{
    struct hb_regcache_stats s = stats_of(&md->m);

    CHECK_EQ_U64(s.pinned_bytes, md->m.live_bytes);
    CHECK_EQ_U64(s.entries, md->m.live_count);
    CHECK_EQ_U64(s.in_use, distinct_held(md));
    CHECK_EQ_U64(s.reg_calls, md->m.reg_calls);
    CHECK_EQ_U64(s.dereg_calls, md->m.dereg_calls);
    CHECK(!max_entries || s.entries <= max_entries);
    CHECK(!max_bytes || s.pinned_bytes <= max_bytes);
    CHECK_EQ_U64(md->m.bad_deregs, 0);
}

static void model_step(struct model *md)
{
    uint64_t dice = rnd_below(100);

    if (dice < 45 && md->nheld < MAX_HELD)
        model_get(md);
    else if (dice < 80 && md->nheld > 0)
        model_put(md);
    else if (dice < 95)
        model_invalidate(md);
    else if (dice < 98)
        hb_regcache_reap(md->m.rc);
    else
        model_arm_reg_hook(md);
}

static void run_model(size_t max_entries, size_t max_pages, size_t memlock,
                      int steps)
{
    static struct model md;
    struct hb_regcache_stats s;
    int i;

    memset(&md, 0, sizeof(md));
    make_cache(&md.m, max_entries, max_pages * PG);
    md.m.memlock = memlock * PG;
    md.m.on_invalidate = model_mark;
    md.expect_success = !max_entries && !max_pages && !memlock;
    for (i = 0; i < steps; i++) {
        model_step(&md);
        model_check_accounting(&md, max_entries, max_pages * PG);
    }
    while (md.nheld > 0)
        model_put(&md);
    s = stats_of(&md.m);
    CHECK_EQ_U64(s.in_use, 0);
    CHECK_EQ_U64(s.hits + s.misses + s.failures, md.gets);
    CHECK(md.hits_seen > 0 && s.misses > 0 && s.invalidations > 0);
    fprintf(stderr,
            "  model caps(entries=%zu pages=%zu memlock=%zu): %lu gets "
            "(%llu hits, %llu misses, %llu failures), %lu invalidates, "
            "%llu evictions, %llu merges\n",
            max_entries, max_pages, memlock, md.gets,
            (unsigned long long)s.hits, (unsigned long long)s.misses,
            (unsigned long long)s.failures, md.invals,
            (unsigned long long)s.evictions, (unsigned long long)s.merges);
    finish(&md.m);
}

static void test_random_model(void)
{
    run_model(0, 0, 0, 20000);   /* unlimited: no get may fail */
    run_model(6, 0, 0, 20000);   /* entry cap */
    run_model(0, 16, 0, 20000);  /* pinned-bytes cap */
    run_model(0, 0, 12, 20000);  /* memlock exhaustion in reg */
    run_model(8, 24, 14, 20000); /* all of them */
}

/* ---- threads --------------------------------------------------------- */

#define WORKERS 3
#define INVALIDATES 20000

struct shared {
    struct mock m;
    atomic_ulong done_start[SPACE_PAGES]; /* clock of last finished inval */
    atomic_int stop;
    atomic_int started;  /* the invalidator is running */
    atomic_ulong ops;    /* worker operations so far */
    atomic_ulong pushes; /* invalidations so far; the two pace each other */
    atomic_int violations;
};

struct worker_arg {
    struct shared *sh;
    uint64_t seed;
};

static uint64_t rnd_r(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* An invalidation that finished before a get started must be older than
 * the registration the get returns. */
static void worker_check(struct shared *sh, const struct hb_region *r,
                         const uint64_t *snap)
{
    uintptr_t p, first = ((uintptr_t)hb_region_addr(r) - BASE) / PG;
    uint64_t t = sh->m.regs[handle_of(hb_region_handle(r)) - 1].reg_time;

    for (p = first; p < first + hb_region_len(r) / PG && p < SPACE_PAGES; p++)
        if (snap[p] >= t)
            atomic_fetch_add(&sh->violations, 1);
}

static void *worker(void *arg)
{
    struct worker_arg *wa = arg;
    struct shared *sh = wa->sh;
    struct hb_region *held[4] = {NULL};
    uint64_t snap[SPACE_PAGES];
    int i, p;

    while (!atomic_load(&sh->started))
        ;
    /* Runs for as long as the invalidator does. */
    while (!atomic_load(&sh->stop)) {
        int slot = (int)(rnd_r(&wa->seed) % 4);
        uintptr_t addr = BASE + rnd_r(&wa->seed) % ((SPACE_PAGES - 4) * PG);
        size_t len = 1 + rnd_r(&wa->seed) % (3 * PG);

        /* Neither side may run far ahead, so the queue rarely overflows
         * (an overflow is correct but just flushes everything). */
        while (atomic_load(&sh->ops) > atomic_load(&sh->pushes) * 8 + 256 &&
               !atomic_load(&sh->stop))
            sched_yield();
        atomic_fetch_add(&sh->ops, 1);
        if (held[slot]) {
            release(&sh->m, held[slot]);
            held[slot] = NULL;
            continue;
        }
        for (p = 0; p < SPACE_PAGES; p++)
            snap[p] = atomic_load(&sh->done_start[p]);
        if (acquire(&sh->m, addr, len, &held[slot]) == 0)
            worker_check(sh, held[slot], snap);
        else
            held[slot] = NULL;
    }
    for (i = 0; i < 4; i++)
        if (held[i])
            release(&sh->m, held[i]);
    return NULL;
}

static void *invalidator(void *arg)
{
    struct shared *sh = arg;
    uint64_t seed = 12345;
    uintptr_t p;
    int i;

    atomic_store(&sh->started, 1);
    for (i = 0; i < INVALIDATES; i++) {
        uintptr_t addr = BASE + rnd_r(&seed) % (SPACE_PAGES * PG);
        size_t len = 1 + rnd_r(&seed) % (2 * PG);
        uint64_t when = atomic_fetch_add(&sh->m.clock, 1) + 1;

        hb_regcache_invalidate(sh->m.rc, (void *)addr, len);
        for (p = 0; p < SPACE_PAGES; p++) {
            uintptr_t ps = BASE + p * PG;

            if (ps < addr + len && ps + PG > addr)
                atomic_store(&sh->done_start[p], when);
        }
        /* About one invalidation per 8 worker operations. */
        atomic_fetch_add(&sh->pushes, 1);
        while (atomic_load(&sh->ops) < (unsigned long)i * 8)
            sched_yield();
    }
    atomic_store(&sh->stop, 1);
    return NULL;
}

static void test_threads(void)
{
    static struct shared sh;
    struct worker_arg wa[WORKERS];
    pthread_t th[WORKERS], inv;
    struct hb_regcache_stats s;
    int i;

    memset(&sh, 0, sizeof(sh));
    make_cache(&sh.m, 12, 0);
    /* Widen the invalidation filter's hull over the space, then empty. */
    cache_idle(&sh.m, BASE, SPACE_PAGES * PG);
    hb_regcache_invalidate(sh.m.rc, (void *)BASE, SPACE_PAGES * PG);
    hb_regcache_reap(sh.m.rc);
    pthread_create(&inv, NULL, invalidator, &sh);
    for (i = 0; i < WORKERS; i++) {
        wa[i].sh = &sh;
        wa[i].seed = 0x1234567ULL * (uint64_t)(i + 1);
        pthread_create(&th[i], NULL, worker, &wa[i]);
    }
    pthread_join(inv, NULL);
    for (i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    hb_regcache_reap(sh.m.rc);
    s = stats_of(&sh.m);
    CHECK_EQ_U64(atomic_load(&sh.violations), 0);
    CHECK_EQ_U64(s.in_use, 0);
    CHECK_EQ_U64(s.pinned_bytes, sh.m.live_bytes);
    CHECK_EQ_U64(s.entries, sh.m.live_count);
    CHECK(s.invalidations > 0 && s.hits > 0 && s.misses > 0);
    fprintf(stderr,
            "  threads: %llu hits, %llu misses, %llu failures, "
            "%llu invalidate calls (%llu overflowed), %llu invalidations\n",
            (unsigned long long)s.hits, (unsigned long long)s.misses,
            (unsigned long long)s.failures,
            (unsigned long long)s.invalidate_calls,
            (unsigned long long)s.invalidate_overflows,
            (unsigned long long)s.invalidations);
    finish(&sh.m);
}

int main(void)
{
    PG = (uintptr_t)sysconf(_SC_PAGESIZE);
    test_exact_hit();
    test_containment_hit();
    test_page_alignment();
    test_bad_arguments();
    test_partial_overlap_idle();
    test_partial_overlap_held();
    test_adjacent_ranges();
    test_in_use_never_evicted();
    test_lru_max_entries();
    test_lru_max_bytes();
    test_merge_respects_max_bytes();
    test_reg_fail_evict_retry();
    test_reg_fail_all_in_use();
    test_reg_fail_hard_error();
    test_merge_failure_falls_back();
    test_invalidate_idle();
    test_invalidate_held();
    test_invalidate_many_regions();
    test_invalidate_during_reg();
    test_invalidate_during_dereg();
    test_invalidate_overflow();
    test_destroy_releases_everything();
    test_random_model();
    test_threads();
    return CHECK_DONE();
}
