/* Registration-cache hit cost against the number of cached regions, on a
 * real device when one exists (ibv_reg_mr), else with a no-op registrar:
 * the lookup itself does not depend on the NIC.
 *   bench-regcache [REGIONS...]     default 1 16 256 4096
 * Prints ns per get+put pair on a hit and per ibv_reg_mr it replaces. */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int noop_reg(void *ctx, void *addr, size_t len, void **handle)
{
    (void)ctx, (void)len;
    *handle = addr;
    return 0;
}
static void noop_dereg(void *ctx, void *handle)
{
    (void)ctx, (void)handle;
}
static const struct hb_regcache_ops noop_ops = {noop_reg, noop_dereg};

static struct ibv_pd *open_pd(void)
{
    int n;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx = list && n ? ibv_open_device(list[0]) : NULL;
    if (list)
        ibv_free_device_list(list);
    return ctx ? ibv_alloc_pd(ctx) : NULL;
}

int main(int argc, char **argv)
{
    static const int defaults[] = {1, 16, 256, 4096};
    int nsizes = argc > 1 ? argc - 1 : 4;
    struct ibv_pd *pd = open_pd();
    const struct hb_regcache_ops *ops = pd ? &hb_regcache_verbs_ops : &noop_ops;
    printf("# registrar: %s\n", pd ? "ibv_reg_mr" : "none (no verbs device)");
    for (int s = 0; s < nsizes; s++) {
        int regions = argc > 1 ? atoi(argv[s + 1]) : defaults[s];
        char *mem = aligned_alloc(4096, (size_t)regions * 8192);
        memset(mem, 1, (size_t)regions * 8192);
        struct hb_regcache *rc;
        struct hb_region *r;
        if (hb_regcache_create(ops, pd, 0, 0, &rc))
            return 1;
        double t0 = now_ns();
        for (int i = 0; i < regions; i++) { /* every other page: no merging */
            if (hb_regcache_get(rc, mem + (size_t)i * 8192, 4096, &r))
                return 1;
            hb_regcache_put(rc, r);
        }
        double miss_ns = (now_ns() - t0) / regions;
        enum { HITS = 1000000 };
        t0 = now_ns();
        for (int i = 0; i < HITS; i++) {
            hb_regcache_get(rc, mem + (size_t)(i % regions) * 8192 + 64, 1024,
                            &r);
            hb_regcache_put(rc, r);
        }
        double hit_ns = (now_ns() - t0) / HITS;
        printf(
            "regcache regions=%d hit_ns=%.1f miss_ns=%.0f miss_over_hit=%.0f\n",
            regions, hit_ns, miss_ns, miss_ns / hit_ns);
        hb_regcache_destroy(rc);
        free(mem);
    }
    return 0;
}
