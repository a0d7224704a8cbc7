/* The memory monitor wired to the real registration cache.
 *
 * reg/dereg are mocks that watch/unwatch the range (as the verbs transport
 * will around ibv_reg_mr/ibv_dereg_mr) and hand out numbered handles; the
 * monitor's callback is hb_regcache_invalidate.  Each scenario registers
 * an application buffer, makes glibc give its memory back to the kernel,
 * gets new memory at the same address, and looks it up again:
 *   monitor on:    the lookup must register again (fresh handle);
 *   monitor muted: the lookup returns the old handle -- a stale
 *                  registration of memory that is gone.  This proves the
 *                  test can fail, and is what the integrity test relies on.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "regcache/memmon.h"
#include "regcache/regcache.h"
#include "check.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static size_t PG;

/* ---- mock registration ------------------------------------------------- */

struct handle {
    void *addr;
    size_t len;
    unsigned id;
    unsigned long t_reg; /* logical clock at registration */
};

/* under the cache's lock; refusals: watch said -EINVAL, the others fail */
static unsigned reg_calls, dereg_calls, watch_refusals, watch_failures;
static atomic_ulong clk;

static int mock_reg(void *ctx, void *addr, size_t len, void **out)
{
    struct handle *h;
    int r = hb_memmon_watch(addr, len); /* before pinning */

    (void)ctx;
    if (r) {
        /* -EINVAL: a hole in the range.  The cache merges a request with
         * the idle regions it overlaps, and under the stress those may
         * reach over a block another thread just unmapped; a real
         * registration there fails too (nothing to pin) */
        if (r == -EINVAL)
            watch_refusals++;
        else
            watch_failures++;
        return r; /* not watchable: not cacheable either */
    }
    h = malloc(sizeof *h);
    if (!h) {
        hb_memmon_unwatch(addr, len);
        return -ENOMEM;
    }
    h->addr = addr;
    h->len = len;
    h->id = ++reg_calls;
    h->t_reg = atomic_fetch_add(&clk, 1);
    *out = h;
    return 0;
}

static void mock_dereg(void *ctx, void *handle)
{
    struct handle *h = handle;

    (void)ctx;
    hb_memmon_unwatch(h->addr, h->len);
    free(h);
    dereg_calls++;
}

/* The monitor's target; switched between caches via sync (see below). */
static _Atomic(struct hb_regcache *) target;

static void on_change(void *ctx, const void *addr, size_t len)
{
    struct hb_regcache *rc = atomic_load(&target);

    (void)ctx;
    if (rc)
        hb_regcache_invalidate(rc, addr, len);
}

static struct hb_regcache *cache_new(void)
{
    static const struct hb_regcache_ops ops = {mock_reg, mock_dereg};
    struct hb_regcache *rc = NULL;

    CHECK(hb_regcache_create(&ops, NULL, 0, 0, &rc) == 0);
    atomic_store(&target, rc);
    return rc;
}

static void cache_free(struct hb_regcache *rc)
{
    atomic_store(&target, NULL);
    hb_memmon_sync_local(); /* no callback still uses rc */
    hb_regcache_destroy(rc);
}

/* What the transport does for every send: sync, then look up. */
static unsigned lookup(struct hb_regcache *rc, const void *buf, size_t len)
{
    struct hb_region *r = NULL;
    unsigned id = 0;
    int e;

    hb_memmon_sync();
    e = hb_regcache_get(rc, buf, len, &r);
    CHECK_EQ_U64(e, 0);
    if (e == 0) {
        id = ((struct handle *)hb_region_handle(r))->id;
        hb_regcache_put(rc, r);
    }
    return id;
}

static void verdict(const char *name, int muted, unsigned id1, unsigned id2,
                    unsigned regs_before, unsigned regs_after)
{
    if (!muted) {
        printf(
            "%-44s monitor on:    handle #%u, then #%u (reg called again: %s)\n",
            name, id1, id2,
            regs_after == regs_before + 1 ? "yes, fresh" : "NO");
        CHECK(id2 != id1);
        CHECK_EQ_U64(regs_after, regs_before + 1);
    } else {
        printf(
            "%-44s monitor MUTED: handle #%u, then #%u (%s)\n", name, id1, id2,
            id2 == id1
                ? "STALE registration returned, as expected without the monitor"
                : "fresh?!");
        CHECK_EQ_U64(id2, id1);
        CHECK_EQ_U64(regs_after, regs_before);
    }
}

/* ---- scenarios ------------------------------------------------------- */

