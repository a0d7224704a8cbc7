/* The per-call bookkeeping: one intercepted call -> reuse table, call
 * site and class counters.  MPI-free, so unit tests and the lookup
 * benchmark drive it directly; shim/track_mpi.c turns MPI arguments
 * (datatypes, counts) into the byte extents used here. */
#ifndef HOTBUF_TRACKER_H
#define HOTBUF_TRACKER_H

#include "callsite.h"
#include "costmodel.h"
#include "ops.h"
#include "reuse_table.h"

struct hb_tracker {
    struct hb_table table;
    struct hb_sites sites;
    struct hb_class_stats cls[HB_OP_COUNT];
    struct hb_threshold_params tp;
    uint32_t thr[HB_SIZE_CLASSES];
    unsigned long long calls_when_stopped;  /* all calls when the table stopped */
};

/* A buffer as one call uses it: the span [addr, addr+span) (true extent for
 * derived datatypes) and the payload bytes. */
struct hb_use {
    const void *addr;
    uint64_t span;
    uint64_t bytes;
};

int hb_tracker_init(struct hb_tracker *t, const struct hb_table_params *tp, int site_depth,
                    uint32_t max_sites, const struct hb_threshold_params *thp,
                    const struct hb_costmodel *cm);
void hb_tracker_destroy(struct hb_tracker *t);

/* Records one call.  site_ret is the wrapper's return address (NULL: no
 * site).  Returns the entry when the buffer is tracked, so a later router
 * can look at e->hot. */
struct hb_entry *hb_tracker_record(struct hb_tracker *t, unsigned op, const struct hb_use *u,
                                   void *site_ret);

/* A call that moves nothing (zero bytes or MPI_PROC_NULL peer). */
void hb_tracker_record_empty(struct hb_tracker *t, unsigned op, int proc_null, void *site_ret);

/* Total calls over all classes. */
unsigned long long hb_tracker_calls(const struct hb_tracker *t);

#endif
