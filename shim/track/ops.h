/* Operation classes: how a buffer is used.  Each class has its own
 * counters and report section; a buffer used in two classes is tracked
 * twice (thresholds and routing differ between them). */
#ifndef HOTBUF_OPS_H
#define HOTBUF_OPS_H

#include <stdint.h>

enum hb_op {
    HB_OP_SEND,      /* MPI_Send family, persistent sends counted per Start */
    HB_OP_PUT,       /* MPI_Put, MPI_Rput: the origin buffer */
    HB_OP_GET,       /* MPI_Get, MPI_Rget: the origin (result) buffer */
    HB_OP_ALLGATHER, /* MPI_Allgather, MPI_Iallgather: the receive buffer */
    HB_OP_COUNT
};

static inline const char *hb_op_name(unsigned op)
{
    static const char *const names[] = {"send", "put", "get", "allgather"};
    return op < HB_OP_COUNT ? names[op] : "?";
}

/* The counters every intercepted call updates, per class and per call
 * site: one list for the tracker's structs (here, callsite.h), the report's
 * records (report/report.h) and every copy and sum of them.
 *   calls            every intercepted call
 *   bytes            payload bytes
 *   reuse_calls      on a buffer already in the table
 *   hot_calls        calls that were hot (tracker.h)
 *   untracked_calls  new buffer while the table no longer grows
 *   rerouted_calls   moved by hotbuf's own RDMA instead of MPI */
#define HB_CALL_COUNTERS(_)                                                    \
    _(calls)                                                                   \
    _(bytes) _(reuse_calls) _(hot_calls) _(untracked_calls) _(rerouted_calls)
#define HB_COUNTER_FIELD(name) uint64_t name;
#define HB_COUNTER_COPY(name) to->name = from->name;
#define HB_COUNTER_ADD(name) to->name += from->name;

/* Per-class counters kept on the per-call path. */
struct hb_class_stats {
    HB_CALL_COUNTERS(HB_COUNTER_FIELD)
    uint64_t zero_calls;      /* zero bytes: nothing to track */
    uint64_t proc_null_calls; /* peer MPI_PROC_NULL: nothing moves */
};

#endif
