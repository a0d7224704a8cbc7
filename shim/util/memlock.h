/* RLIMIT_MEMLOCK and who gets which part of it.
 *
 * Pinned memory in a hotbuf process has three owners: the MPI itself (its
 * own registrations: eager and rendezvous buffers, its windows, the
 * attachments of dynamic windows, its libfabric or UCX pools), hotbuf's
 * registration cache (application buffers, evicted when it reaches its
 * cap) and hotbuf's transport (its control area and queues, pinned for its
 * whole life).  hotbuf is an optimization the MPI never asked for: it must
 * not take the limit the MPI's own use of the device needs (issue 11,
 * defect 13: with three quarters to the cache, a 6 MiB window of an
 * 8 MiB limit left Open MPI's osc rdma over libfabric ENOMEM).  The split
 * is decided here, once:
 *
 *     the MPI              half of the limit, never claimed by hotbuf
 *     registration cache   three eighths
 *     transport            the eighth that is left
 *
 * The transport refuses to open when its constant part does not fit in its
 * eighth (so a later cache eviction can never be what makes it fail), and
 * the cache's default byte cap is the three eighths.  No limit applies
 * when RLIMIT_MEMLOCK is infinite or the process holds CAP_IPC_LOCK (root
 * does): then there is nothing to share and both get "unlimited" (0).
 */
#ifndef HOTBUF_UTIL_MEMLOCK_H
#define HOTBUF_UTIL_MEMLOCK_H

#include <stddef.h>

/* 1 if the process may pin beyond RLIMIT_MEMLOCK (effective CAP_IPC_LOCK). */
int hb_memlock_can_exceed(void);

/* The limit that applies in bytes, or 0 when none does (infinite, or
 * CAP_IPC_LOCK).  A limit of 0 bytes is returned as 1: nothing fits. */
size_t hb_memlock_limit(void);

/* hotbuf's share of limit, cache and transport together: half (0 = no
 * limit -> 0).  The rest is the MPI's. */
size_t hb_memlock_hotbuf_share(size_t limit);

/* The registration cache's share of limit (0 = no limit -> 0, no cap). */
size_t hb_memlock_cache_share(size_t limit);

/* The transport's share of limit: what the cache leaves of hotbuf's. */
size_t hb_memlock_transport_share(size_t limit);

/* The smallest limit whose transport share holds `pinned` bytes (for the
 * "ulimit -l at least ..." hint). */
size_t hb_memlock_limit_for_transport(size_t pinned);

#endif
