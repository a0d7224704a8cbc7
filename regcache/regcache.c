/* Registration cache (contract and locking model in regcache.h).
 *
 * Structure
 *   Every live registration is a struct hb_region in exactly one state:
 *     VALID, idle       in the interval tree and on the idle LRU list
 *     VALID, referenced in the interval tree only
 *     RETIRED           invalid, still referenced: on the retired list,
 *                       deregistered by the last put
 *     GARBAGE           invalid, unreferenced: on the garbage list,
 *                       deregistered before the current call returns
 *   Only VALID regions are in the tree, so lookups never see stale ones.
 *   The idle list is ordered by last release (head = most recent), so LRU
 *   eviction takes the tail in O(1) and can never pick an in-use region:
 *   referenced regions are simply not on it.
 *
 * Merging
 *   On a miss, the new registration covers the union of the request and
 *   every valid region overlapping it (overlapping, not merely adjacent:
 *   neighbouring buffers stay separate so a sliding window over a big
 *   array does not grow one ever larger registration).  The absorbed
 *   regions are retired: idle ones are deregistered right away (before
 *   registering, to give the cap and memlock room), referenced ones when
 *   their last put comes.  Merging keeps valid regions mostly disjoint, so
 *   one page is pinned once and a buffer whose message size grows does not
 *   accumulate registrations.  If the union would exceed max_bytes or its
 *   registration fails, the cache registers just the request; the tree
 *   handles the resulting overlap.
 *
 * Invalidation (mark now, reap later)
 *   hb_regcache_invalidate() only pushes the range on a lock-free queue
 *   (inval_queue.h).  Every get/put/reap drains that queue under the mutex
 *   before looking anything up, so a get that starts after an invalidate
 *   returned cannot find a region it hit.  A registration that was in
 *   progress while the range was pushed (possibly by this very thread,
 *   from inside ops->reg) is caught by a second drain after the new region
 *   is in the tree and before the get hands it out; the get then retries.
 *   Draining only marks regions; deregistration (which may itself trigger
 *   memory hooks) happens afterwards, from the garbage list.
 */
#define _POSIX_C_SOURCE 200809L

#include "regcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "interval_tree.h"
#include "inval_queue.h"
#include "util/list.h"

/* A get retries this many times when its fresh registration is
 * invalidated before it can be returned, then gives up with -EAGAIN. */
#define GET_ATTEMPTS 4

struct hb_region {
    struct hb_itree_node node; /* page-aligned range; in tree iff valid */
    struct hb_list link;       /* idle, retired or garbage list, or none */
    struct hb_region *scratch; /* chain used while collecting overlaps */
    void *handle;              /* from ops->reg */
    uint64_t serial;           /* registrations made before this one */
    unsigned long refcount;
    int valid;
};

struct counters {
    uint64_t hits, misses, failures, evictions, invalidations, merges;
    uint64_t reg_calls, reg_failures, dereg_calls;
};

struct hb_regcache {
    pthread_mutex_t lock; /* guards everything below except invalq */
    struct hb_regcache_ops ops;
    void *ctx;
    size_t max_entries; /* 0 = unlimited */
    size_t max_bytes;   /* 0 = unlimited */
    uintptr_t page_size;
    struct hb_itree tree;   /* VALID regions */
    struct hb_list idle;    /* VALID and unreferenced, head = newest */
    struct hb_list retired; /* invalid, still referenced */
    struct hb_list garbage; /* invalid, unreferenced, to deregister */
    size_t entries;         /* live registrations, any state */
    size_t pinned;          /* their bytes */
    size_t peak_pinned;
    size_t referenced; /* regions with refcount > 0 */
    uint64_t serials;  /* regions made so far (hb_region_serial) */
    struct counters c;
    struct hb_invalq invalq; /* lock-free: written by invalidate */
};

static struct hb_region *region_of(struct hb_itree_node *node)
{
    return hb_container_of(node, struct hb_region, node);
}

static struct hb_region *region_of_link(struct hb_list *link)
{
    return hb_container_of(link, struct hb_region, link);
}

static size_t region_bytes(const struct hb_region *r)
{
    return r->node.end - r->node.start;
}

/* ---- region lifecycle ------------------------------------------------ */

/* Deregisters and frees a region that is on no list and not in the tree. */
static size_t region_release(struct hb_regcache *rc, struct hb_region *r)
{
    size_t bytes = region_bytes(r);

    rc->ops.dereg(rc->ctx, r->handle);
    rc->c.dereg_calls++;
    rc->entries--;
    rc->pinned -= bytes;
    free(r);
    return bytes;
}

/* Takes a valid region out of service.  Never calls a callback, so it is
 * safe while draining; the region is freed later by flush_garbage or by
 * the last put. */
