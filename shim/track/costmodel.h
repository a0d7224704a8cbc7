/* The cost model of Rashti & Afsahi (2011), eq. (1)-(3).
 *
 * Sending a buffer n times costs n(2C+N) through MPI's bounce buffers and
 * n(C+N+V)+R when it is registered once and sent from directly, so the
 * registration pays off once n > R/(C-V).  hotbuf registers speculatively
 * at a fraction of that n (paper: 25 %).  C is the copy cost, V the lookup
 * overhead and R the registration cost, each a function of message size.
 */
#ifndef HOTBUF_COSTMODEL_H
#define HOTBUF_COSTMODEL_H

#include <stdint.h>

/* Size class k holds sizes in (2^(k-1), 2^k]; class 0 holds 0 and 1. */
#define HB_SIZE_CLASSES 40
#define HB_NEVER UINT32_MAX /* threshold of a size that never becomes hot */

static inline unsigned hb_size_class(uint64_t size)
{
    return size <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(size - 1);
}

enum hb_cost_source { HB_COST_DEFAULT, HB_COST_MEASURED, HB_COST_USER };

struct hb_costmodel {
    double copy_ns[HB_SIZE_CLASSES]; /* C at size 2^k */
    double lookup_ns;                /* V */
    double reg_base_us;              /* R(m) = base + per_page * pages(m) */
    double reg_page_us;
    enum hb_cost_source copy_src, lookup_src, reg_src;
    /* Not the model's C (that is the MPI's memcpy) but the routine hotbuf
     * copies its own data with (util/copy.h), chosen with the rest of the
     * calibration so every rank uses rank 0's: the probe's times of one
     * 64 KiB copy, 0 when not measured. */
    int copy_routine; /* enum hb_copy_routine */
    double probe_memcpy_ns, probe_pieces_ns;
    enum hb_cost_source routine_src;
};

/* Linear copy model C(m) = m/1024 * ns_per_kb, for a user-given cost. */
void hb_cost_set_copy_linear(struct hb_costmodel *cm, double ns_per_kb);

/* Measures memcpy at every power of two up to max_size (bounded to a few
 * milliseconds in all). */
void hb_cost_measure_copy(struct hb_costmodel *cm, uint64_t max_size);

double hb_cost_copy_ns(const struct hb_costmodel *cm, uint64_t size);
double hb_cost_reg_ns(const struct hb_costmodel *cm, uint64_t size);

/* Break-even reuse count R/(C-V), or -1 when C <= V (never pays off). */
double hb_cost_break_even(const struct hb_costmodel *cm, uint64_t size);

struct hb_threshold_params {
    double speculative; /* fraction of the break-even count */
    uint64_t min_size, eager_limit;
    uint32_t fixed; /* nonzero: this threshold for every eligible size */
};

/* Fills thr[k] for every size class: uses at which a buffer of size 2^k
 * becomes hot, HB_NEVER where it cannot.  The exact min/eager bounds are
 * checked per call by hb_threshold_for(). */
void hb_cost_thresholds(const struct hb_costmodel *cm,
                        const struct hb_threshold_params *p,
                        uint32_t thr[HB_SIZE_CLASSES]);

static inline uint32_t hb_threshold_for(const uint32_t thr[HB_SIZE_CLASSES],
                                        const struct hb_threshold_params *p,
                                        uint64_t size)
{
    if (size < p->min_size || size > p->eager_limit)
        return HB_NEVER;
    return thr[hb_size_class(size)];
}

/* Estimated saving (ns) of a buffer of this size used hot_uses times while
 * registered: copies avoided x C minus its one registration R.  The lookup
 * overhead V is paid on every tracked call, hot or not, and is reported
 * separately. */
double hb_cost_saving_ns(const struct hb_costmodel *cm, uint64_t size,
                         uint64_t hot_uses);

const char *hb_cost_source_name(enum hb_cost_source s);

#endif
