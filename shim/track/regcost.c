/* Registration cost R measured with the real NIC: ibv_reg_mr/ibv_dereg_mr
 * on a one-page and a 256-page buffer, best of a few, fitted to
 * R(pages) = base + per_page * pages. */
#include <infiniband/verbs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calibrate.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct ibv_device *pick_device(struct ibv_device **list, const char *name)
{
    for (int i = 0; list[i]; i++)
        if (!name[0] || !strcmp(ibv_get_device_name(list[i]), name))
            return list[i];
    return NULL;
}

/* Best time of reps registrations of len bytes, in us; <0 on failure. */
static double time_reg(struct ibv_pd *pd, size_t len, int reps)
{
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, len))
        return -1;
    memset(buf, 0, len); /* fault the pages in: R excludes first touch */
    double best = INFINITY;
    for (int i = 0; i < reps; i++) {
        double t0 = now_us();
        struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
        if (!mr) {
            best = -1;
            break;
        }
        ibv_dereg_mr(mr);
        double t = now_us() - t0;
        if (t < best)
            best = t;
    }
    free(buf);
    return best;
}

int hb_measure_reg_cost(const char *device, double *base_us, double *page_us, char *why,
                        size_t len)
{
    int n = 0, rc = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_device *dev = list ? pick_device(list, device) : NULL;
    struct ibv_context *ctx = NULL;
    struct ibv_pd *pd = NULL;
    if (!dev) {
        snprintf(why, len, device[0] ? "verbs device %s not found" : "no verbs device", device);
        goto out;
    }
    if (!(ctx = ibv_open_device(dev)) || !(pd = ibv_alloc_pd(ctx))) {
        snprintf(why, len, "cannot open verbs device %s", ibv_get_device_name(dev));
        goto out;
    }
    double r1 = time_reg(pd, 4096, 8), r256 = time_reg(pd, 256 * 4096, 4);
    if (r1 < 0 || r256 < 0) {
        snprintf(why, len, "ibv_reg_mr failed on %s (memlock limit?)", ibv_get_device_name(dev));
        goto out;
    }
    *page_us = r256 > r1 ? (r256 - r1) / 255.0 : 0;
    *base_us = r1 - *page_us > 0 ? r1 - *page_us : r1;
    rc = 0;
out:
    if (pd)
        ibv_dealloc_pd(pd);
    if (ctx)
        ibv_close_device(ctx);
    if (list)
        ibv_free_device_list(list);
    return rc;
}
