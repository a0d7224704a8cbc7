/* One line of advice per call site, derived from its figures: what to do,
 * or why nothing is needed.  Pure (MPI-free, unit-tested); the text and
 * JSON reports print the same line, and the HTML page shows the JSON's. */
#ifndef HOTBUF_REPORT_ADVICE_H
#define HOTBUF_REPORT_ADVICE_H

#include <stddef.h>

#include "report.h"

#define HB_ADVICE_LEN 160

/* What the advice knows besides the site: the cost model's thresholds and,
 * per class, why its hot calls stayed on MPI (the sections' why_pmpi;
 * NULL: nothing stayed, or the class is not rerouted by anyone). */
struct hb_advice_ctx {
    const uint32_t *thresholds; /* HB_SIZE_CLASSES entries */
    const struct hb_threshold_params *tp;
    const char *why_pmpi[HB_OP_COUNT];
};

/* Fills ctx from a merged report and its context (asks every section). */
void hb_advice_ctx_init(struct hb_advice_ctx *a, const struct hb_report *r,
                        const struct hb_report_context *ctx);

/* The advice for site s, into buf (always terminated). */
void hb_site_advice(const struct hb_site_summary *s,
                    const struct hb_advice_ctx *a, char *buf, size_t len);

#endif