/* free() of a large block (glibc __munmap), malloc() again = same address. */
static void sc_free_malloc(int muted)
{
    const size_t sz = 1 << 20;
    struct hb_regcache *rc = cache_new();
    char *b, *b2;
    uintptr_t old;
    unsigned id1, id2, regs;

    b = malloc(sz);
    memset(b, 'A', sz);
    id1 = lookup(rc, b, sz);
    old = (uintptr_t)b;
    free(b);
    b2 = malloc(sz);
    memset(b2, 'B', sz);
    if ((uintptr_t)b2 != old) {
        printf("free+malloc: NOT APPLICABLE: malloc returned %p, not %#lx\n",
               (void *)b2, (unsigned long)old);
        CHECK((uintptr_t)b2 == old);
    } else {
        regs = reg_calls;
        id2 = lookup(rc, b2, sz);
        verdict("free(1 MiB) + malloc(1 MiB), same address", muted, id1, id2,
                regs, reg_calls);
    }
    free(b2);
    cache_free(rc);
}

/* A heap block whose pages malloc_trim gives back (glibc __madvise
 * MADV_DONTNEED): the addresses stay mapped, the memory does not. */
static void sc_heap_trim(int muted)
{
    const size_t sz = 96 * 1024;
    struct hb_regcache *rc = cache_new();
    char *b, *b2, *guard;
    uintptr_t old;
    unsigned id1, id2, regs;
    int released;

    b = malloc(sz);
    guard = malloc(64); /* keeps b off the top chunk: trim by madvise */
    memset(b, 'A', sz);
    id1 = lookup(rc, b, sz);
    old = (uintptr_t)b;
    free(b);
    released = malloc_trim(0);
    b2 = malloc(sz);
    memset(b2, 'B', sz);
    if (!released || (uintptr_t)b2 != old) {
        printf(
            "heap trim: NOT APPLICABLE: malloc_trim released %d, malloc returned %p (was %#lx)\n",
            released, (void *)b2, (unsigned long)old);
        CHECK(released && (uintptr_t)b2 == old);
    } else {
        regs = reg_calls;
        id2 = lookup(rc, b2, sz);
        verdict("heap block + malloc_trim(0) + malloc", muted, id1, id2, regs,
                reg_calls);
    }
    free(b2);
    free(guard);
    cache_free(rc);
}

/* realloc() moves a large block (glibc __mremap); new memory is then
 * mapped at the old address. */
