/* Cost model and its start-up calibration (see costmodel.h). */
#include "costmodel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/copy.h"

#define PAGE 4096.0

void hb_cost_set_copy_linear(struct hb_costmodel *cm, double ns_per_kb)
{
    for (unsigned k = 0; k < HB_SIZE_CLASSES; k++)
        cm->copy_ns[k] = ldexp(1.0, (int)k) / 1024.0 * ns_per_kb;
    cm->copy_src = HB_COST_USER;
}

/* Enough copies per batch to rise above the clock's resolution: many
 * for small sizes, a few for large ones. */
static double time_copy(char *dst, const char *src, size_t len)
{
    int iters = len >= 65536 ? 16 : (int)(262144 / (len + 64)) + 8;
    return hb_copy_time_ns(HB_COPY_MEMCPY, dst, src, len, iters);
}

void hb_cost_measure_copy(struct hb_costmodel *cm, uint64_t max_size)
{
    unsigned top = hb_size_class(max_size < 64 ? 64 : max_size);
    if (top >= 24)
        top = 24; /* 16 MiB: beyond it the copy is linear anyway */
    size_t len = (size_t)1 << top;
    char *src = malloc(len), *dst = malloc(len);
    if (!src || !dst) {
        free(src);
        free(dst);
        hb_cost_set_copy_linear(cm, 100.0);
        cm->copy_src = HB_COST_DEFAULT;
        return;
    }
    memset(src, 1, len);
    memset(dst, 2, len);
    for (unsigned k = 0; k <= top; k++)
        cm->copy_ns[k] = time_copy(dst, src, (size_t)1 << k);
    /* Monotone: a larger copy never costs less; smooths timer noise. */
    for (unsigned k = 1; k <= top; k++)
        if (cm->copy_ns[k] < cm->copy_ns[k - 1])
            cm->copy_ns[k] = cm->copy_ns[k - 1];
    for (unsigned k = top + 1; k < HB_SIZE_CLASSES; k++)
        cm->copy_ns[k] = cm->copy_ns[k - 1] * 2;
    free(src);
    free(dst);
    cm->copy_src = HB_COST_MEASURED;
}

/* Interpolates linearly between the two powers of two around size. */
double hb_cost_copy_ns(const struct hb_costmodel *cm, uint64_t size)
{
    unsigned k = hb_size_class(size);
    if (k == 0 || k >= HB_SIZE_CLASSES)
        return cm->copy_ns[k == 0 ? 0 : HB_SIZE_CLASSES - 1];
    double lo = ldexp(1.0, (int)k - 1), hi = ldexp(1.0, (int)k);
    double f = ((double)size - lo) / (hi - lo);
    return cm->copy_ns[k - 1] + f * (cm->copy_ns[k] - cm->copy_ns[k - 1]);
}

double hb_cost_reg_ns(const struct hb_costmodel *cm, uint64_t size)
{
    double pages = ceil((double)size / PAGE);
    if (pages < 1)
        pages = 1;
    return (cm->reg_base_us + cm->reg_page_us * pages) * 1000.0;
}

double hb_cost_break_even(const struct hb_costmodel *cm, uint64_t size)
{
    double gain = hb_cost_copy_ns(cm, size) - cm->lookup_ns;
    if (gain <= 0)
        return -1;
    return hb_cost_reg_ns(cm, size) / gain;
}

void hb_cost_thresholds(const struct hb_costmodel *cm,
                        const struct hb_threshold_params *p,
                        uint32_t thr[HB_SIZE_CLASSES])
{
    for (unsigned k = 0; k < HB_SIZE_CLASSES; k++) {
        uint64_t size = 1ull << k;
        if (p->fixed) {
            thr[k] = p->fixed;
            continue;
        }
        double n = hb_cost_break_even(cm, size);
        if (n < 0) {
            thr[k] = HB_NEVER;
            continue;
        }
        double t = ceil(p->speculative * n);
        thr[k] = t < 1 ? 1 : t >= (double)HB_NEVER ? HB_NEVER - 1 : (uint32_t)t;
    }
}

double hb_cost_saving_ns(const struct hb_costmodel *cm, uint64_t size,
                         uint64_t hot_uses)
{
    if (!hot_uses)
        return 0;
    return (double)hot_uses * hb_cost_copy_ns(cm, size) -
           hb_cost_reg_ns(cm, size);
}

const char *hb_cost_source_name(enum hb_cost_source s)
{
    switch (s) {
    case HB_COST_MEASURED: return "measured";
    case HB_COST_USER: return "user";
    default: return "default";
    }
}
