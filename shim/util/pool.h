/* A pool of fixed-size objects, grown in large chunks.
 *
 * For objects made on a per-call path (reuse-table entries; later p2p
 * requests and unexpected-message descriptors): a get is a pointer bump or
 * a free-list pop, and malloc's lock, headers and fragmentation stay out
 * of the way.  Chunks are anonymous mappings: zeroed, outside the
 * application's heap, and not committed until touched.  Memory goes back
 * to the system only at hb_pool_destroy (objects put back are reused).
 *
 * Objects are 8-byte aligned (obj_size is rounded up to a multiple of 8).
 * Not thread-safe: the owner serializes, as for everything in hotbuf's
 * shim.
 */
#ifndef HOTBUF_UTIL_POOL_H
#define HOTBUF_UTIL_POOL_H

#include <stddef.h>
#include <stdint.h>

struct hb_pool_chunk;

struct hb_pool {
    size_t obj_size;              /* rounded up to 8 */
    uint32_t per_chunk;           /* objects per chunk */
    uint32_t chunk_used;          /* objects handed out of the newest chunk */
    uint64_t max_objs;            /* live objects at most; 0 = no cap */
    struct hb_pool_chunk *chunks; /* newest first */
    size_t nchunks;
    void *free_list; /* objects put back, last in first out */
    uint64_t live;   /* handed out and not put back */
    uint64_t puts;   /* hb_pool_put calls since init */
};

/* 0, or -1 for a zero object size or chunk length. */
int hb_pool_init(struct hb_pool *p, size_t obj_size, uint32_t per_chunk,
                 uint64_t max_objs);

/* Unmaps every chunk: every object of the pool is gone. */
void hb_pool_destroy(struct hb_pool *p);

/* A zeroed object, or NULL when max_objs are live or no memory is left. */
void *hb_pool_get(struct hb_pool *p);

/* Gives obj (from hb_pool_get of this pool, not put back yet) back. */
void hb_pool_put(struct hb_pool *p, void *obj);

/* Bytes the pool holds (its chunks). */
size_t hb_pool_memory(const struct hb_pool *p);

/* Calls fn on every object handed out, in no particular order.  Only for
 * pools that never put an object back (the pool cannot tell a free object
 * from a live one without a mark in every object): returns -1 without
 * calling fn if any object was put back, else 0. */
int hb_pool_foreach(const struct hb_pool *p, void (*fn)(void *obj, void *ctx),
                    void *ctx);

#endif
