/* The buffer-reuse report printed at MPI_Finalize.
 *
 * Pipeline, one file a step:
 *   report_local.c   tracker of this rank -> hb_rank_summary + site summaries
 *   report_gather.c  gathers fixed-size records on rank 0 (PMPI, bounded per rank)
 *   report_merge.c   N rank summaries -> hb_report (pure, unit-tested)
 *   report_render.c  hb_report -> text and JSON (pure)
 * The records are plain data sent as MPI_BYTE: every rank runs the same
 * library build, so the layout is the same everywhere.
 */
#ifndef HOTBUF_REPORT_H
#define HOTBUF_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "track/costmodel.h"
#include "track/ops.h"

#define HB_TOP_SIZES 4
#define HB_TOP_BUFFERS 16
#define HB_NAME_LEN 200
#define HB_NOTE_LEN 400
#define HB_MAX_NOTES 8

struct hb_class_summary {
    uint64_t calls, bytes, reuse_calls, hot_calls, untracked_calls, zero_calls, proc_null_calls;
    uint64_t rerouted_calls;  /* moved by hotbuf's own RDMA instead of MPI */
    uint64_t buffers, hot_buffers, max_reuse;
    uint64_t top_size[HB_TOP_SIZES], top_size_calls[HB_TOP_SIZES]; /* by calls, descending */
    uint64_t distinct_sizes;   /* counted exactly (merged: the most on a rank) */
    uint64_t other_size_calls; /* calls at sizes past HB_SIZES_EXACT: not in top_size */
    double saving_ns;       /* hot calls x C(own size) - R per registration */
    double lookup_ns;       /* tracked calls x V: what tracking itself costs */
};

/* One rank's RDMA side: transport, registration cache, memory monitor. */
struct hb_rdma_summary {
    uint64_t up;                  /* 1 if the transport is open */
    uint64_t peers_connected, peers_failed, transport_bytes, per_peer_bytes;
    uint64_t cache_entries, cache_pinned, cache_hits, cache_misses, cache_invalidations;
    uint64_t memmon_events;
};

/* Why a window stays on PMPI, and why a hot operation did. */
enum hb_rma_win_reason {
    HB_WIN_SHARED,       /* MPI_Win_allocate_shared: load/store memory, not ours */
    HB_WIN_DYNAMIC,      /* MPI_Win_create_dynamic: attach/detach not handled */
    HB_WIN_INTERCOMM,    /* created on an intercommunicator */
    HB_WIN_NO_RDMA,      /* rerouting off here (no transport, HOTBUF_RMA=0, threads) */
    HB_WIN_REGISTRATION, /* this rank's window memory could not be registered */
    HB_WIN_NREASONS
};

enum hb_rma_op_reason {
    HB_RMA_OK = 0,       /* moved by hotbuf's RDMA (not a reason: ops_pmpi[0] stays 0) */
    HB_RMA_DATATYPE,     /* not a predefined contiguous type on both sides */
    HB_RMA_INTRANODE,    /* target on this node (HOTBUF_INTRANODE=0) */
    HB_RMA_SELF,         /* target is the calling rank */
    HB_RMA_CONNECTING,   /* the connection to the target is being made */
    HB_RMA_PEER_FAILED,  /* the target is unreachable over hotbuf's RDMA */
    HB_RMA_EPOCH,        /* no access epoch hotbuf can see to the target */
    HB_RMA_BOUNDS,       /* outside the target's window */
    HB_RMA_WINDOW,       /* window (or target's part) not registered */
    HB_RMA_BUSY,         /* send queue full */
    HB_RMA_REGISTRATION, /* the origin buffer could not be registered */
    HB_RMA_NREASONS
};

struct hb_rma_summary {
    uint64_t windows, windows_rdma, windows_pmpi[HB_WIN_NREASONS];
    uint64_t ops_rdma, bytes_rdma, ops_pmpi[HB_RMA_NREASONS];
    uint64_t reissued;           /* RDMA operations redone on PMPI after a peer failed */
    uint64_t pscw_tokens;        /* start/post handshakes hotbuf added */
};

/* MPI_Allgather on hotbuf's RDMA: why a communicator stays on PMPI, which
 * algorithm a call took, why a call on a served communicator did not. */
enum hb_ag_comm_reason {
    HB_AGC_INTERCOMM,    /* intercommunicator */
    HB_AGC_NO_RDMA,      /* off, a single rank, or a rank without transport/cache */
    HB_AGC_INTRANODE,    /* two ranks share a node (HOTBUF_INTRANODE=0) */
    HB_AGC_UNREACHABLE,  /* a connection the algorithms need could not be made */
    HB_AGC_MEMORY,       /* the collective buffer could not be allocated or registered */
    HB_AGC_NREASONS
};
enum hb_ag_algo { HB_AG_RD_COPY, HB_AG_RD_ZCOPY, HB_AG_RING_COPY, HB_AG_RING_ZCOPY, HB_AG_NALGOS };
enum hb_ag_call_reason {
    HB_AGP_COMM,         /* the communicator is not served (see the reasons above) */
    HB_AGP_EMPTY,        /* zero bytes */
    HB_AGP_NONBLOCKING,  /* MPI_Iallgather: left to MPI */
    HB_AGP_NREASONS
};

