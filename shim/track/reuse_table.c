/* Buffer-reuse table (see reuse_table.h). */
#include "reuse_table.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Entries per pool chunk: 4096 x 64 B = 256 KiB, one mmap per 4096 new
 * buffers, so the per-call path sees an allocation once in a long while. */
#define HB_CHUNK_ENTRIES 4096

/* mmap rather than malloc: the bucket array is large (8 MiB at 20 bits) and
 * mostly untouched, and anonymous pages cost nothing until used.  It also
 * keeps hotbuf's own memory out of the application's heap. */
static void *map_zeroed(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int hb_table_init(struct hb_table *t, const struct hb_table_params *p)
{
    memset(t, 0, sizeof(*t));
    t->p = *p;
    t->nbuckets = 1ull << p->bits;
    t->shift = 64 - p->bits;
    t->buckets = map_zeroed(t->nbuckets * sizeof(*t->buckets));
    if (!t->buckets)
        return -1;
    return hb_pool_init(&t->pool, sizeof(struct hb_entry), HB_CHUNK_ENTRIES, 0);
}

void hb_table_destroy(struct hb_table *t)
{
    hb_pool_destroy(&t->pool);
    if (t->buckets)
        munmap(t->buckets, t->nbuckets * sizeof(*t->buckets));
    memset(t, 0, sizeof(*t));
}

/* The paper's rule: stop when hot buffers are a small minority AND
 * collisions have started to lengthen chains; either alone is normal. */
static int should_adapt(const struct hb_table *t)
{
    return t->p.adapt && t->max_chain >= t->p.adapt_chain &&
           (double)t->hot_entries * 100.0 <
               t->p.adapt_hot_pct * (double)t->entries;
}

static void stop_growing(struct hb_table *t, enum hb_stop_reason why)
{
    t->stopped = why;
    t->stopped_after_entries = t->entries;
}

struct hb_entry *hb_table_insert(struct hb_table *t, uintptr_t key,
                                 uint32_t chain_len)
{
    if (t->stopped)
        return NULL;
    if (t->entries >= t->p.max_entries) {
        stop_growing(t, HB_STOP_FULL);
        return NULL;
    }
    if (should_adapt(t)) {
        stop_growing(t, HB_STOP_ADAPTED);
        return NULL;
    }
    struct hb_entry *e = hb_pool_get(&t->pool);
    if (!e) {
        stop_growing(t, HB_STOP_FULL);
        return NULL;
    }
    if (chain_len + 1 > t->max_chain)
        t->max_chain = chain_len + 1;
    uint64_t b = hb_table_bucket(t, key);
    e->key = key;
    e->next = t->buckets[b];
    t->buckets[b] = e;
    t->entries++;
    return e;
}

void hb_table_move_to_front(struct hb_entry **head, struct hb_entry *prev,
                            struct hb_entry *e)
{
    prev->next = e->next;
    e->next = *head;
    *head = e;
}

struct foreach_ctx {
    void (*fn)(const struct hb_entry *, void *);
    void *ctx;
};

static void foreach_one(void *obj, void *ctx)
{
    struct foreach_ctx *f = ctx;
    f->fn(obj, f->ctx);
}

void hb_table_foreach(const struct hb_table *t,
                      void (*fn)(const struct hb_entry *, void *), void *ctx)
{
    struct foreach_ctx f = {fn, ctx};
    hb_pool_foreach(&t->pool, foreach_one, &f); /* entries are never put back */
}

size_t hb_table_memory(const struct hb_table *t)
{
    return t->nbuckets * sizeof(*t->buckets) + hb_pool_memory(&t->pool);
}
