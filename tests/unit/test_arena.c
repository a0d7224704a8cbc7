/* Unit test of the chunk allocator (shim/util/arena.c): fixed cases, then
 * a seeded random sequence of allocations and frees checked against a
 * model (a byte map of which addresses are handed out), with every block
 * filled with its own pattern and checked when it is freed.
 * Usage: test_arena [seed] [steps]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/arena.h"

#define ALIGN 64
#define CHUNK (64 * 1024)
#define NLIVE 256

static unsigned long long rng_state;

static uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int gone_calls;
static void chunk_gone(void *base, size_t len, void *user)
{
    (void)base;
    (void)len;
    free(user);
    gone_calls++;
}

static void fixed_cases(void)
{
    struct hb_arena a;
    static _Alignas(4096) char mem[4 * CHUNK];

    CHECK(hb_arena_init(&a, 48) == -1); /* not a power of two */
    CHECK(hb_arena_init(&a, ALIGN) == 0);
    CHECK(hb_arena_alloc(&a, 1) == NULL);                /* no chunk yet */
    CHECK(hb_arena_add(&a, mem + 8, CHUNK, NULL) == -1); /* unaligned */
    CHECK(hb_arena_add(&a, mem + CHUNK, CHUNK, NULL) == 0);
    CHECK(hb_arena_add(&a, mem + CHUNK + ALIGN, ALIGN, NULL) ==
          -1);                                      /* overlap */
    CHECK(hb_arena_add(&a, mem, CHUNK, NULL) == 0); /* before it: sorted */
    CHECK(a.nchunks == 2 && a.chunks[0].base == (uintptr_t)mem);

    char *p = hb_arena_alloc(&a, 1), *q = hb_arena_alloc(&a, 100);
    CHECK(p == mem && q == mem + ALIGN); /* first fit, padded to 64 */
    CHECK_EQ_U64(a.in_use, 3 * ALIGN);
    CHECK(hb_arena_free(&a, q + 1) == 0);            /* inside a block */
    CHECK(hb_arena_free(&a, mem + 2 * CHUNK) == -1); /* not ours */
    CHECK(hb_arena_chunk_of(&a, q + 5) == &a.chunks[0]);
    CHECK(hb_arena_chunk_of(&a, mem + 3 * CHUNK) == NULL);
    CHECK(hb_arena_free(&a, p) == 1);
    CHECK(hb_arena_free(&a, p) == 0);             /* double free */
    CHECK(hb_arena_alloc(&a, CHUNK + 1) == NULL); /* larger than any chunk */
    char *big = hb_arena_alloc(&a, CHUNK - 3 * ALIGN); /* after q: fits */
    CHECK(big == mem + 3 * ALIGN);
    char *next = hb_arena_alloc(&a, 2 * ALIGN); /* chunk 0 full but p's hole */
    CHECK(next == mem + CHUNK);
    CHECK(hb_arena_alloc(&a, ALIGN) == mem); /* p's hole */
    CHECK_EQ_U64(a.peak, a.in_use);
    struct hb_arena_chunk out;
    CHECK(hb_arena_take_empty(&a, mem, &out) == 0); /* blocks live */
    CHECK(hb_arena_take_empty(&a, mem + 3 * CHUNK, &out) == 0); /* not ours */
    CHECK(hb_arena_free(&a, next) == 1);
    CHECK(hb_arena_take_empty(&a, next + ALIGN, &out) == 1);
    CHECK(out.base == (uintptr_t)mem + CHUNK && out.len == CHUNK);
    CHECK(a.nchunks == 1 && a.chunk_bytes == CHUNK);
    CHECK(hb_arena_chunk_of(&a, next) == NULL);
    hb_arena_destroy(&a, NULL);
    CHECK(a.nchunks == 0 && a.in_use == 0);
}