struct hb_ag_summary {
    uint64_t comms, comms_rdma, comms_pmpi[HB_AGC_NREASONS];
    uint64_t calls_rdma, bytes_rdma, algos[HB_AG_NALGOS], calls_pmpi[HB_AGP_NREASONS];
};

const char *hb_ag_comm_reason_name(unsigned r);
const char *hb_ag_algo_name(unsigned a);
const char *hb_ag_call_reason_name(unsigned r);

const char *hb_rma_win_reason_name(unsigned r);
const char *hb_rma_op_reason_name(unsigned r);

#define HB_FAILED_PEERS 4        /* failed peers each rank reports by name */

struct hb_failed_peer {
    int32_t rank, peer;
    char reason[120];
};

struct hb_rank_summary {
    struct hb_class_summary cls[HB_OP_COUNT];
    struct hb_rdma_summary rdma;
    struct hb_rma_summary rma;
    struct hb_ag_summary ag;
    uint32_t nfailed, pad;       /* failed peers listed below (at most HB_FAILED_PEERS) */
    struct hb_failed_peer failed[HB_FAILED_PEERS];
    uint64_t table_entries, table_hot, table_memory, max_chain;
    uint64_t stopped;                 /* enum hb_stop_reason */
    uint64_t stopped_after_entries, stopped_after_calls;
    uint64_t sites, site_overflow_calls;
    uint64_t nsites;                  /* site summaries this rank sends */
};

struct hb_site_buffer {
    uint64_t addr, size, uses, hot_uses;
    int32_t rank, hot;
};

struct hb_site_summary {
    char name[HB_NAME_LEN];
    uint32_t op, ranks;               /* ranks: how many ranks have this site */
    uint64_t calls, bytes, reuse_calls, hot_calls, untracked_calls;
    uint64_t empty_calls;             /* zero-byte or MPI_PROC_NULL: no buffer */
    uint64_t rerouted_calls;          /* moved by hotbuf's own RDMA */
    uint64_t buffers, hot_buffers, max_reuse;
    double saving_ns;
    uint32_t ntop, pad;
    struct hb_site_buffer top[HB_TOP_BUFFERS]; /* by uses, descending */
};

/* One class after merging all ranks. */
struct hb_class_report {
    struct hb_class_summary sum;      /* sums; max_reuse is the maximum */
    uint32_t ranks;                   /* ranks with at least one call */
    uint64_t max_reuse_min, max_reuse_max;
    double max_reuse_avg;             /* of the per-rank maximum reuse counts */
    uint64_t freq_size_min, freq_size_max;
    double freq_size_avg;             /* of the per-rank most frequent sizes */
};

struct hb_report {
    int nranks;
    struct hb_class_report cls[HB_OP_COUNT];
    uint64_t entries_total, entries_max, hot_entries_total, memory_max, max_chain;
    uint32_t ranks_adapted, ranks_full;         /* ranks whose table stopped growing */
    /* Earliest stop over the ranks, per reason ([0] adapted, [1] full). */
    uint64_t stopped_after_calls_min[2], stopped_after_entries_min[2];
    uint64_t sites_total, site_overflow_calls;
    struct hb_rdma_summary rdma;                /* sums, except: up = ranks up, transport_bytes
                                                   and cache_pinned = the largest rank's */
    struct hb_rma_summary rma;                  /* sums */
    struct hb_ag_summary ag;                    /* sums */
    struct hb_failed_peer failed[16];           /* the first failed peers, by rank */
    uint32_t nfailed;
    struct hb_site_summary *sites;              /* merged, by calls descending */
    size_t nsites;
};

/* What the report says about the run besides the counts. */
struct hb_report_context {
    const struct hb_config *cfg;
    const struct hb_costmodel *cost;
    const struct hb_threshold_params *tp;
    const uint32_t *thresholds;       /* HB_SIZE_CLASSES entries */
    const char *mpi_library;
    const char *thread_level;
    const char *rdma_status;          /* rank 0's one-line RDMA status */
    char notes[HB_MAX_NOTES][HB_NOTE_LEN];
    int nnotes;
};

/* Merges nranks rank summaries and their site summaries (sites[i] holds
 * rank i's site records, nsites[i] of them).  Keeps at most max_sites
 * sites and max_buffers buffers per site.  Returns 0 or -1 (no memory). */
int hb_report_merge(struct hb_report *r, const struct hb_rank_summary *ranks, int nranks,
                    const struct hb_site_summary *const *sites, size_t max_sites,
                    size_t max_buffers);
void hb_report_free(struct hb_report *r);

void hb_report_render_text(FILE *out, const struct hb_report *r,
                           const struct hb_report_context *ctx);
void hb_report_render_json(FILE *out, const struct hb_report *r,
                           const struct hb_report_context *ctx);

/* Reuse percentage: calls on an already seen buffer, of the calls that
 * named a buffer (zero-byte and MPI_PROC_NULL calls name none). */
double hb_reuse_pct(const struct hb_class_summary *c);
double hb_site_reuse_pct(const struct hb_site_summary *s);

#endif
