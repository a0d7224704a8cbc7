/* The one-sided path's counters, reasons and report section.  MPI-free
 * (the report's unit test renders it). */
#ifndef HOTBUF_RMA_STATS_H
#define HOTBUF_RMA_STATS_H

#include <stdint.h>

#include "report/report.h"

/* Why a window stays on PMPI: enum, name in the report (HB_REPORT_ENUM). */
#define HB_RMA_WIN_REASONS(_)                                                  \
    _(HB_WIN_SHARED, "shared")             /* Win_allocate_shared: not ours */ \
    _(HB_WIN_DYNAMIC, "dynamic")           /* Win_create_dynamic: no attach */ \
    _(HB_WIN_INTERCOMM, "intercomm")       /* on an intercommunicator */       \
    _(HB_WIN_NO_RDMA, "no_rdma")           /* off: no RDMA, RMA=0, threads */  \
    _(HB_WIN_REGISTRATION, "registration") /* window memory unregistered */    \
    _(HB_WIN_WORLDS, "multiple_worlds")    /* spans more than one COMM_WORLD */

/* Why a hot operation stayed on PMPI (HB_RMA_OK is not a reason:
 * ops_pmpi[0] stays 0). */
#define HB_RMA_OP_REASONS(_)                                                   \
    _(HB_RMA_OK, "ok")                     /* moved by hotbuf's RDMA */        \
    _(HB_RMA_DATATYPE, "datatype")         /* not predefined contiguous */     \
    _(HB_RMA_INTRANODE, "intranode")       /* same node, HOTBUF_INTRANODE=0 */ \
    _(HB_RMA_SELF, "self")                 /* target is the calling rank */    \
    _(HB_RMA_CONNECTING, "connecting")     /* connection being made */         \
    _(HB_RMA_PEER_FAILED, "peer_failed")   /* target unreachable over RDMA */  \
    _(HB_RMA_EPOCH, "epoch")               /* no access epoch hotbuf sees */   \
    _(HB_RMA_BOUNDS, "bounds")             /* outside the target's window */   \
    _(HB_RMA_WINDOW, "window")             /* window (part) not registered */  \
    _(HB_RMA_BUSY, "busy")                 /* send queue full */               \
    _(HB_RMA_REGISTRATION, "registration") /* origin buffer unregistered */    \
    _(HB_RMA_TOO_LARGE, "too_large")       /* over either port's max_msg_sz */

enum hb_rma_win_reason { HB_RMA_WIN_REASONS(HB_REPORT_ENUM) HB_WIN_NREASONS };
enum hb_rma_op_reason { HB_RMA_OP_REASONS(HB_REPORT_ENUM) HB_RMA_NREASONS };

/* One rank's counters (also its report record: summed over the ranks). */
struct hb_rma_summary {
    uint64_t windows, windows_rdma, windows_pmpi[HB_WIN_NREASONS];
    uint64_t ops_rdma, bytes_rdma, ops_pmpi[HB_RMA_NREASONS];
    uint64_t reissued;    /* RDMA operations redone on PMPI (peer failed) */
    uint64_t republished; /* window registrations renewed and re-sent */
    uint64_t pscw_tokens; /* start/post handshakes hotbuf added */
};

extern const struct hb_report_section hb_rma_section;

#endif