static void region_mark_invalid(struct hb_regcache *rc, struct hb_region *r)
{
    hb_itree_remove(&rc->tree, &r->node);
    r->valid = 0;
    hb_list_del(&r->link); /* off the idle list, if it was idle */
    if (r->refcount == 0)
        hb_list_add_head(&rc->garbage, &r->link);
    else
        hb_list_add_head(&rc->retired, &r->link);
}

static void region_take_ref(struct hb_regcache *rc, struct hb_region *r)
{
    if (r->refcount++ == 0) {
        hb_list_del(&r->link);
        rc->referenced++;
    }
}

/* Makes a freshly registered region visible: valid, idle, in the tree. */
static void region_insert(struct hb_regcache *rc, struct hb_region *r,
                          uintptr_t start, uintptr_t end)
{
    r->node.start = start;
    r->node.end = end;
    r->valid = 1;
    r->serial = rc->serials++;
    r->refcount = 0;
    hb_list_init(&r->link);
    hb_itree_insert(&rc->tree, &r->node);
    hb_list_add_head(&rc->idle, &r->link);
    rc->entries++;
    rc->pinned += end - start;
    if (rc->pinned > rc->peak_pinned)
        rc->peak_pinned = rc->pinned;
}

/* Returns the bytes unpinned. */
static size_t flush_garbage(struct hb_regcache *rc)
{
    struct hb_list *link;
    size_t freed = 0;

    while ((link = hb_list_tail(&rc->garbage))) {
        hb_list_del(link);
        freed += region_release(rc, region_of_link(link));
    }
    return freed;
}

/* ---- invalidation ---------------------------------------------------- */

/* hb_invalq_fn: marks every valid region overlapping [start, end). */
static void apply_invalidation(void *arg, uintptr_t start, uintptr_t end)
{
    struct hb_regcache *rc = arg;
    struct hb_itree_node *node;

    while ((node = hb_itree_find_overlap(&rc->tree, start, end))) {
        region_mark_invalid(rc, region_of(node));
        rc->c.invalidations++;
    }
}

/* Applies queued invalidations without calling any callback. */
static void drain_invalidations(struct hb_regcache *rc)
{
    hb_invalq_drain(&rc->invalq, apply_invalidation, rc);
}

/* ---- eviction -------------------------------------------------------- */

/* Deregisters the least recently used idle region; returns its bytes,
 * or 0 when every region is in use. */
static size_t evict_one(struct hb_regcache *rc)
{
    struct hb_list *link = hb_list_tail(&rc->idle);
    struct hb_region *r;

    if (!link)
        return 0;
    r = region_of_link(link);
    hb_itree_remove(&rc->tree, &r->node);
    hb_list_del(link);
    rc->c.evictions++;
    return region_release(rc, r);
}

static int over_caps(const struct hb_regcache *rc, size_t len)
{
    if (rc->max_entries && rc->entries + 1 > rc->max_entries)
        return 1;
    return rc->max_bytes && rc->pinned + len > rc->max_bytes;
}

/* Evicts LRU-first until one more region of len bytes fits the caps. */
static int make_room(struct hb_regcache *rc, size_t len)
{
    flush_garbage(rc);
    while (over_caps(rc, len))
        if (evict_one(rc) == 0)
            return -ENOSPC;
    return 0;
}

/* After ops->reg ran out of pinnable memory: unpin at least `want` bytes
 * if possible.  Returns the bytes unpinned (0: nothing left to evict). */
static size_t evict_bytes(struct hb_regcache *rc, size_t want)
{
    size_t freed = flush_garbage(rc);
    size_t bytes;

    while (freed < want && (bytes = evict_one(rc)) != 0)
        freed += bytes;
    return freed;
}

/* ---- registration ---------------------------------------------------- */

static int is_out_of_memory(int err)
{
    return err == -ENOMEM || err == -EAGAIN || err == -ENOSPC;
}

/* Registers [start, end), evicting idle regions for the caps and, when
 * the NIC/kernel runs out of pinnable memory, until reg succeeds or
 * nothing idle is left.  Terminates: every retry evicts something. */
static int register_range(struct hb_regcache *rc, uintptr_t start,
                          uintptr_t end, void **handle)
{
    size_t len = end - start;
    int err;

    if (rc->max_bytes && len > rc->max_bytes)
        return -E2BIG;
    for (;;) {
        err = make_room(rc, len);
        if (err)
            return err;
        hb_invalq_cover(&rc->invalq, start, end); /* before reg: see .h */
        rc->c.reg_calls++;
        err = rc->ops.reg(rc->ctx, (void *)start, len, handle);
        if (err == 0)
            return 0;
        rc->c.reg_failures++;
        if (err > 0)
            err = -err; /* tolerate positive errno from the callback */
        if (!is_out_of_memory(err) || evict_bytes(rc, len) == 0)
            return err;
    }
}

/* ---- merging --------------------------------------------------------- */

