/* The buffer-reuse table of Rashti & Afsahi (2011), section 3.3.
 *
 * Key: (buffer address, operation class).  The class is part of the key
 * because thresholds and routing differ between two-sided, one-sided and
 * collective use of the same memory.  Hash: multiplicative (golden-ratio,
 * Linux hash_long), 2^bits buckets, separate chaining.  Entries come from a
 * pool grown in large chunks, so the per-call path never calls malloc.
 *
 * Adaptation (paper, section 3.4): once fewer than adapt_hot_pct % of the
 * tracked buffers are hot and a chain has grown to adapt_chain entries,
 * lookups of known buffers go on but no new buffer is inserted.  The table
 * also stops growing at max_entries, which bounds its memory.
 *
 * Not thread-safe: the caller serializes (see shim/runtime.c).
 */
#ifndef HOTBUF_REUSE_TABLE_H
#define HOTBUF_REUSE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"
#include "util/pool.h"

/* A buffer's calls come in runs of calls at one size (a loop sending the
 * same message): the entry keeps the current run open (size, where it
 * started, the threshold at that size) and the tracker closes it into the
 * class's size counts only when the size changes (see tracker.h). */
struct hb_entry {
    struct hb_entry *next; /* chain */
    uintptr_t key;         /* address | class << 56 */
    /* The pending run (see tracker.h): the calls after p_start (uses - p_start
     * of them), all from return address p_ret (call site p_site) at `size`
     * bytes, not yet added to the class and site counters.  Keeping them here
     * lets the wrapper's common call touch this entry alone. */
    uintptr_t p_ret;    /* HB_NO_RET: no pending run armed */
    uint32_t uses;      /* calls on this buffer */
    uint32_t run_start; /* uses before the current run at `size` began */
    uint32_t size;      /* extent of the current run's calls (saturates) */
    uint32_t thr; /* uses at which a call at `size` is hot (HB_NEVER: never) */
    uint32_t hot_uses; /* hot calls in closed runs (hb_tracker_hot_uses: all) */
    uint32_t reg_size; /* largest size a call was hot at (registered extent) */
    uint32_t max_size; /* largest extent used */
    uint32_t p_start;  /* uses before the pending run began */
    uint16_t p_site;   /* call site of p_ret */
    uint16_t site;     /* call site that first used it */
    uint8_t op;        /* operation class */
    uint8_t hot;       /* some call was hot: it would be registered */
};

/* 64 B: one cache line for every per-call access. */
_Static_assert(sizeof(struct hb_entry) == 64, "hb_entry is one cache line");

enum hb_stop_reason { HB_GROWING = 0, HB_STOP_ADAPTED, HB_STOP_FULL };

struct hb_table_params {
    int bits;             /* 2^bits buckets */
    uint64_t max_entries; /* pool cap */
    int adapt;            /* 0: never stop growing for low hotness */
    double adapt_hot_pct;
    uint32_t adapt_chain;
};

struct hb_table {
    struct hb_entry **buckets;
    unsigned shift; /* 64 - bits */
    uint64_t nbuckets;
    struct hb_table_params p;
    struct hb_pool pool; /* the entries; never put back */
    uint64_t entries;
    uint64_t hot_entries;
    uint32_t max_chain;
    enum hb_stop_reason stopped;
    uint64_t stopped_after_entries;
};

static inline uintptr_t hb_table_key(const void *addr, unsigned op)
{
    return (uintptr_t)addr ^ ((uintptr_t)op << 56);
}

static inline uint64_t hb_table_bucket(const struct hb_table *t, uintptr_t key)
{
    return hb_hash_golden(key, 64 - t->shift);
}

int hb_table_init(struct hb_table *t, const struct hb_table_params *p);
void hb_table_destroy(struct hb_table *t);

/* Moves e, found behind prev in its chain, to the chain's head. */
void hb_table_move_to_front(struct hb_entry **head, struct hb_entry *prev,
                            struct hb_entry *e);

/* Returns the entry for key, or NULL (then *chain_len is the length of the
 * chain searched).  An entry found behind others moves to the front of its
 * chain, so the buffers a job keeps reusing stay one compare away however
 * many cold ones share their buckets. */
static inline struct hb_entry *hb_table_find(struct hb_table *t, uintptr_t key,
                                             uint32_t *chain_len)
{
    struct hb_entry **head = &t->buckets[hb_table_bucket(t, key)];
    struct hb_entry *e = *head;
    if (e && e->key == key)
        return e;
    uint32_t n = e != NULL;
    for (struct hb_entry *prev = e; e && (e = e->next); prev = e, n++)
        if (e->key == key) {
            hb_table_move_to_front(head, prev, e);
            return e;
        }
    *chain_len = n;
    return NULL;
}

/* Inserts a zeroed entry for key (known absent, chain_len from the failed
 * find).  Returns NULL when the table has stopped growing. */
struct hb_entry *hb_table_insert(struct hb_table *t, uintptr_t key,
                                 uint32_t chain_len);

/* Marks e hot (counted for the adaptation rule). */
static inline void hb_table_mark_hot(struct hb_table *t, struct hb_entry *e)
{
    e->hot = 1;
    t->hot_entries++;
}

/* Calls fn on every entry, in no particular order. */
void hb_table_foreach(const struct hb_table *t,
                      void (*fn)(const struct hb_entry *, void *), void *ctx);

/* Bytes of memory the table holds (buckets + pool). */
size_t hb_table_memory(const struct hb_table *t);

#endif
