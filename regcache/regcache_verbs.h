/* The registration cache's operations for a real NIC: ibv_reg_mr and
 * ibv_dereg_mr on one protection domain, and the cache's default limits
 * from RLIMIT_MEMLOCK. */
#ifndef HOTBUF_REGCACHE_VERBS_H
#define HOTBUF_REGCACHE_VERBS_H

#include <stddef.h>

#include "regcache.h"

struct ibv_pd;
struct ibv_mr;

/* ops_ctx is the struct ibv_pd *; a region's handle is its struct ibv_mr *. */
extern const struct hb_regcache_ops hb_regcache_verbs_ops;

/* The same, keeping the memory-change monitor (memmon.h) informed: each
 * range is watched before it is pinned and unwatched after it is released,
 * so no change to registered memory goes unseen.  The monitor must be
 * started, with hb_regcache_invalidate as its callback. */
extern const struct hb_regcache_ops hb_regcache_verbs_watched_ops;

/* Access flags every cached registration gets: local write (for RDMA READ
 * into it) and remote read/write (for a peer's RDMA into it). */
int hb_regcache_verbs_access(void);

/* Pinned-bytes cap for the cache: its share of RLIMIT_MEMLOCK (three
 * eighths, util/memlock.h), so the transport's own queues and control
 * area still fit and half the limit stays the MPI's own; 0 (no cap) when the limit is infinite or the process may
 * exceed it (CAP_IPC_LOCK). */
size_t hb_regcache_default_max_bytes(void);

static inline struct ibv_mr *hb_region_mr(const struct hb_region *r)
{
    return (struct ibv_mr *)hb_region_handle(r);
}

#endif
