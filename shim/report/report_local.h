/* Step 1 of the report: this rank's tracker -> fixed-size records. */
#ifndef HOTBUF_REPORT_LOCAL_H
#define HOTBUF_REPORT_LOCAL_H

#include "report.h"
#include "track/tracker.h"

/* Fills *rs and *out_sites (malloc'ed, rs->nsites records: this rank's
 * busiest max_sites call sites, symbolized).  Returns 0 or -1. */
int hb_report_local(const struct hb_tracker *t, const struct hb_costmodel *cm,
                    int rank, size_t max_sites, size_t max_buffers,
                    struct hb_rank_summary *rs,
                    struct hb_site_summary **out_sites);

/* Inserts b into top[0..*n) kept sorted by uses, descending, at most cap. */
void hb_top_buffers_insert(struct hb_site_buffer *top, uint32_t *n, size_t cap,
                           const struct hb_site_buffer *b);

#endif
