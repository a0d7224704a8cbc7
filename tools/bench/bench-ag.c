/* MPI_Allgather latency, plain MPI against hotbuf, in one run.
 *
 * Per block size 4 B .. 1 MiB (x4 steps) and per buffer policy, rounds
 * rotate between
 *   plain   PMPI_Allgather (the MPI library alone)
 *   hotbuf  MPI_Allgather (through hotbuf: its RDMA Allgather)
 *   plain2  PMPI_Allgather again: plain2/plain is the A/A ratio, the noise
 *           floor of the hotbuf/plain one (same run, same rounds)
 * Buffer policies: "reuse" (one receive buffer for every call) and "fresh"
 * (a receive buffer malloc'ed and freed around every call; above glibc's
 * mmap threshold each one is a new mapping that must be registered anew).
 * Prints per line the median of the per-round means (us per call, the
 * slowest rank's), the ratio hotbuf/plain and the A/A ratio plain2/plain.
 *
 *   bench-ag [max bytes (1M)] [rounds (5)] [min bytes (4)]
 *
 * Sizes are 4 B x 4^k; min skips the smaller ones (a long run split in two).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*allgather_fn)(const void *, int, MPI_Datatype, void *, int,
                            MPI_Datatype, MPI_Comm);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Fewer calls for larger blocks: about 1 MiB received per rank and round
 * (the emulated guest moves a few MB/s with 8 ranks on 2 CPUs). */
static int calls_for(long block, int size)
{
    long n = (1l << 20) / (block * size);
    return n < 2 ? 2 : n > 50 ? 50 : (int)n;
}

static double round_us(allgather_fn f, char *send, char *reused, long block,
                       int fresh, int calls, int size)
{
    double t0, us, worst;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < calls; i++) {
        char *recv = fresh ? malloc(block * size) : reused;
        f(send, (int)block, MPI_BYTE, recv, (int)block, MPI_BYTE,
          MPI_COMM_WORLD);
        if (fresh)
            free(recv);
    }
    us = (MPI_Wtime() - t0) * 1e6 / calls;
    MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    int rank, size;
    long max = argc > 1 ? atol(argv[1]) : 1l << 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    long min = argc > 3 ? atol(argv[3]) : 4;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *send = malloc(max), *reused = malloc(max * size);
    memset(send, rank + 1, max);
    memset(reused, 0, max * size);
    const allgather_fn variant[3] = {PMPI_Allgather, MPI_Allgather,
                                     PMPI_Allgather};
    double *t[3];
    for (int v = 0; v < 3; v++)
        t[v] = malloc(rounds * sizeof(double));
    if (rank == 0)
        printf("%-6s %8s %6s %12s %12s %7s %7s\n", "buffer", "bytes", "calls",
               "plain_us", "hotbuf_us", "ratio", "aa");
    for (int fresh = 0; fresh <= 1; fresh++)
        for (long block = 4; block <= max; block *= 4) {
            if (block < min)
                continue;
            int calls = calls_for(block, size);
            for (int v = 0; v < 2; v++) /* warm-up */
                round_us(variant[v], send, reused, block, fresh, 2, size);
            for (int r = 0; r < rounds; r++)
                for (int k = 0; k < 3; k++) {
                    int v = (r + k) % 3; /* rotate who goes first */
                    t[v][r] = round_us(variant[v], send, reused, block, fresh,
                                       calls, size);
                }
            for (int v = 0; v < 3; v++)
                qsort(t[v], rounds, sizeof(double), cmp_double);
            double p = t[0][rounds / 2], h = t[1][rounds / 2],
                   p2 = t[2][rounds / 2];
            if (rank == 0)
                printf("%-6s %8ld %6d %12.2f %12.2f %7.3f %7.3f\n",
                       fresh ? "fresh" : "reuse", block, calls, p, h, h / p,
                       p2 / p);
        }
    MPI_Finalize();
    return 0;
}
