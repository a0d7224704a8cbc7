/* Reuse-table lookup cost against the number of tracked buffers.
 *
 *   bench-table N [LOOKUPS]   fills a 2^20-bucket table with N buffers
 *                             spaced like heap blocks, then looks up
 *                             random tracked ones; prints ns per lookup.
 * Under callgrind (--toggle-collect=bench_lookups) the instruction count of
 * the lookups alone is read off; run-bench.sh does both for 10^2..10^6. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "reuse_table.h"

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

__attribute__((noinline)) uint64_t bench_lookups(struct hb_table *t, uint64_t n, uint64_t lookups)
{
    uint64_t found = 0, x = 88172645463325252ull;
    for (uint64_t i = 0; i < lookups; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: scattered order */
        uint32_t chain = 0;
        found += hb_table_find(t, key_of(x % n), &chain) != NULL;
    }
    return found;
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
    double t0 = now_ns();
    uint64_t found = bench_lookups(&t, n, lookups);
    double ns = (now_ns() - t0) / (double)lookups;
    printf("table buffers=%llu lookups=%llu found=%llu ns_per_lookup=%.2f longest_chain=%u\n",
           (unsigned long long)n, (unsigned long long)lookups, (unsigned long long)found, ns,
           t.max_chain);
    hb_table_destroy(&t);
    return found == lookups ? 0 : 1;
}
