/* Pending-invalidation queue: how memory hooks talk to the cache without
 * locks or allocation.
 *
 * Producers (hb_invalq_push) are memory-event callbacks: any thread, maybe
 * a signal handler, maybe the very thread that is inside the cache holding
 * its mutex (e.g. ibv_reg_mr -> malloc -> munmap -> hook).  A push is
 * wait-free: a bounded scan over a fixed slot array with one CAS per slot,
 * then a release store.  When every slot is busy it records an overflow,
 * which the consumer treats as "invalidate everything" -- conservative but
 * never stale.
 *
 * The single consumer (hb_invalq_drain) is whoever holds the cache mutex.
 * It reports every range whose push has *returned* by the time the drain
 * started; a push still in progress may be reported now or by the next
 * drain.  `pending` makes the common empty case one atomic load.
 *
 * A hull [lo, hi) of every range ever announced with hb_invalq_cover()
 * lets pushes outside anything the cache ever registered return at once.
 * It only grows, so two unsynchronised loads can never produce a window
 * smaller than the hull at the time of the first load.
 */
#ifndef HOTBUF_REGCACHE_INVAL_QUEUE_H
#define HOTBUF_REGCACHE_INVAL_QUEUE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Pushes are async-signal-safe only if these atomics are lock-free. */
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "need lock-free pointers");
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2, "need lock-free longs");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "need lock-free ints");

#define HB_INVALQ_SLOTS 128

struct hb_invalq_slot {
    atomic_uint state; /* FREE -> WRITING -> READY -> FREE */
    uintptr_t start;   /* written only while WRITING, read while READY */
    uintptr_t end;
};

struct hb_invalq {
    atomic_uintptr_t hull_lo;   /* lowest start ever covered */
    atomic_uintptr_t hull_hi;   /* highest end ever covered */
    atomic_ulong pending;       /* pushes started minus pushes consumed */
    atomic_ulong overflows;     /* pushes that found no free slot */
    atomic_uint hint;           /* where the next push starts scanning */
    atomic_ulong stat_pushes;   /* every push call */
    atomic_ulong stat_filtered; /* pushes outside the hull */
    atomic_ulong stat_overflows;
    struct hb_invalq_slot slots[HB_INVALQ_SLOTS];
};

/* Called once per drained range; [0, UINTPTR_MAX) means "everything". */
typedef void (*hb_invalq_fn)(void *arg, uintptr_t start, uintptr_t end);

void hb_invalq_init(struct hb_invalq *q);

/* Announces that [start, end) may get registered.  Must be called before
 * the registration starts.  Single writer (the cache mutex holder). */
void hb_invalq_cover(struct hb_invalq *q, uintptr_t start, uintptr_t end);

/* Queues [start, end) for invalidation.  Wait-free, no allocation, safe
 * from any thread and from signal handlers, including re-entrantly while
 * this thread is in hb_invalq_drain. */
void hb_invalq_push(struct hb_invalq *q, uintptr_t start, uintptr_t end);

/* Hands every queued range to fn.  Single consumer (the mutex holder).
 * fn may cause further pushes; those are handled now or next time.
 * Returns the number of ranges consumed. */
size_t hb_invalq_drain(struct hb_invalq *q, hb_invalq_fn fn, void *arg);

#endif
