/* hotbuf registration cache: maps application address ranges to memory
 * registrations, keeps them (lazily) after use, evicts LRU under caps, and
 * stays coherent with the address space via hb_regcache_invalidate().
 *
 * The cache does not know about verbs: registration and deregistration are
 * callbacks (ibv_reg_mr / ibv_dereg_mr in the transport, a mock in tests).
 *
 * Locking model
 *  - get, put, reap, stats and destroy take one internal mutex.  The reg
 *    and dereg callbacks run with it held, so they must not call get, put,
 *    reap, stats or destroy on the same cache (that would self-deadlock);
 *    they may trigger memory hooks that call hb_regcache_invalidate().
 *  - hb_regcache_invalidate() takes no lock, never allocates, never calls
 *    reg/dereg and is wait-free.  It may run on any thread, in a signal
 *    handler, or re-entrantly on a thread that is inside get/put.  It only
 *    queues the range; the next get/put/reap (under the mutex) applies it.
 *  - Region accessors read immutable fields and need no lock.
 *  - destroy must not race with any other call, including invalidate
 *    (unhook the memory monitor first).
 *
 * Coherence guarantee: once hb_regcache_invalidate(addr, len) has returned,
 * no get that starts afterwards returns a region overlapping that range
 * which was registered before the call.  Regions a caller still holds are
 * marked invalid and deregistered when the last reference is put.
 */
#ifndef HOTBUF_REGCACHE_H
#define HOTBUF_REGCACHE_H

#include <stddef.h>
#include <stdint.h>

struct hb_regcache;
struct hb_region;

struct hb_regcache_ops {
    /* Registers [addr, addr+len) (page aligned).  Returns 0 and sets
     * *handle, or a negative errno.  -ENOMEM, -EAGAIN and -ENOSPC mean
     * "out of pinnable memory": the cache evicts idle regions and retries.
     * Any other error is returned to the caller as is. */
    int (*reg)(void *ctx, void *addr, size_t len, void **handle);
    /* Releases a handle returned by reg.  Must not fail. */
    void (*dereg)(void *ctx, void *handle);
};

struct hb_regcache_stats {
    uint64_t hits;                 /* gets served by an existing region */
    uint64_t misses;               /* gets that had to register */
    uint64_t failures;             /* gets that returned an error */
    uint64_t evictions;            /* idle regions dropped for room */
    uint64_t invalidations;        /* regions dropped by invalidate */
    uint64_t merges;               /* regions absorbed into a larger one */
    uint64_t reg_calls;            /* calls to ops->reg, including failed */
    uint64_t reg_failures;         /* ops->reg calls that failed */
    uint64_t dereg_calls;          /* calls to ops->dereg */
    uint64_t invalidate_calls;     /* hb_regcache_invalidate calls */
    uint64_t invalidate_filtered;  /* ... outside anything ever registered */
    uint64_t invalidate_overflows; /* ... that found the queue full and
                                      forced a full flush */
    uint64_t entries;              /* live registrations now */
    uint64_t in_use;               /* ... of which referenced or retired */
    uint64_t pinned_bytes;         /* bytes registered now */
    uint64_t peak_pinned_bytes;
};

/* Creates a cache.  max_entries / max_bytes cap live registrations and
 * registered bytes; 0 means unlimited.  ops is copied.  Returns 0 or
 * -EINVAL / -ENOMEM. */
int hb_regcache_create(const struct hb_regcache_ops *ops, void *ops_ctx,
                       size_t max_entries, size_t max_bytes,
                       struct hb_regcache **out);

/* Deregisters every region (even ones still referenced: their handles
 * become invalid) and frees the cache. */
void hb_regcache_destroy(struct hb_regcache *rc);

/* Returns in *out a referenced region covering [addr, addr+len) rounded
 * out to pages.  The region may be larger than asked for.  Errors:
 *  -EINVAL  len == 0 or the range wraps the address space
 *  -E2BIG   the page-aligned range alone exceeds max_bytes
 *  -ENOSPC  caps reached and every region is in use
 *  -EAGAIN  the range kept being invalidated while registering
 *  -ENOMEM  no memory for bookkeeping, or reg kept failing with -ENOMEM
 *  other    the reg callback's own error
 * On error the caller should fall back to the uncached path. */
int hb_regcache_get(struct hb_regcache *rc, const void *addr, size_t len,
                    struct hb_region **out);

/* Drops a reference taken by get.  Idle regions stay registered (lazy
 * deregistration) until evicted or invalidated; an invalidated region is
 * deregistered here when its last reference goes. */
void hb_regcache_put(struct hb_regcache *rc, struct hb_region *region);

/* Marks [addr, addr+len) as no longer mapping what was registered.  See
 * the locking model above: lock-free, allocation-free, wait-free. */
void hb_regcache_invalidate(struct hb_regcache *rc, const void *addr,
                            size_t len);

/* Applies queued invalidations and deregisters what they freed.  get and
 * put do this too; call it from a progress loop to release pinned memory
 * promptly when the application stops communicating. */
void hb_regcache_reap(struct hb_regcache *rc);

void hb_regcache_stats(struct hb_regcache *rc, struct hb_regcache_stats *out);

void *hb_region_addr(const struct hb_region *region);
size_t hb_region_len(const struct hb_region *region);
void *hb_region_handle(const struct hb_region *region);
/* Which registration this is: unique within its cache, never reused.  A
 * get that returns another serial than the last get of the same address
 * found the old registration gone (invalidated, evicted or merged). */
uint64_t hb_region_serial(const struct hb_region *region);

#endif
