/* Shared set-up for the unit tests. */
#ifndef HOTBUF_TEST_FIXTURES_H
#define HOTBUF_TEST_FIXTURES_H

#include <string.h>

#include "track/costmodel.h"

/* A hand-set cost model: C = 100 ns per KiB, V = 20 ns, R = 10 us + 0.25 us
 * per page, so every expected threshold can be computed by hand. */
static inline struct hb_costmodel model(void)
{
    struct hb_costmodel cm;
    memset(&cm, 0, sizeof(cm));
    hb_cost_set_copy_linear(&cm, 100.0);
    cm.lookup_ns = 20;
    cm.reg_base_us = 10;
    cm.reg_page_us = 0.25;
    return cm;
}

#endif
