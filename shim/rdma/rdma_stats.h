/* The RDMA part of the report: transport, registration cache, memory
 * monitor and the peers that could not be reached.  MPI-free (the report's
 * unit test renders it); rdma.c fills one rank's record. */
#ifndef HOTBUF_RDMA_STATS_H
#define HOTBUF_RDMA_STATS_H

#include <stdint.h>

#include "report/report.h"

#define HB_FAILED_PEERS 4        /* failed peers each rank reports by name */
#define HB_FAILED_PEERS_SHOWN 16 /* ... and the report lists at most */
#define HB_RDMA_STATUS_LEN 320

struct hb_failed_peer {
    int32_t rank, peer;
    char reason[120];
};

/* One rank's RDMA figures: field, JSON key of the merged value. */
#define HB_RDMA_FIELDS(_)                                                      \
    _(up, "ranks_up") /* 1 if the transport is open */                         \
    _(peers_connected, "peers_connected")                                      \
    _(peers_failed, "peers_failed")                                            \
    _(transport_bytes, "transport_bytes_max")                                  \
    _(per_peer_bytes, "bytes_per_peer")                                        \
    _(cache_entries, "cache_regions")                                          \
    _(cache_pinned, "cache_pinned_max")                                        \
    _(cache_hits, "cache_hits")                                                \
    _(cache_misses, "cache_misses")                                            \
    _(cache_invalidations, "cache_invalidations")                              \
    _(memmon_events, "memmon_events")                                          \
    _(imm_dropped, "imm_dropped") /* immediates of no registered class */

#define HB_RDMA_FIELD(f, key) uint64_t f;
struct hb_rdma_summary {
    HB_RDMA_FIELDS(HB_RDMA_FIELD)
};
#undef HB_RDMA_FIELD

/* One rank's record. */
struct hb_rdma_record {
    struct hb_rdma_summary s;
    uint32_t nfailed, pad; /* failed peers listed below */
    struct hb_failed_peer failed[HB_FAILED_PEERS];
    char status[HB_RDMA_STATUS_LEN]; /* the one-line RDMA status */
};

/* All ranks merged. */
struct hb_rdma_report {
    struct hb_rdma_summary s; /* sums, except: up = ranks up, transport_bytes,
                                     per_peer_bytes and cache_pinned = the largest rank's */
    uint32_t nfailed, pad;    /* the first failed peers, by rank */
    struct hb_failed_peer failed[HB_FAILED_PEERS_SHOWN];
    char status[HB_RDMA_STATUS_LEN]; /* the first rank's (rank 0's) */
};

extern const struct hb_report_section hb_rdma_section;

#endif
