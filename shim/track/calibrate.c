/* Cost-model calibration (see calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <stdio.h>

#include "reuse_table.h"
#include "util/clock.h"
#include "util/copy.h"

/* A table the size the job will use, with a few thousand buffers spaced
 * like heap allocations, looked up in a scattered order; best of 5. */
double hb_measure_lookup_ns(int bits)
{
    enum { BUFFERS = 4096, LOOKUPS = 1 << 16 };
    struct hb_table t;
    struct hb_table_params p = {
        .bits = bits, .max_entries = BUFFERS, .adapt = 0};
    if (hb_table_init(&t, &p))
        return 10.0;
    for (uintptr_t i = 0; i < BUFFERS; i++) {
        uint32_t chain = 0;
        uintptr_t key = 0x7f0000000000 + i * 4160;
        if (!hb_table_find(&t, key, &chain))
            hb_table_insert(&t, key, chain);
    }
    double best = INFINITY;
    volatile uint32_t sink = 0;
    for (int round = 0; round < 5; round++) {
        double t0 = hb_clock_ns();
        for (uint32_t i = 0; i < LOOKUPS; i++) {
            uint32_t chain = 0;
            uintptr_t key = 0x7f0000000000 +
                            (uintptr_t)((i * 2654435761u) % BUFFERS) * 4160;
            struct hb_entry *e = hb_table_find(&t, key, &chain);
            sink += e ? e->uses : chain;
        }
        double ns = (hb_clock_ns() - t0) / LOOKUPS;
        if (ns < best)
            best = ns;
    }
    (void)sink;
    hb_table_destroy(&t);
    return best;
}

/* R unless the user gave both parts; the source says which. */
static void calibrate_reg(struct hb_costmodel *cm, const struct hb_config *cfg,
                          struct ibv_pd *pd, char *why_default, size_t len)
{
    double base = HB_DEFAULT_REG_BASE_US, page = HB_DEFAULT_REG_PAGE_US;
    cm->reg_src = HB_COST_DEFAULT;
    if (cfg->reg_base_us < 0 || cfg->reg_page_us < 0) {
        int rc = pd ? hb_measure_reg_cost_pd(pd, &base, &page, why_default, len)
                    : hb_measure_reg_cost(cfg->device, cfg->port, &base, &page,
                                          why_default, len);
        if (rc == 0)
            cm->reg_src = HB_COST_MEASURED;
    }
    if (cfg->reg_base_us >= 0 || cfg->reg_page_us >= 0)
        cm->reg_src = HB_COST_USER;
    cm->reg_base_us = cfg->reg_base_us >= 0 ? cfg->reg_base_us : base;
    cm->reg_page_us = cfg->reg_page_us >= 0 ? cfg->reg_page_us : page;
}

/* HOTBUF_COPY: the user's routine, else the faster one on this CPU. */
static void calibrate_copy_routine(struct hb_costmodel *cm,
                                   const struct hb_config *cfg)
{
    struct hb_copy_probe p = {0, 0};
    cm->routine_src = HB_COST_USER;
    if (cfg->copy == HB_COPY_USE_PIECES) {
        cm->copy_routine = HB_COPY_PIECES;
    } else if (cfg->copy == HB_COPY_USE_MEMCPY) {
        cm->copy_routine = HB_COPY_MEMCPY;
    } else if (hb_copy_probe(&p) == 0) {
        cm->copy_routine = hb_copy_pick(&p);
        cm->routine_src = HB_COST_MEASURED;
    } else {
        cm->copy_routine = HB_COPY_MEMCPY;
        cm->routine_src = HB_COST_DEFAULT;
    }
    cm->probe_memcpy_ns = p.memcpy_ns;
    cm->probe_pieces_ns = p.pieces_ns;
}

void hb_calibrate_pd(struct hb_costmodel *cm, const struct hb_config *cfg,
                     struct ibv_pd *pd, char *why_default, size_t len)
{
    why_default[0] = 0;
    if (cfg->copy_ns_per_kb >= 0)
        hb_cost_set_copy_linear(cm, cfg->copy_ns_per_kb);
    else
        hb_cost_measure_copy(cm, cfg->eager_limit * 2);
    calibrate_copy_routine(cm, cfg);

    if (cfg->lookup_ns >= 0) {
        cm->lookup_ns = cfg->lookup_ns;
        cm->lookup_src = HB_COST_USER;
    } else {
        cm->lookup_ns = hb_measure_lookup_ns(cfg->hash_bits);
        cm->lookup_src = HB_COST_MEASURED;
    }
    calibrate_reg(cm, cfg, pd, why_default, len);
}
