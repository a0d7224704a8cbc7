/* The report's progress section: is hotbuf's progress hook active inside
 * MPI, by which mechanism or why not, and how often it ran.  MPI-free (the
 * report's unit test can render it); progress_subsys.c fills the record. */
#ifndef HOTBUF_PROGRESS_STATS_H
#define HOTBUF_PROGRESS_STATS_H

#include <stdint.h>

#include "report/report.h"

#define HB_PROGRESS_STATUS_LEN 160

/* One rank's record; merged: sums, and the first rank's status (rank 0's)
 * plus the first status that differs from it, if any. */
struct hb_progress_record {
    uint64_t active; /* 1: the hook was active on this rank */
    uint64_t passes; /* passes in which it ran hotbuf's progress */
    char status[HB_PROGRESS_STATUS_LEN];
};

struct hb_progress_report {
    uint64_t active, passes;
    char status[HB_PROGRESS_STATUS_LEN];
    char other[HB_PROGRESS_STATUS_LEN]; /* another rank's, when different */
};

extern const struct hb_report_section hb_progress_section;

#endif
