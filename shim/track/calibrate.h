/* Start-up calibration of the cost model: C (memcpy), V (reuse-table
 * lookup) and R (ibv_reg_mr, where a verbs device exists), each unless the
 * user gave it.  Runs on one rank; the result is broadcast. */
#ifndef HOTBUF_CALIBRATE_H
#define HOTBUF_CALIBRATE_H

#include <stddef.h>

#include "config/config.h"
#include "costmodel.h"

struct ibv_pd;

/* Fills *cm.  why_default receives, when R falls back to its default, the
 * reason in a few words (e.g. "no verbs device").  R is measured on pd
 * (the transport's, hb_transport_pd) when given, else on the device the
 * transport chooses for cfg->device and cfg->port, opened for the purpose. */
void hb_calibrate_pd(struct hb_costmodel *cm, const struct hb_config *cfg,
                     struct ibv_pd *pd, char *why_default, size_t len);

/* Lookup overhead V in ns: a find in a populated table of 2^bits buckets. */
double hb_measure_lookup_ns(int bits);

/* Measures R with ibv_reg_mr on the device util/ibdev.h chooses for
 * (device, port) ("" = the first with an ACTIVE port).  Returns 0 and sets
 * base/page in us, or -1 with a reason in why. */
int hb_measure_reg_cost(const char *device, int port, double *base_us,
                        double *page_us, char *why, size_t len);

/* The same on an open protection domain (the transport's). */
int hb_measure_reg_cost_pd(struct ibv_pd *pd, double *base_us, double *page_us,
                           char *why, size_t len);

#define HB_DEFAULT_REG_BASE_US 10.0
#define HB_DEFAULT_REG_PAGE_US 0.25

#endif
