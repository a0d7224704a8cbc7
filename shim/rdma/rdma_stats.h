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

/* One rank's RDMA figures. */
struct hb_rdma_summary {
    uint64_t up;                  /* 1 if the transport is open */
    uint64_t peers_connected, peers_failed, transport_bytes, per_peer_bytes;
    uint64_t cache_entries, cache_pinned, cache_hits, cache_misses, cache_invalidations;
    uint64_t memmon_events;
};

/* One rank's record. */
struct hb_rdma_record {
    struct hb_rdma_summary s;
    uint32_t nfailed, pad;        /* failed peers listed below */
    struct hb_failed_peer failed[HB_FAILED_PEERS];
    char status[HB_RDMA_STATUS_LEN]; /* the one-line RDMA status */
};

/* All ranks merged. */
struct hb_rdma_report {
    struct hb_rdma_summary s;     /* sums, except: up = ranks up, transport_bytes,
                                     per_peer_bytes and cache_pinned = the largest rank's */
    uint32_t nfailed, pad;        /* the first failed peers, by rank */
    struct hb_failed_peer failed[HB_FAILED_PEERS_SHOWN];
    char status[HB_RDMA_STATUS_LEN]; /* the first rank's (rank 0's) */
};

extern const struct hb_report_section hb_rdma_section;

#endif