struct overlap_set {
    uintptr_t start, end;    /* union of the request and the overlaps */
    struct hb_region *chain; /* collected regions, via r->scratch */
    int idle_only;           /* collect only unreferenced regions */
};

static int collect_overlap(struct hb_itree_node *node, void *arg)
{
    struct overlap_set *set = arg;
    struct hb_region *r = region_of(node);

    if (set->idle_only && r->refcount != 0)
        return 0;
    if (node->start < set->start)
        set->start = node->start;
    if (node->end > set->end)
        set->end = node->end;
    r->scratch = set->chain;
    set->chain = r;
    return 0;
}

static void collect_overlaps(struct hb_regcache *rc, struct overlap_set *set,
                             uintptr_t start, uintptr_t end, int idle_only)
{
    set->start = start;
    set->end = end;
    set->chain = NULL;
    set->idle_only = idle_only;
    hb_itree_visit_overlaps(&rc->tree, start, end, collect_overlap, set);
}

/* Retires regions overlapping [start, end) because a region covering
 * them replaces them.  Collected first: the tree must not change while
 * it is being walked. */
static void retire_overlaps(struct hb_regcache *rc, uintptr_t start,
                            uintptr_t end, int idle_only)
{
    struct overlap_set set;
    struct hb_region *r;

    collect_overlaps(rc, &set, start, end, idle_only);
    while ((r = set.chain)) {
        set.chain = r->scratch;
        region_mark_invalid(rc, r);
        rc->c.merges++;
    }
}

/* Registers the union [start, end) in place of the regions overlapping
 * it.  Idle ones go first so their pins make room; referenced ones only
 * once the union is registered, as they may still be needed. */
static int register_merged(struct hb_regcache *rc, uintptr_t start,
                           uintptr_t end, void **handle)
{
    int err;

    retire_overlaps(rc, start, end, 1);
    err = register_range(rc, start, end, handle);
    if (err == 0)
        retire_overlaps(rc, start, end, 0);
    return err;
}

/* Registers a new region for the page-aligned request [start, end) and
 * inserts it, idle, into the cache. */
static int create_region(struct hb_regcache *rc, uintptr_t start, uintptr_t end,
                         struct hb_region **out)
{
    struct hb_region *r = calloc(1, sizeof(*r));
    struct overlap_set set;
    int err;

    if (!r)
        return -ENOMEM;
    collect_overlaps(rc, &set, start, end, 0);
    if (!set.chain || (rc->max_bytes && set.end - set.start > rc->max_bytes)) {
        err = register_range(rc, start, end, &r->handle);
    } else {
        err = register_merged(rc, set.start, set.end, &r->handle);
        if (err == 0) {
            start = set.start;
            end = set.end;
        } else if (set.start != start || set.end != end) {
            /* The wider range may not fit, or may include pages the NIC
             * refuses; the request alone may still register. */
            err = register_range(rc, start, end, &r->handle);
        }
    }
    if (err) {
        free(r);
        return err;
    }
    region_insert(rc, r, start, end);
    *out = r;
    return 0;
}

/* ---- public API ------------------------------------------------------ */

static uintptr_t query_page_size(void)
{
    long ps = sysconf(_SC_PAGESIZE);

    if (ps <= 0 || (ps & (ps - 1)) != 0)
        return 4096;
    return (uintptr_t)ps;
}

int hb_regcache_create(const struct hb_regcache_ops *ops, void *ops_ctx,
                       size_t max_entries, size_t max_bytes,
                       struct hb_regcache **out)
{
    struct hb_regcache *rc;

    if (!ops || !ops->reg || !ops->dereg || !out)
        return -EINVAL;
    rc = calloc(1, sizeof(*rc));
    if (!rc)
        return -ENOMEM;
    if (pthread_mutex_init(&rc->lock, NULL) != 0) {
        free(rc);
        return -ENOMEM;
    }
    rc->ops = *ops;
    rc->ctx = ops_ctx;
    rc->max_entries = max_entries;
    rc->max_bytes = max_bytes;
    rc->page_size = query_page_size();
    hb_itree_init(&rc->tree);
    hb_list_init(&rc->idle);
    hb_list_init(&rc->retired);
    hb_list_init(&rc->garbage);
    hb_invalq_init(&rc->invalq);
    *out = rc;
    return 0;
}

static void release_list(struct hb_regcache *rc, struct hb_list *head)
{
    struct hb_list *link;

    while ((link = hb_list_tail(head))) {
        hb_list_del(link);
        region_release(rc, region_of_link(link));
    }
}

void hb_regcache_destroy(struct hb_regcache *rc)
{
    struct hb_itree_node *node;

    if (!rc)
        return;
    while ((node = hb_itree_any(&rc->tree))) {
        struct hb_region *r = region_of(node);

        hb_itree_remove(&rc->tree, node);
        hb_list_del(&r->link);
        region_release(rc, r);
    }
    release_list(rc, &rc->retired);
    release_list(rc, &rc->garbage);
    pthread_mutex_destroy(&rc->lock);
    free(rc);
}

