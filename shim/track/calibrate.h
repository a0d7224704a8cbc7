/* Start-up calibration of the cost model: C (memcpy), V (reuse-table
 * lookup) and R (ibv_reg_mr, where a verbs device exists), each unless the
 * user gave it.  Runs on one rank; the result is broadcast. */
#ifndef HOTBUF_CALIBRATE_H
#define HOTBUF_CALIBRATE_H

#include <stddef.h>

#include "config/config.h"
#include "costmodel.h"

/* Fills *cm.  why_default receives, when R falls back to its default, the
 * reason in a few words (e.g. "no verbs device"). */
void hb_calibrate(struct hb_costmodel *cm, const struct hb_config *cfg, char *why_default,
                  size_t len);

/* Lookup overhead V in ns: a find in a populated table of 2^bits buckets. */
double hb_measure_lookup_ns(int bits);

/* Measures R with ibv_reg_mr on the named device ("" = first).  Returns 0
 * and sets base/page in us, or -1 with a reason in why. */
int hb_measure_reg_cost(const char *device, double *base_us, double *page_us, char *why,
                        size_t len);

#define HB_DEFAULT_REG_BASE_US 10.0
#define HB_DEFAULT_REG_PAGE_US 0.25

#endif
