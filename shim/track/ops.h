/* Operation classes: how a buffer is used.  Each class has its own
 * counters and report section; a buffer used in two classes is tracked
 * twice (thresholds and routing differ between them). */
#ifndef HOTBUF_OPS_H
#define HOTBUF_OPS_H

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

/* Per-class counters kept on the per-call path. */
struct hb_class_stats {
    unsigned long long calls;           /* every intercepted call */
    unsigned long long bytes;           /* payload bytes */
    unsigned long long reuse_calls;     /* on a buffer already in the table */
    unsigned long long hot_calls;       /* on a buffer that was hot */
    unsigned long long untracked_calls; /* new buffer, table no longer growing */
    unsigned long long zero_calls;      /* zero bytes: nothing to track */
    unsigned long long proc_null_calls; /* peer MPI_PROC_NULL: nothing moves */
    unsigned long long rerouted_calls;  /* moved by hotbuf's own RDMA instead of MPI */
};

#endif
