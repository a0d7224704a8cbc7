/* Reuse-table lookup cost against the number of tracked buffers.
 *
 *   bench-table N [LOOKUPS]   fills a 2^20-bucket table with N buffers
 *                             spaced like heap blocks, then looks up random
 *                             tracked ones (all N, and a hot set of 64);
 *                             prints ns per lookup.
 * Under callgrind (--toggle-collect=bench_lookups) the instruction count of
 * the lookups alone is read off; run-bench.sh does both for 10^2..10^6. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "track/reuse_table.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static uintptr_t key_of(uint64_t i)
{
    return hb_table_key((void *)(uintptr_t)(0x7f0000000000ull + i * 208), 0);
}

/* Looks up random tracked buffers among the first `among` ones. */
__attribute__((noinline)) uint64_t
bench_lookups(struct hb_table *t, uint64_t among, uint64_t lookups)
{
    uint64_t found = 0, x = 88172645463325252ull;
    for (uint64_t i = 0; i < lookups; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: scattered order */
        uint32_t chain = 0;
        found += hb_table_find(t, key_of(x % among), &chain) != NULL;
    }
    return found;
}

static double ns_per_lookup(struct hb_table *t, uint64_t among,
                            uint64_t lookups, uint64_t *found)
{
    double t0 = now_ns();
    *found = bench_lookups(t, among, lookups);
    return (now_ns() - t0) / (double)lookups;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000;
    uint64_t lookups = argc > 2 ? strtoull(argv[2], NULL, 0) : 2000000;
    struct hb_table t;
    struct hb_table_params p = {.bits = 20, .max_entries = n, .adapt = 0};
    if (n == 0 || hb_table_init(&t, &p))
        return 1;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t chain = 0;
        if (!hb_table_find(&t, key_of(i), &chain))
            hb_table_insert(&t, key_of(i), chain);
    }
    /* Uniform over all N: the worst case, bound by cache misses once the
     * table outgrows the caches.  Hot set: the 64 buffers an application
     * actually reuses, amid N tracked ones: what a real job sees. */
    uint64_t found_all, found_hot;
    double ns = ns_per_lookup(&t, n, lookups, &found_all);
    double ns_hot = ns_per_lookup(&t, n < 64 ? n : 64, lookups, &found_hot);
    printf(
        "table buffers=%llu lookups=%llu ns_per_lookup=%.2f ns_hot_set=%.2f longest_chain=%u\n",
        (unsigned long long)n, (unsigned long long)lookups, ns, ns_hot,
        t.max_chain);
    hb_table_destroy(&t);
    return found_all == lookups && found_hot == lookups ? 0 : 1;
}
