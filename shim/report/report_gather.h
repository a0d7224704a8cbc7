/* Step 2 of the report: gather every rank's records on rank 0 and write
 * the report where HOTBUF_REPORT / HOTBUF_REPORT_FILE say. */
#ifndef HOTBUF_REPORT_GATHER_H
#define HOTBUF_REPORT_GATHER_H

#include <mpi.h>

#include "report.h"
#include "track/tracker.h"

/* What the report needs from the runtime at finalize. */
struct hb_report_input {
    MPI_Comm comm; /* every rank of it calls hb_report_at_finalize */
    int rank, size, thread_level;
    int spawned; /* a job MPI_Comm_spawn started (its own file names) */
    const struct hb_config *cfg;
    const struct hb_costmodel *cost;
    const struct hb_tracker
        *tracker; /* NULL: this rank has none (reports nothing) */
    const struct hb_threshold_params
        *tp;                        /* the thresholds, also without a tracker */
    const uint32_t *thresholds;     /* HB_SIZE_CLASSES entries */
    struct hb_report_layout layout; /* the same on every rank */
    const void *sections; /* this rank's section records, in layout order */
    const char (*notes)[HB_NOTE_LEN];
    int nnotes;
};

/* Collective over in->comm; call before PMPI_Finalize. */
void hb_report_at_finalize(const struct hb_report_input *in);

#endif