static void sc_realloc_move(int muted)
{
    const size_t sz = 1 << 20;
    struct hb_regcache *rc = cache_new();
    char *b, *n, *g, *m, *base;
    uintptr_t old;
    unsigned id1, id2, regs;

    b = malloc(sz);
    memset(b, 'A', sz);
    g = mmap(b + malloc_usable_size(b), PG, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    id1 = lookup(rc, b, sz);
    old = (uintptr_t)b;
    n = realloc(b, 4 * sz);
    base = (char *)(old & ~(PG - 1));
    m = mmap(base, sz + PG, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if ((uintptr_t)n == old || m != base) {
        printf(
            "realloc move: NOT APPLICABLE: realloc %s, remap at old address %s\n",
            (uintptr_t)n == old ? "grew in place" : "moved",
            m == base ? "ok" : "failed");
        CHECK((uintptr_t)n != old && m == base);
    } else {
        char *same = m + (old & (PG - 1)); /* == the old buffer address */

        memset(same, 'B', sz); /* new memory, same addresses */
        regs = reg_calls;
        id2 = lookup(rc, same, sz);
        verdict("realloc(1 -> 4 MiB) moves + mmap old address", muted, id1, id2,
                regs, reg_calls);
    }
    if (m != MAP_FAILED)
        munmap(m, sz + PG);
    if (g != MAP_FAILED)
        munmap(g, PG);
    free(n);
    cache_free(rc);
}

/* ---- stress: threads allocate, look up and free large blocks --------
 * Every block is a fresh mmap (>= M_MMAP_THRESHOLD), so a registration
 * made before the block was allocated (t_reg < t_alloc) describes pages
 * that were unmapped before: using it would send stale data.  Threads
 * reuse each other's freed addresses without synchronising with each
 * other, which is the case hb_memmon_sync is for. */
enum sync_kind { SYNC_STRICT, SYNC_CHEAP };

struct stress {
    struct hb_regcache *rc;
    enum sync_kind sync;
    unsigned iters, seed;
    unsigned long lookups, hits, stale;
};

static void *stress_thread(void *arg)
{
    struct stress *st = arg;
    unsigned seed = st->seed;

    for (unsigned i = 0; i < st->iters; i++) {
        size_t sz = (256u << 10) + (size_t)(rand_r(&seed) % 8) * (128u << 10);
        char *b = malloc(sz);
        unsigned long t_alloc = atomic_fetch_add(&clk, 1);

        b[0] = (char)i;
        b[sz - 1] = (char)i;
        for (int k = 0; k < 2; k++) {
            struct hb_region *r;
            unsigned long t_reg;

            if (st->sync == SYNC_STRICT)
                hb_memmon_sync();
            else
                hb_memmon_sync_local();
            if (hb_regcache_get(st->rc, b, sz, &r) != 0)
                continue;
            t_reg = ((struct handle *)hb_region_handle(r))->t_reg;
            st->lookups++;
            st->hits += t_reg < t_alloc || k == 1;
            st->stale += t_reg < t_alloc;
            hb_regcache_put(st->rc, r);
        }
        free(b);
    }
    return NULL;
}

static unsigned long stress(int muted, enum sync_kind sync, unsigned nthreads,
                            unsigned iters)
{
    struct stress st[8];
    pthread_t th[8];
    struct hb_regcache *rc = cache_new();
    unsigned long lookups = 0, stale = 0;
    struct timespec t0, t1;

    hb_memmon_set_muted(muted);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 0; i < nthreads; i++) {
        st[i] = (struct stress){rc, sync, iters, 1234u + i, 0, 0, 0};
        CHECK(pthread_create(&th[i], NULL, stress_thread, &st[i]) == 0);
    }
    for (unsigned i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        lookups += st[i].lookups;
        stale += st[i].stale;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    hb_memmon_set_muted(0);
    cache_free(rc);
    printf(
        "stress %u threads x %u blocks, %s, monitor %s: %lu lookups, %lu STALE (%.2f s)\n",
        nthreads, iters,
        sync == SYNC_STRICT ? "hb_memmon_sync" : "hb_memmon_sync_local",
        muted ? "MUTED" : "on", lookups, stale,
        (double)(t1.tv_sec - t0.tv_sec) +
            (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    CHECK_EQ_U64(lookups, 2ul * nthreads * iters);
    return stale;
}

int main(void)
{
    char why[256];
    struct hb_memmon_stats s;

    setvbuf(stdout, NULL, _IOLBF, 0);
    PG = (size_t)sysconf(_SC_PAGESIZE);
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);        /* 1 MiB: mmap'ed */
    mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024); /* only malloc_trim trims */
    mallopt(M_TOP_PAD, 0);

    if (hb_memmon_start(on_change, NULL, 0, why, sizeof why) != 0) {
        printf("memory monitor unavailable: %s\n", why);
        printf(
            "NOT APPLICABLE: all scenarios (hotbuf would cache only its own memory)\n");
        CHECK(!"memory monitor available (expected on the project's hosts)");
        return CHECK_DONE();
    }
    printf("mechanism: %s\n", hb_memmon_describe());
    for (int muted = 0; muted <= 1; muted++) {
        hb_memmon_set_muted(muted);
        sc_free_malloc(muted);
        sc_heap_trim(muted);
        sc_realloc_move(muted);
    }
    hb_memmon_set_muted(0);

    /* With the monitor: never stale.  Muted: stale hits must show up.
     * One thread: the cheap sync suffices (same-thread ordering). */
    CHECK_EQ_U64(stress(0, SYNC_CHEAP, 1, 1500), 0);
    CHECK_EQ_U64(stress(0, SYNC_STRICT, 4, 1500), 0);
    {
        unsigned long n = stress(0, SYNC_CHEAP, 4, 1500);
        if (n)
            printf(
                "  (hb_memmon_sync_local: %lu stale hit(s) from the cross-thread window that "
                "hb_memmon_sync closes)\n",
                n);
    }
    CHECK(stress(1, SYNC_STRICT, 4, 300) > 0);

    hb_memmon_stats(&s);
    printf(
        "reg %u dereg %u watch refusals (holes) %u failures %u; monitor: unmap %llu "
        "remove %llu remap %llu callbacks %llu muted %llu\n",
        reg_calls, dereg_calls, watch_refusals, watch_failures,
        (unsigned long long)s.unmap_events, (unsigned long long)s.remove_events,
        (unsigned long long)s.remap_events, (unsigned long long)s.callbacks,
        (unsigned long long)s.muted);
    CHECK_EQ_U64(reg_calls, dereg_calls);
    CHECK_EQ_U64(watch_failures, 0);
    hb_memmon_stop();
    return CHECK_DONE();
}
