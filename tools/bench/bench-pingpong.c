/* Pass-through overhead of hotbuf's tracking on a 2-rank ping-pong.
 *
 * Run under hotbuf (tools/bench/run-bench.sh does), it alternates rounds
 * that call PMPI_Send directly (the plain path, untouched by hotbuf) with
 * rounds that call MPI_Send (through hotbuf's wrapper and reuse table), in
 * the same processes and the same run, so both variants see the same
 * machine state.  Prints one line per size with the median one-way latency
 * of each and their ratio.  Absolute numbers on a shared machine are
 * noise; the ratio is the result. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 21

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One-way latency in us of iters round trips through send_fn. */
static double round_trip(int (*send_fn)(const void *, int, MPI_Datatype, int,
                                        int, MPI_Comm),
                         char *buf, int size, int iters, int rank)
{
    int peer = 1 - rank;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            send_fn(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            send_fn(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

int main(int argc, char **argv)
{
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 2000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "bench-pingpong needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = malloc(8192);
    memset(buf, 1, 8192);
    if (rank == 0)
        printf(
            "# medians of %d rounds of %d round trips; ratio = median of the per-round "
            "hotbuf/plain ratios, min_ratio = best hotbuf / best plain\n",
            ROUNDS, iters);
    for (int bytes = 8; bytes <= 8192; bytes *= 2) {
        double plain[ROUNDS], wrapped[ROUNDS], ratio[ROUNDS];
        round_trip(MPI_Send, buf, bytes, iters / 4,
                   rank); /* warm up both paths */
        round_trip(PMPI_Send, buf, bytes, iters / 4, rank);
        /* Each round measures both variants back to back, in alternating
         * order, and contributes one ratio: a load burst from elsewhere on
         * the machine then spoils one ratio, not a whole column. */
        for (int r = 0; r < ROUNDS; r++) {
            if (r % 2) {
                wrapped[r] = round_trip(MPI_Send, buf, bytes, iters, rank);
                plain[r] = round_trip(PMPI_Send, buf, bytes, iters, rank);
            } else {
                plain[r] = round_trip(PMPI_Send, buf, bytes, iters, rank);
                wrapped[r] = round_trip(MPI_Send, buf, bytes, iters, rank);
            }
            ratio[r] = wrapped[r] / plain[r];
        }
        qsort(plain, ROUNDS, sizeof(double), cmp_double);
        qsort(wrapped, ROUNDS, sizeof(double), cmp_double);
        qsort(ratio, ROUNDS, sizeof(double), cmp_double);
        if (rank == 0)
            printf(
                "pingpong size=%d plain_us=%.3f hotbuf_us=%.3f min_ratio=%.4f ratio=%.4f\n",
                bytes, plain[ROUNDS / 2], wrapped[ROUNDS / 2],
                wrapped[0] / plain[0], ratio[ROUNDS / 2]);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