/* Rounds [addr, addr+len) out to whole pages; -EINVAL if empty or if it
 * wraps around the address space. */
static int page_range(const struct hb_regcache *rc, const void *addr,
                      size_t len, uintptr_t *start, uintptr_t *end)
{
    uintptr_t a = (uintptr_t)addr;
    uintptr_t mask = rc->page_size - 1;
    uintptr_t last = a + len;

    if (len == 0 || last < a)
        return -EINVAL;
    *start = a & ~mask;
    *end = (last + mask) & ~mask;
    return *end < last ? -EINVAL : 0;
}

/* The body of get, under the mutex.  The region handed out is checked
 * valid after the last drain and no callback runs in between. */
static int get_locked(struct hb_regcache *rc, uintptr_t start, uintptr_t end,
                      struct hb_region **out)
{
    struct hb_itree_node *node;
    struct hb_region *r;
    int attempt, err, missed = 0;

    for (attempt = 0; attempt < GET_ATTEMPTS; attempt++) {
        drain_invalidations(rc);
        node = hb_itree_find_covering(&rc->tree, start, end);
        if (node) {
            r = region_of(node);
            break;
        }
        missed = 1;
        err = create_region(rc, start, end, &r);
        if (err)
            return err;
        drain_invalidations(rc); /* catches pushes made during reg */
        if (r->valid)
            break;
    }
    if (attempt == GET_ATTEMPTS)
        return -EAGAIN;
    region_take_ref(rc, r);
    if (missed)
        rc->c.misses++;
    else
        rc->c.hits++;
    *out = r;
    return 0;
}

int hb_regcache_get(struct hb_regcache *rc, const void *addr, size_t len,
                    struct hb_region **out)
{
    uintptr_t start = 0, end = 0;
    int err = page_range(rc, addr, len, &start, &end);

    pthread_mutex_lock(&rc->lock);
    if (err == 0)
        err = get_locked(rc, start, end, out);
    if (err)
        rc->c.failures++;
    flush_garbage(rc);
    pthread_mutex_unlock(&rc->lock);
    return err;
}

void hb_regcache_put(struct hb_regcache *rc, struct hb_region *r)
{
    pthread_mutex_lock(&rc->lock);
    drain_invalidations(rc);
    if (--r->refcount == 0) {
        rc->referenced--;
        if (r->valid) {
            hb_list_add_head(&rc->idle, &r->link);
        } else {
            hb_list_del(&r->link); /* off the retired list */
            region_release(rc, r);
        }
    }
    flush_garbage(rc);
    pthread_mutex_unlock(&rc->lock);
}

void hb_regcache_invalidate(struct hb_regcache *rc, const void *addr,
                            size_t len)
{
    uintptr_t start = (uintptr_t)addr;
    uintptr_t end = start + len;

    if (end < start)
        end = UINTPTR_MAX; /* clamp a wrapping range, stay conservative */
    hb_invalq_push(&rc->invalq, start, end);
}

void hb_regcache_reap(struct hb_regcache *rc)
{
    pthread_mutex_lock(&rc->lock);
    drain_invalidations(rc);
    flush_garbage(rc);
    pthread_mutex_unlock(&rc->lock);
}

void hb_regcache_stats(struct hb_regcache *rc, struct hb_regcache_stats *out)
{
    pthread_mutex_lock(&rc->lock);
    out->hits = rc->c.hits;
    out->misses = rc->c.misses;
    out->failures = rc->c.failures;
    out->evictions = rc->c.evictions;
    out->invalidations = rc->c.invalidations;
    out->merges = rc->c.merges;
    out->reg_calls = rc->c.reg_calls;
    out->reg_failures = rc->c.reg_failures;
    out->dereg_calls = rc->c.dereg_calls;
    out->entries = rc->entries;
    out->in_use = rc->referenced;
    out->pinned_bytes = rc->pinned;
    out->peak_pinned_bytes = rc->peak_pinned;
    pthread_mutex_unlock(&rc->lock);
    out->invalidate_calls = atomic_load(&rc->invalq.stat_pushes);
    out->invalidate_filtered = atomic_load(&rc->invalq.stat_filtered);
    out->invalidate_overflows = atomic_load(&rc->invalq.stat_overflows);
}

void *hb_region_addr(const struct hb_region *region)
{
    return (void *)region->node.start;
}

size_t hb_region_len(const struct hb_region *region)
{
    return region_bytes(region);
}

void *hb_region_handle(const struct hb_region *region)
{
    return region->handle;
}

uint64_t hb_region_serial(const struct hb_region *region)
{
    return region->serial;
}
