/* Point-to-point's counters, reasons and report section.  MPI-free (the
 * report's unit test renders it). */
#ifndef HOTBUF_P2P_STATS_H
#define HOTBUF_P2P_STATS_H

#include <stdint.h>

#include "report/report.h"

/* Why a communicator that was asked about stayed off pull: enum, name in
 * the report (HB_REPORT_ENUM).  Counted once per communicator. */
#define HB_P2P_OFF_REASONS(_)                                                  \
    _(HB_P2P_OFF_NOT_NEEDED, "not_needed")    /* auto: nothing asked */        \
    _(HB_P2P_OFF_SWITCH, "switched_off")      /* HOTBUF_P2P=0 */               \
    _(HB_P2P_OFF_UNCHECKED, "unchecked_mpi")  /* bindings not checked */       \
    _(HB_P2P_OFF_NO_HOOK, "no_progress_hook") /* no progress inside MPI */     \
    _(HB_P2P_OFF_THREADS, "threads")          /* MPI_THREAD_MULTIPLE */        \
    _(HB_P2P_OFF_INTERCOMM, "intercomm")      /* intercommunicator */          \
    _(HB_P2P_OFF_WORLDS, "multiple_worlds")   /* spans several worlds */       \
    _(HB_P2P_OFF_SINGLE, "single_rank")       /* one rank: no peer */          \
    _(HB_P2P_OFF_MEMORY, "memory")            /* out of memory */

enum hb_p2p_off_reason { HB_P2P_OFF_REASONS(HB_REPORT_ENUM) HB_P2P_NREASONS };

/* One rank's counters (also its report record: summed over the ranks,
 * except the high-water mark, the largest of any rank). */
struct hb_p2p_summary {
    uint64_t comms_seen;                 /* communicators classified */
    uint64_t comms_pulled;               /* entered pull */
    uint64_t comms_off[HB_P2P_NREASONS]; /* stayed off, by reason */
    uint64_t claimed, claimed_bytes;     /* messages taken from MPI */
    uint64_t matched_posted;  /* claimed ones that met a posted receive */
    uint64_t migrated;        /* PMPI receives moved into pull */
    uint64_t migrate_matched; /* ... that MPI had matched already */
    uint64_t unexp_hwm;       /* unexpected store, most messages at once */
    uint64_t probes_answered; /* probes served from the store */
    uint64_t mprobes;         /* message handles handed out */
    uint64_t truncated;       /* receives that raised MPI_ERR_TRUNCATE */
    uint64_t frees_deferred;  /* Comm_free delayed by pending receives */
};

extern const struct hb_report_section hb_p2p_section;

#endif
