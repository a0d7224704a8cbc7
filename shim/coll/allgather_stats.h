/* The RDMA Allgather's counters, reasons and report section.  MPI-free
 * (the report's unit test renders it). */
#ifndef HOTBUF_ALLGATHER_STATS_H
#define HOTBUF_ALLGATHER_STATS_H

#include <stdint.h>

#include "report/report.h"

/* Why a communicator stays on PMPI (see HB_REPORT_ENUM). */
#define HB_AG_COMM_REASONS(_)                                                  \
    _(HB_AGC_INTERCOMM, "intercomm")     /* intercommunicator */               \
    _(HB_AGC_NO_RDMA, "no_rdma")         /* a rank without transport/cache */  \
    _(HB_AGC_SINGLE_RANK, "single_rank") /* one rank: nothing to move */       \
    _(HB_AGC_WORLDS, "multiple_worlds")  /* spans worlds (spawn, connect) */   \
    _(HB_AGC_INTRANODE, "intranode")     /* ranks share a node, INTRANODE=0 */ \
    _(HB_AGC_UNREACHABLE, "unreachable") /* a needed connection failed */      \
    _(HB_AGC_MEMORY, "memory")           /* area not allocated or registered */

/* Which algorithm a call took. */
#define HB_AG_ALGOS(_)                                                         \
    _(HB_AG_RD_COPY, "rd_copy")       /* recursive doubling, copy-based */     \
    _(HB_AG_RD_ZCOPY, "rd_zcopy")     /* recursive doubling, zero-copy */      \
    _(HB_AG_RING_COPY, "ring_copy")   /* ring, copy-based */                   \
    _(HB_AG_RING_ZCOPY, "ring_zcopy") /* ring, zero-copy */                    \
    _(HB_AG_DIRECT_COPY, "direct")    /* one step to every rank, copy-based */ \
    _(HB_AG_MCAST, "mcast")           /* one multicast per rank, copy-based */

/* Why a call on a served communicator did not use RDMA. */
#define HB_AG_CALL_REASONS(_)                                                  \
    _(HB_AGP_COMM, "comm")               /* the communicator is not served */  \
    _(HB_AGP_EMPTY, "empty")             /* zero bytes */                      \
    _(HB_AGP_NONBLOCKING, "nonblocking") /* MPI_Iallgather: left to MPI */     \
    _(HB_AGP_THREADS, "threads")     /* MPI_THREAD_MULTIPLE: no state made */  \
    _(HB_AGP_TOO_LARGE, "too_large") /* over 2 GiB, a rank's zcopy_max or   \
                                        a device's largest message */  \
    _(HB_AGP_UNREGISTERED, "unregistered") /* a rank could not register */

enum hb_ag_comm_reason { HB_AG_COMM_REASONS(HB_REPORT_ENUM) HB_AGC_NREASONS };
enum hb_ag_algo { HB_AG_ALGOS(HB_REPORT_ENUM) HB_AG_NALGOS };
enum hb_ag_call_reason { HB_AG_CALL_REASONS(HB_REPORT_ENUM) HB_AGP_NREASONS };

/* One rank's counters (also its report record: summed over the ranks). */
struct hb_ag_summary {
    uint64_t comms, comms_rdma, comms_pmpi[HB_AGC_NREASONS];
    uint64_t calls_rdma, bytes_rdma, algos[HB_AG_NALGOS];
    uint64_t calls_pmpi[HB_AGP_NREASONS];
    uint64_t writes;    /* data and ready records the served calls sent */
    uint64_t ops;       /* RDMA operations they took (one per write) */
    uint64_t imm_stray; /* immediates naming no live state: a bug */
    /* multicast calls: blocks asked for again (NACK) after a silence,
     * blocks sent again over RC on such a request, and packets dropped on
     * arrival (of an earlier call, or a block already complete) */
    uint64_t mc_nacks, mc_repairs, mc_stale;
};

extern const struct hb_report_section hb_ag_section;

#endif
