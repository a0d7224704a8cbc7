/* Pending-invalidation queue (see inval_queue.h for the contract).
 *
 * Why slots and a counter, not a ring buffer: in a multi-producer ring a
 * producer that claimed slot k and was preempted hides every later,
 * already-returned push from a consumer that stops at k -- that would let
 * a get miss a finished invalidation.  Here the consumer scans all slots,
 * so a finished push is never hidden behind an unfinished one.
 *
 * Why `pending` is incremented before the slot is claimed: the consumer
 * subtracts only what it consumed, and it can only consume pushes that
 * already incremented.  So pending >= (started but unconsumed pushes), and
 * pending == 0 proves every returned push has been consumed.  (Counting
 * after publishing would let a consumed-but-not-yet-counted push cancel
 * out a returned, unconsumed one.)
 */
#include "inval_queue.h"

enum { SLOT_FREE = 0, SLOT_WRITING = 1, SLOT_READY = 2 };

void hb_invalq_init(struct hb_invalq *q)
{
    size_t i;

    atomic_init(&q->hull_lo, UINTPTR_MAX);
    atomic_init(&q->hull_hi, 0);
    atomic_init(&q->pending, 0);
    atomic_init(&q->overflows, 0);
    atomic_init(&q->hint, 0);
    atomic_init(&q->stat_pushes, 0);
    atomic_init(&q->stat_filtered, 0);
    atomic_init(&q->stat_overflows, 0);
    for (i = 0; i < HB_INVALQ_SLOTS; i++) {
        atomic_init(&q->slots[i].state, SLOT_FREE);
        q->slots[i].start = 0;
        q->slots[i].end = 0;
    }
}

void hb_invalq_cover(struct hb_invalq *q, uintptr_t start, uintptr_t end)
{
    /* Single writer, so plain load-compare-store cannot lose an update;
     * seq_cst orders the widening before the registration that follows. */
    if (start < atomic_load(&q->hull_lo))
        atomic_store(&q->hull_lo, start);
    if (end > atomic_load(&q->hull_hi))
        atomic_store(&q->hull_hi, end);
}

static int outside_hull(struct hb_invalq *q, uintptr_t start, uintptr_t end)
{
    uintptr_t lo = atomic_load(&q->hull_lo);
    uintptr_t hi = atomic_load(&q->hull_hi);

    return end <= lo || start >= hi;
}

/* Claims a free slot and publishes the range; 0 on success. */
static int publish(struct hb_invalq *q, uintptr_t start, uintptr_t end)
{
    unsigned first =
        atomic_fetch_add_explicit(&q->hint, 1, memory_order_relaxed);
    unsigned i;

    for (i = 0; i < HB_INVALQ_SLOTS; i++) {
        struct hb_invalq_slot *s = &q->slots[(first + i) % HB_INVALQ_SLOTS];
        unsigned expected = SLOT_FREE;

        if (atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_FREE)
            continue;
        if (!atomic_compare_exchange_strong_explicit(
                &s->state, &expected, SLOT_WRITING, memory_order_acquire,
                memory_order_relaxed))
            continue;
        s->start = start;
        s->end = end;
        atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
        return 0;
    }
    return -1;
}

void hb_invalq_push(struct hb_invalq *q, uintptr_t start, uintptr_t end)
{
    atomic_fetch_add_explicit(&q->stat_pushes, 1, memory_order_relaxed);
    if (start >= end)
        return;
    if (outside_hull(q, start, end)) {
        atomic_fetch_add_explicit(&q->stat_filtered, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add(&q->pending, 1); /* before publishing: see top */
    if (publish(q, start, end) == 0)
        return;
    atomic_fetch_add_explicit(&q->stat_overflows, 1, memory_order_relaxed);
    atomic_fetch_add(&q->overflows, 1);
}

/* Consumes READY slots; returns how many. */
static size_t drain_slots(struct hb_invalq *q, hb_invalq_fn fn, void *arg)
{
    size_t i, n = 0;

    for (i = 0; i < HB_INVALQ_SLOTS; i++) {
        struct hb_invalq_slot *s = &q->slots[i];
        uintptr_t start, end;

        if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_READY)
            continue;
        start = s->start;
        end = s->end;
        /* Free the slot before calling fn, so pushes fn causes find room. */
        atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
        n++;
        fn(arg, start, end);
    }
    return n;
}

size_t hb_invalq_drain(struct hb_invalq *q, hb_invalq_fn fn, void *arg)
{
    size_t overflowed, n;

    if (atomic_load(&q->pending) == 0)
        return 0;
    overflowed = atomic_exchange(&q->overflows, 0);
    if (overflowed)
        fn(arg, 0, UINTPTR_MAX);
    n = overflowed + drain_slots(q, fn, arg);
    atomic_fetch_sub(&q->pending, n);
    return n;
}
