/* See pool.h. */
#include "pool.h"

#include <string.h>
#include <sys/mman.h>

struct hb_pool_chunk {
    struct hb_pool_chunk *next;
    uint64_t pad; /* objects start 16-byte aligned */
    unsigned char objs[];
};

static size_t chunk_bytes(const struct hb_pool *p)
{
    return sizeof(struct hb_pool_chunk) + (size_t)p->per_chunk * p->obj_size;
}

int hb_pool_init(struct hb_pool *p, size_t obj_size, uint32_t per_chunk,
                 uint64_t max_objs)
{
    memset(p, 0, sizeof(*p));
    if (!obj_size || !per_chunk)
        return -1;
    p->obj_size = (obj_size + 7) & ~(size_t)7;
    if (p->obj_size <
        sizeof(void *)) /* a free object holds the free-list link */
        p->obj_size = sizeof(void *);
    p->per_chunk = per_chunk;
    p->max_objs = max_objs;
    p->chunk_used = per_chunk; /* the first get maps a chunk */
    return 0;
}

void hb_pool_destroy(struct hb_pool *p)
{
    struct hb_pool_chunk *c = p->chunks;

    while (c) {
        struct hb_pool_chunk *next = c->next;

        munmap(c, chunk_bytes(p));
        c = next;
    }
    memset(p, 0, sizeof(*p));
}

static int grow(struct hb_pool *p)
{
    struct hb_pool_chunk *c = mmap(NULL, chunk_bytes(p), PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (c == MAP_FAILED)
        return -1;
    c->next = p->chunks;
    p->chunks = c;
    p->nchunks++;
    p->chunk_used = 0;
    return 0;
}

void *hb_pool_get(struct hb_pool *p)
{
    void *obj;

    if (p->max_objs && p->live >= p->max_objs)
        return NULL;
    if (p->free_list) {
        obj = p->free_list;
        p->free_list = *(void **)obj;
        memset(obj, 0, p->obj_size);
    } else {
        if (p->chunk_used == p->per_chunk && grow(p))
            return NULL;
        obj = p->chunks->objs +
              (size_t)p->chunk_used++ * p->obj_size; /* fresh: zero */
    }
    p->live++;
    return obj;
}

void hb_pool_put(struct hb_pool *p, void *obj)
{
    *(void **)obj = p->free_list;
    p->free_list = obj;
    p->live--;
    p->puts++;
}

size_t hb_pool_memory(const struct hb_pool *p)
{
    return p->nchunks * chunk_bytes(p);
}

int hb_pool_foreach(const struct hb_pool *p, void (*fn)(void *obj, void *ctx),
                    void *ctx)
{
    uint32_t n = p->chunk_used;

    if (p->puts)
        return -1;
    for (struct hb_pool_chunk *c = p->chunks; c; c = c->next) {
        for (uint32_t i = 0; i < n; i++)
            fn(c->objs + (size_t)i * p->obj_size, ctx);
        n = p->per_chunk; /* only the newest chunk is partly used */
    }
    return 0;
}