/* Every chunk tiles exactly, blocks aligned, no two free neighbours. */
static int consistent(const struct hb_arena *a, uint64_t *used_bytes)
{
    *used_bytes = 0;
    for (size_t i = 0; i < a->nchunks; i++) {
        const struct hb_arena_chunk *c = &a->chunks[i];
        uintptr_t x = c->base;
        for (size_t k = 0; k < c->nblocks; k++) {
            const struct hb_arena_block *b = &c->blocks[k];
            if (b->start != x || b->len == 0 || b->start % ALIGN ||
                b->len % ALIGN)
                return 0;
            if (k && !b->used && !c->blocks[k - 1].used)
                return 0;
            if (b->used)
                *used_bytes += b->len;
            x += b->len;
        }
        if (x != c->base + c->len)
            return 0;
    }
    return 1;
}

static void random_run(unsigned long long seed, int steps)
{
    struct hb_arena a;
    struct {
        unsigned char *p;
        size_t n;
        unsigned char pat;
    } live[NLIVE] = {{0}};
    int bad_pattern = 0, bad_state = 0, overlap = 0;
    uint64_t used;

    rng_state = seed;
    hb_arena_init(&a, ALIGN);
    for (int s = 0; s < steps; s++) {
        int i = (int)(rng() % NLIVE);
        if (live[i].p) {
            for (size_t k = 0; k < live[i].n; k++)
                bad_pattern += live[i].p[k] != live[i].pat;
            CHECK(hb_arena_free(&a, live[i].p) == 1);
            struct hb_arena_chunk out; /* an oversized chunk goes when empty */
            const struct hb_arena_chunk *c = hb_arena_chunk_of(&a, live[i].p);
            if (c && c->len > CHUNK && hb_arena_take_empty(&a, live[i].p, &out))
                free(out.user);
            live[i].p = NULL;
        } else {
            size_t n = 1 + rng() % (rng() % 4 ? 2000 : 3 * CHUNK / 2);
            unsigned char *p = hb_arena_alloc(&a, n);
            if (!p) { /* grow by a chunk that fits it, as shim/mem does */
                size_t len = n > CHUNK ? (n + 4095) & ~(size_t)4095 : CHUNK;
                void *m = aligned_alloc(4096, len);
                CHECK(m && hb_arena_add(&a, m, len, m) == 0);
                p = hb_arena_alloc(&a, n);
            }
            CHECK(p && (uintptr_t)p % ALIGN == 0);
            if (!p)
                continue;
            for (int j = 0; j < NLIVE; j++) /* disjoint from every live */
                overlap +=
                    live[j].p && p < live[j].p + live[j].n && live[j].p < p + n;
            live[i].p = p;
            live[i].n = n;
            live[i].pat = (unsigned char)rng();
            memset(p, live[i].pat, n);
        }
        bad_state += !consistent(&a, &used) || used != a.in_use;
    }
    for (int i = 0; i < NLIVE; i++)
        if (live[i].p)
            CHECK(hb_arena_free(&a, live[i].p) == 1);
    CHECK(consistent(&a, &used) && used == 0 && a.in_use == 0);
    for (size_t i = 0; i < a.nchunks; i++) /* all merged back */
        CHECK(a.chunks[i].nblocks == 1 && !a.chunks[i].blocks[0].used);
    printf(
        "seed %llu: %d steps, %llu allocs, %zu chunks (%llu B), peak %llu B; "
        "pattern errors %d, overlaps %d, inconsistent states %d\n",
        seed, steps, (unsigned long long)a.allocs, a.nchunks,
        (unsigned long long)a.chunk_bytes, (unsigned long long)a.peak,
        bad_pattern, overlap, bad_state);
    CHECK(bad_pattern == 0 && overlap == 0 && bad_state == 0);
    size_t n = a.nchunks;
    gone_calls = 0;
    hb_arena_destroy(&a, chunk_gone);
    CHECK_EQ_U64(gone_calls, n);
}

int main(int argc, char **argv)
{
    unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    int steps = argc > 2 ? atoi(argv[2]) : 20000;

    fixed_cases();
    for (unsigned long long s = seed; s < seed + 5; s++)
        random_run(s, steps);
    return CHECK_DONE();
}
