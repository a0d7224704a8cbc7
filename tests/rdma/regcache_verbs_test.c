/* The registration cache against a real verbs device (run in the
 * soft-RoCE guest): real ibv_reg_mr/ibv_dereg_mr, real memlock limits.
 *
 *   regcache_verbs_test           hits, containment, eviction, invalidation
 *   regcache_verbs_test memlock   run with RLIMIT_MEMLOCK = 64 KiB and no
 *                                 CAP_IPC_LOCK: exhaustion -> evict and
 *                                 retry; everything in use -> an error the
 *                                 caller falls back on
 * Prints PASS/FAIL lines; exit status = number of failures. */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"

static int failures;

static void check(int ok, const char *what)
{
    printf("%s regcache_verbs/%s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

static struct ibv_pd *open_pd(void)
{
    int n;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n == 0)
        return NULL;
    struct ibv_context *ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    return ctx ? ibv_alloc_pd(ctx) : NULL;
}

static void *page_alloc(size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, len))
        return NULL;
    memset(p, 7, len);
    return p;
}

static void basic(struct ibv_pd *pd)
{
    struct hb_regcache *rc;
    struct hb_region *a, *b, *c;
    struct hb_regcache_stats st;
    char *buf = page_alloc(64 * 1024), *other = page_alloc(4096),
         *third = page_alloc(4096);

    check(hb_regcache_create(&hb_regcache_verbs_ops, pd, 2, 0, &rc) == 0,
          "create");
    check(hb_regcache_get(rc, buf, 8192, &a) == 0 && hb_region_mr(a)->lkey != 0,
          "register");
    check(hb_region_mr(a)->addr <= (void *)buf &&
              (char *)hb_region_mr(a)->addr + hb_region_mr(a)->length >=
                  buf + 8192,
          "mr covers the request");
    check(hb_regcache_get(rc, buf + 100, 1000, &b) == 0 && b == a,
          "contained range hits");
    hb_regcache_put(rc, b);
    hb_regcache_put(rc, a);

    /* a third region with a cap of 2 entries evicts the least recently used */
    check(hb_regcache_get(rc, other, 4096, &b) == 0, "second region");
    hb_regcache_put(rc, b);
    check(hb_regcache_get(rc, third, 4096, &c) == 0, "third region");
    hb_regcache_put(rc, c);
    hb_regcache_stats(rc, &st);
    check(st.evictions == 1 && st.entries == 2,
          "LRU eviction under max_entries");

    /* invalidation: the next get must register anew */
    check(hb_regcache_get(rc, third, 4096, &c) == 0, "hit before invalidation");
    uint32_t old_lkey = hb_region_mr(c)->lkey;
    hb_regcache_put(rc, c);
    hb_regcache_invalidate(rc, third, 4096);
    hb_regcache_stats(rc, &st);
    uint64_t regs = st.reg_calls;
    check(hb_regcache_get(rc, third, 4096, &c) == 0, "get after invalidation");
    hb_regcache_stats(rc, &st);
    check(st.reg_calls == regs + 1 && st.invalidations >= 1,
          "invalidated region re-registered");
    (void)old_lkey;
    hb_regcache_put(rc, c);
    hb_regcache_destroy(rc);
    free(buf);
    free(other);
    free(third);
}

/* Under RLIMIT_MEMLOCK = 64 KiB without CAP_IPC_LOCK. */
static void memlock(struct ibv_pd *pd)
{
    enum { BLOCK = 16384, N = 12 };
    struct hb_regcache *rc;
    struct hb_region *r[N];
    struct hb_regcache_stats st;
    char *blocks[N];
    size_t cap = hb_regcache_default_max_bytes();
    check(cap == 24 * 1024,
          "default cap is 3/8 of RLIMIT_MEMLOCK (half is the MPI's)");
    /* no cap in the cache: the kernel's limit must be what stops us */
    check(hb_regcache_create(&hb_regcache_verbs_ops, pd, 0, 0, &rc) == 0,
          "create (memlock)");
    int ok = 1;
    for (int i = 0; i < N; i++) {
        blocks[i] = page_alloc(BLOCK);
        if (hb_regcache_get(rc, blocks[i], BLOCK, &r[i]) != 0)
            ok = 0;
        else
            hb_regcache_put(rc, r[i]);
    }
    hb_regcache_stats(rc, &st);
    check(ok && st.reg_failures > 0 && st.evictions > 0,
          "memlock exhaustion: evict idle regions and retry");
    check(st.pinned_bytes <= 64 * 1024,
          "never more pinned than RLIMIT_MEMLOCK");
    /* hold everything that fits, then one more must fail cleanly */
    int held = 0, err = 0;
    for (int i = 0; i < N; i++) {
        int rcode = hb_regcache_get(rc, blocks[i], BLOCK, &r[held]);
        if (rcode == 0)
            held++;
        else
            err = rcode;
    }
    check(held >= 1 && held < N && (err == -ENOMEM || err == -ENOSPC),
          "everything in use: an error for the caller to fall back on");
    for (int i = 0; i < held; i++)
        hb_regcache_put(rc, r[i]);
    hb_regcache_destroy(rc);
    for (int i = 0; i < N; i++)
        free(blocks[i]);
}

int main(int argc, char **argv)
{
    struct ibv_pd *pd = open_pd();
    check(pd != NULL, "open device and protection domain");
    if (!pd)
        return 1;
    if (argc > 1 && !strcmp(argv[1], "memlock"))
        memlock(pd);
    else
        basic(pd);
    return failures;
}
