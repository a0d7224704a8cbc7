/* A first-fit allocator over chunks its owner supplies.
 *
 * For MPI_Alloc_mem (shim/mem/): the owner maps a chunk, registers it
 * with the NIC once, adds it here, and every block carved out of it is
 * already registered.  The bookkeeping lives outside the chunks, in a
 * sorted array of blocks per chunk: the memory is the application's, and
 * nothing of ours sits in front of a block where an overrun would hit it.
 *
 * Blocks are aligned to the arena's alignment and padded to a multiple of
 * it; a freed block merges with free neighbours.  Chunks stay until
 * hb_arena_destroy (their registration is the point of keeping them) or
 * until the owner takes an empty one out (hb_arena_take_empty).
 * Not thread-safe: the owner serializes.
 */
#ifndef HOTBUF_UTIL_ARENA_H
#define HOTBUF_UTIL_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct hb_arena_block {
    uintptr_t start;
    size_t len;
    int used;
};

struct hb_arena_chunk {
    uintptr_t base;
    size_t len;
    void *user;                    /* the owner's (its registration) */
    struct hb_arena_block *blocks; /* sorted, tiling [base, base + len) */
    size_t nblocks, cap;
};

struct hb_arena {
    size_t align;                  /* a power of two */
    struct hb_arena_chunk *chunks; /* sorted by base */
    size_t nchunks, cap;
    uint64_t in_use, peak, chunk_bytes; /* bytes */
    uint64_t allocs, frees;
};

/* 0, or -1 when align is not a power of two. */
int hb_arena_init(struct hb_arena *a, size_t align);

/* Calls chunk_gone (may be NULL) for every chunk, then frees the
 * bookkeeping; the blocks are gone (the chunks are the owner's). */
void hb_arena_destroy(struct hb_arena *a,
                      void (*chunk_gone)(void *base, size_t len, void *user));

/* Adds [base, base + len) to carve from (base aligned, len a multiple of
 * the alignment, not overlapping another chunk).  0, or -1. */
int hb_arena_add(struct hb_arena *a, void *base, size_t len, void *user);

/* A block of at least size bytes (size > 0), or NULL: no chunk has room
 * (add one and ask again) or no memory for the bookkeeping. */
void *hb_arena_alloc(struct hb_arena *a, size_t size);

/* 1: p started a live block, now free.  0: p is in a chunk but starts no
 * live block (a double free, an address inside a block).  -1: p is not
 * in the arena. */
int hb_arena_free(struct hb_arena *a, void *p);

/* Takes the chunk holding p out of the arena when none of its blocks is
 * live: 1, *out its base, length and user datum (to unmap, deregister);
 * else 0 and nothing changes. */
int hb_arena_take_empty(struct hb_arena *a, const void *p,
                        struct hb_arena_chunk *out);

/* The chunk holding p, or NULL. */
const struct hb_arena_chunk *hb_arena_chunk_of(const struct hb_arena *a,
                                               const void *p);

#endif
