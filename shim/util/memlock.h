/* RLIMIT_MEMLOCK and who gets which part of it.
 *
 * Pinned memory in a hotbuf process has two owners: the registration
 * cache (application buffers, evicted when it reaches its cap) and the
 * transport (its control area and queues, pinned for its whole life).
 * The split is decided here, once:
 *
 *     registration cache   three quarters of the limit
 *     transport            the quarter that is left
 *
 * The transport refuses to open when its constant part does not fit in its
 * quarter (so a later cache eviction can never be what makes it fail), and
 * the cache's default byte cap is the three quarters.  No limit applies
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

/* The registration cache's share of limit (0 = no limit -> 0, no cap). */
size_t hb_memlock_cache_share(size_t limit);

/* The transport's share of limit: what the cache's share leaves. */
size_t hb_memlock_transport_share(size_t limit);

/* The smallest limit whose transport share holds `pinned` bytes (for the
 * "ulimit -l at least ..." hint). */
size_t hb_memlock_limit_for_transport(size_t pinned);

#endif
