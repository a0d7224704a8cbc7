/* First-fit allocator over owner-supplied chunks (see arena.h). */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

int hb_arena_init(struct hb_arena *a, size_t align)
{
    memset(a, 0, sizeof(*a));
    if (align == 0 || (align & (align - 1)))
        return -1;
    a->align = align;
    return 0;
}

void hb_arena_destroy(struct hb_arena *a,
                      void (*chunk_gone)(void *base, size_t len, void *user))
{
    for (size_t i = 0; i < a->nchunks; i++) {
        struct hb_arena_chunk *c = &a->chunks[i];
        if (chunk_gone)
            chunk_gone((void *)c->base, c->len, c->user);
        free(c->blocks);
    }
    free(a->chunks);
    size_t align = a->align;
    memset(a, 0, sizeof(*a));
    a->align = align;
}

/* Room for one more element in a growing array. */
static int reserve(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t want = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, want * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = want;
    return 0;
}

/* Index of the first chunk with base > x. */
static size_t chunk_after(const struct hb_arena *a, uintptr_t x)
{
    size_t lo = 0, hi = a->nchunks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->chunks[mid].base > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

const struct hb_arena_chunk *hb_arena_chunk_of(const struct hb_arena *a,
                                               const void *p)
{
    uintptr_t x = (uintptr_t)p;
    size_t i = chunk_after(a, x);
    if (i == 0)
        return NULL;
    const struct hb_arena_chunk *c = &a->chunks[i - 1];
    return x - c->base < c->len ? c : NULL;
}

int hb_arena_add(struct hb_arena *a, void *base, size_t len, void *user)
{
    uintptr_t b = (uintptr_t)base;
    if (!len || (b | len) & (a->align - 1) || b + len < b)
        return -1;
    size_t i = chunk_after(a, b);
    if ((i > 0 && a->chunks[i - 1].base + a->chunks[i - 1].len > b) ||
        (i < a->nchunks && a->chunks[i].base < b + len))
        return -1; /* overlaps a chunk */
    struct hb_arena_block *blk = malloc(8 * sizeof(*blk));
    if (!blk ||
        reserve((void **)&a->chunks, &a->cap, a->nchunks, sizeof(*a->chunks))) {
        free(blk);
        return -1;
    }
    blk[0] = (struct hb_arena_block){b, len, 0};
    memmove(&a->chunks[i + 1], &a->chunks[i],
            (a->nchunks - i) * sizeof(*a->chunks));
    a->chunks[i] = (struct hb_arena_chunk){b, len, user, blk, 1, 8};
    a->nchunks++;
    a->chunk_bytes += len;
    return 0;
}

/* Block k of c becomes used with len bytes; the rest, if any, a free
 * block after it.  0, or -1 (no memory for the split). */
static int take(struct hb_arena_chunk *c, size_t k, size_t len)
{
    struct hb_arena_block *b = &c->blocks[k];
    if (b->len > len) {
        if (reserve((void **)&c->blocks, &c->cap, c->nblocks,
                    sizeof(*c->blocks)))
            return -1;
        b = &c->blocks[k];
        memmove(b + 2, b + 1, (c->nblocks - k - 1) * sizeof(*b));
        b[1] = (struct hb_arena_block){b->start + len, b->len - len, 0};
        b->len = len;
        c->nblocks++;
    }
    b->used = 1;
    return 0;
}

void *hb_arena_alloc(struct hb_arena *a, size_t size)
{
    if (size == 0 || size > SIZE_MAX - a->align)
        return NULL;
    size_t len = (size + a->align - 1) & ~(a->align - 1);
    for (size_t i = 0; i < a->nchunks; i++) {
        struct hb_arena_chunk *c = &a->chunks[i];
        for (size_t k = 0; k < c->nblocks; k++) {
            if (c->blocks[k].used || c->blocks[k].len < len)
                continue;
            if (take(c, k, len))
                return NULL;
            a->in_use += len;
            if (a->in_use > a->peak)
                a->peak = a->in_use;
            a->allocs++;
            return (void *)c->blocks[k].start;
        }
    }
    return NULL;
}

int hb_arena_take_empty(struct hb_arena *a, const void *p,
                        struct hb_arena_chunk *out)
{
    const struct hb_arena_chunk *c = hb_arena_chunk_of(a, p);
    if (!c || c->nblocks != 1 || c->blocks[0].used)
        return 0;
    size_t i = (size_t)(c - a->chunks);
    *out = *c;
    free(out->blocks);
    out->blocks = NULL;
    out->nblocks = out->cap = 0;
    memmove(&a->chunks[i], &a->chunks[i + 1],
            (a->nchunks - i - 1) * sizeof(*a->chunks));
    a->nchunks--;
    a->chunk_bytes -= out->len;
    return 1;
}

/* Merges block k with block k + 1 (both free). */
static void merge_next(struct hb_arena_chunk *c, size_t k)
{
    c->blocks[k].len += c->blocks[k + 1].len;
    memmove(&c->blocks[k + 1], &c->blocks[k + 2],
            (c->nblocks - k - 2) * sizeof(*c->blocks));
    c->nblocks--;
}

int hb_arena_free(struct hb_arena *a, void *p)
{
    struct hb_arena_chunk *c = (struct hb_arena_chunk *)hb_arena_chunk_of(a, p);
    if (!c)
        return -1;
    uintptr_t x = (uintptr_t)p;
    size_t lo = 0, hi = c->nblocks; /* the block starting at x */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->blocks[mid].start < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == c->nblocks || c->blocks[lo].start != x || !c->blocks[lo].used)
        return 0;
    c->blocks[lo].used = 0;
    a->in_use -= c->blocks[lo].len;
    a->frees++;
    if (lo + 1 < c->nblocks && !c->blocks[lo + 1].used)
        merge_next(c, lo);
    if (lo > 0 && !c->blocks[lo - 1].used)
        merge_next(c, lo - 1);
    return 1;
}
