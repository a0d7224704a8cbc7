/* Point-to-point's counters, reasons and report section.  MPI-free (the
 * report's unit test renders it). */
#ifndef HOTBUF_P2P_STATS_H
#define HOTBUF_P2P_STATS_H

#include <stdint.h>

#include "report/report.h"
#include "p2p_slots.h"

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

/* Why a grant was refused (by the receiver, or given up by the sender). */
#define HB_P2P_REFUSALS(_)                                                     \
    _(HB_P2P_REFUSE_NO_RING, "no_ring")      /* ring off at the receiver */    \
    _(HB_P2P_REFUSE_UNKNOWN, "unknown_comm") /* no such communicator */        \
    _(HB_P2P_REFUSE_UNNAMED, "unnamed")      /* names differ or missing */     \
    _(HB_P2P_REFUSE_NO_PULL, "no_pull")      /* cannot match there */          \
    _(HB_P2P_REFUSE_BUDGET, "budget")        /* no memory for the channel */   \
    _(HB_P2P_REFUSE_CHANNEL, "channel")      /* the sender could not use it */ \
    _(HB_P2P_REFUSE_INTRANODE,                                                 \
      "intranode") /* same node: MPI's shared memory */                        \
    _(HB_P2P_REFUSE_NOT_WORTH, "not_worth") /* the policy: pull costs more */

enum hb_p2p_refusal { HB_P2P_REFUSALS(HB_REPORT_ENUM) HB_P2P_NREFUSALS };

/* Part 2's counters: field, JSON key. */
#define HB_P2P_RING_COUNTERS(_)                                                \
    _(pairs_asked, "asked")       /* REQs sent */                              \
    _(pairs_live, "live")         /* pairs that went live (sender) */          \
    _(pairs_dead, "dead")         /* live pairs back on MPI after a fault */   \
    _(grants, "granted")          /* GRANTs sent (receiver) */                 \
    _(markers_out, "markers_out") /* in-band markers sent */                   \
    _(markers_in, "markers_in")   /* ... and consumed */                       \
    _(ring_msgs, "ring_msgs")     /* messages sent by ring */                  \
    _(ring_bytes, "ring_bytes")                                                \
    _(ring_zcopy, "ring_zcopy")   /* ... of them from the user buffer */       \
    _(live_by_mpi, "live_by_mpi") /* sends on live pairs that went by MPI */   \
    _(live_connecting, "live_connecting") /* ... as the QP was connecting */   \
    _(live_no_slot, "live_no_slot") /* ... for want of a slot (credit) */      \
    _(hot_missed, "hot_missed")     /* hot sends, live pair, not zero-copy */  \
    _(zcopy_churned, "zcopy_churned") /* ... of them: the buffer's          \
                                   registrations did not last (copied) */  \
    _(ring_received, "ring_received") /* records taken (receiver) */           \
    _(ring_dups, "ring_dups")         /* duplicates dropped (after a fault) */ \
    _(ring_gaps, "ring_gaps")         /* records placed, never completed */    \
    _(ring_resends, "resends")        /* records resent by MPI (sender) */     \
    _(ring_resent_in, "resent_in")    /* RESENDs received */                   \
    _(closes_out, "closes")           /* CLOSEs sent at Comm_free (sender) */  \
    _(closes_in, "closes_in")         /* CLOSEs received */                    \
    _(frees_closing, "frees_closing") /* Comm_frees held for a CLOSE */        \
    _(held_at_end, "held_at_end")     /* ... still held at MPI_Finalize */     \
    _(gones_out, "gones")             /* GONEs sent: GRANTs after our free */  \
    _(gones_in, "gones_in")           /* GONEs received */                     \
    _(ring_credits, "credits")        /* credit immediates sent */             \
    _(ring_sync, "ring_sync")         /* synchronous sends by ring (sender) */ \
    _(psend_pinned, "persistent_registered") /* Send_init buffers, at init */  \
    _(precv_pinned, "persistent_recv_registered") /* Recv_init buffers */      \
    _(pinned_first, "persistent_first_hits") /* first uses of them that    \
                                    found the init's registration */   \
    _(rndv_msgs, "rndv_msgs")       /* rendezvous records written (sender) */  \
    _(rndv_bytes, "rndv_bytes")     /* ... their messages' bytes */            \
    _(rndv_noreg, "rndv_noreg")     /* ... not: the buffer not registrable */  \
    _(rndv_churned, "rndv_churned") /* by MPI: the buffer's registrations   \
                                       did not last (regcache_churn.h) */  \
    _(rndv_reads, "rndv_reads")     /* messages read (receiver) */             \
    _(rndv_read_bytes, "rndv_read_bytes")                                      \
    _(rndv_bounced, "rndv_bounced")       /* ... through a bounce buffer */    \
    _(rndv_churned_rx, "rndv_churned_rx") /* ... for the receive buffer's   \
                                             churn (regcache_churn.h) */  \
    _(rndv_fetched, "rndv_fetched") /* ... for a matched probe's hand-out */   \
    _(rndv_read_failed, "rndv_read_failed") /* reads that failed */            \
    _(rndv_resent_in, "rndv_resent_in")     /* their payload by RESEND */      \
    _(sync_acks, "sync_acks")               /* their SYNC_ACKs received */     \
    _(sync_acks_mpi, "sync_acks_mpi") /* SYNC_ACKs sent by MPI (receiver) */   \
    _(chans, "channels")              /* channels made (either direction) */   \
    _(chan_bytes, "channel_bytes")    /* their registered memory, charged */   \
    _(revokes, "revokes")             /* REVOKEs sent (receiver) */            \
    _(revoke_answers, "revoked")      /* ... answered (sender) */              \
    _(chans_freed, "channels_freed")  /* receive regions freed after them */   \
    _(chan_bytes_freed, "channel_bytes_freed") /* ... back to the budget */

#define HB_P2P_COUNTER_FIELD(f, key) uint64_t f;

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
    uint64_t frees_deferred;  /* Comm_free delayed: receives pending or
                                 persistent */
    HB_P2P_RING_COUNTERS(HB_P2P_COUNTER_FIELD)
    uint64_t pairs_refused[HB_P2P_NREFUSALS];  /* sender: refused, by why */
    uint64_t grants_refused[HB_P2P_NREFUSALS]; /* receiver: refused */
    /* receive slots by bucket, over every channel: records copied out,
     * their bytes, and the slot capacity they held (utilization) */
    uint64_t slot_recs[HB_SLOT_BUCKETS];
    uint64_t slot_msg_bytes[HB_SLOT_BUCKETS];
    uint64_t slot_cap_bytes[HB_SLOT_BUCKETS];
};

extern const struct hb_report_section hb_p2p_section;

#endif
