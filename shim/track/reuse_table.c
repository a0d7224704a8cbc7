/* Buffer-reuse table (see reuse_table.h). */
#include "reuse_table.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Entries per pool chunk: 4096 x 48 B = 192 KiB, one mmap per 4096 new
 * buffers, so the per-call path sees an allocation once in a long while. */
#define HB_CHUNK_ENTRIES 4096

struct hb_entry_chunk {
    struct hb_entry_chunk *next;
    struct hb_entry entries[HB_CHUNK_ENTRIES];
};

/* mmap rather than malloc: the bucket array is large (8 MiB at 20 bits) and
 * mostly untouched, and anonymous pages cost nothing until used.  It also
 * keeps hotbuf's own memory out of the application's heap. */
static void *map_zeroed(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    t->chunk_used = HB_CHUNK_ENTRIES; /* forces a chunk on the first insert */
    return 0;
}

void hb_table_destroy(struct hb_table *t)
{
    struct hb_entry_chunk *c = t->chunks;
    while (c) {
        struct hb_entry_chunk *next = c->next;
        munmap(c, sizeof(*c));
        c = next;
    }
    if (t->buckets)
        munmap(t->buckets, t->nbuckets * sizeof(*t->buckets));
    memset(t, 0, sizeof(*t));
}

/* The paper's rule: stop when hot buffers are a small minority AND
 * collisions have started to lengthen chains; either alone is normal. */
static int should_adapt(const struct hb_table *t)
{
    return t->p.adapt && t->max_chain >= t->p.adapt_chain &&
           (double)t->hot_entries * 100.0 < t->p.adapt_hot_pct * (double)t->entries;
}

static struct hb_entry *pool_take(struct hb_table *t)
{
    if (t->chunk_used == HB_CHUNK_ENTRIES) {
        struct hb_entry_chunk *c = map_zeroed(sizeof(*c));
        if (!c)
            return NULL;
        c->next = t->chunks;
        t->chunks = c;
        t->chunk_used = 0;
    }
    return &t->chunks->entries[t->chunk_used++];
}

static void stop_growing(struct hb_table *t, enum hb_stop_reason why)
{
    t->stopped = why;
    t->stopped_after_entries = t->entries;
}

struct hb_entry *hb_table_insert(struct hb_table *t, uintptr_t key, uint32_t chain_len)
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
    struct hb_entry *e = pool_take(t);
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

void hb_table_move_to_front(struct hb_entry **head, struct hb_entry *prev, struct hb_entry *e)
{
    prev->next = e->next;
    e->next = *head;
    *head = e;
}

void hb_table_foreach(const struct hb_table *t, void (*fn)(const struct hb_entry *, void *),
                      void *ctx)
{
    uint32_t n = t->chunk_used;
    for (const struct hb_entry_chunk *c = t->chunks; c; c = c->next) {
        for (uint32_t i = 0; i < n; i++)
            fn(&c->entries[i], ctx);
        n = HB_CHUNK_ENTRIES; /* only the newest chunk is partly used */
    }
}

size_t hb_table_memory(const struct hb_table *t)
{
    size_t chunks = 0;
    for (const struct hb_entry_chunk *c = t->chunks; c; c = c->next)
        chunks++;
    return t->nbuckets * sizeof(*t->buckets) + chunks * sizeof(struct hb_entry_chunk);
}
