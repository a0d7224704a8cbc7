/* Registration cost R measured with the real NIC: ibv_reg_mr/ibv_dereg_mr
 * on a one-page and a 256-page buffer, best of a few, fitted to
 * R(pages) = base + per_page * pages.  On the transport's own protection
 * domain when it is open, else on the device the transport would choose
 * (util/ibdev.h): R must describe the NIC the registrations will go to. */
#include <infiniband/verbs.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "util/clock.h"
#include "util/ibdev.h"
#include "util/why.h"

/* Best time of reps registrations of len bytes, in us; <0 on failure. */
static double time_reg(struct ibv_pd *pd, size_t len, int reps)
{
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, len))
        return -1;
    memset(buf, 0, len); /* fault the pages in: R excludes first touch */
    double best = INFINITY;
    for (int i = 0; i < reps; i++) {
        double t0 = hb_clock_us();
        struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
        if (!mr) {
            best = -1;
            break;
        }
        ibv_dereg_mr(mr);
        double t = hb_clock_us() - t0;
        if (t < best)
            best = t;
    }
    free(buf);
    return best;
}

int hb_measure_reg_cost_pd(struct ibv_pd *pd, double *base_us, double *page_us,
                           char *why, size_t len)
{
    double r1 = time_reg(pd, 4096, 8), r256 = time_reg(pd, 256 * 4096, 4);
    if (r1 < 0 || r256 < 0) {
        hb_why(why, len, "ibv_reg_mr failed on %s (memlock limit?)",
               ibv_get_device_name(pd->context->device));
        return -1;
    }
    *page_us = r256 > r1 ? (r256 - r1) / 255.0 : 0;
    *base_us = r1 - *page_us > 0 ? r1 - *page_us : r1;
    return 0;
}

int hb_measure_reg_cost(const char *device, int port, double *base_us,
                        double *page_us, char *why, size_t len)
{
    struct hb_ibdev d;
    struct ibv_pd *pd;
    int rc = -1;

    if (hb_ibdev_open(device, port, &d, why, len))
        return -1;
    if ((pd = ibv_alloc_pd(d.ctx))) {
        rc = hb_measure_reg_cost_pd(pd, base_us, page_us, why, len);
        ibv_dealloc_pd(pd);
    } else {
        hb_why(why, len, "ibv_alloc_pd failed on %s", d.name);
    }
    ibv_close_device(d.ctx);
    return rc;
}
