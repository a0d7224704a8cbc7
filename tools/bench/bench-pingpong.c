/* Pass-through overhead of hotbuf's tracking on a 2-rank ping-pong.
 *
 * Run under hotbuf (tools/bench/run-bench.sh does), it alternates rounds
 * that call PMPI_Send and PMPI_Recv directly (the plain path, untouched by
 * hotbuf) with rounds that call MPI_Send and MPI_Recv (through hotbuf's
 * wrappers and reuse table), and a second plain round (A/A), in
 * the same processes and the same run, so both variants see the same
 * machine state.  Prints one line per size with the median one-way latency
 * of each and their ratio.  Absolute numbers on a shared machine are
 * noise; the ratio is the result. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROUNDS 401

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef int (*send_fn_t)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn_t)(void *, int, MPI_Datatype, int, int, MPI_Comm,
                         MPI_Status *);

/* The two paths: PMPI (untouched by hotbuf) and MPI (through its wrappers,
 * the receive side's too once it is wrapped). */
struct path {
    send_fn_t send;
    recv_fn_t recv;
};
static const struct path plain_path = {PMPI_Send, PMPI_Recv};
static const struct path hotbuf_path = {MPI_Send, MPI_Recv};

/* One-way latency in us of iters round trips through path p. */
static double round_trip(const struct path *p, char *buf, int size, int iters,
                         int rank)
{
    send_fn_t send_fn = p->send;
    recv_fn_t recv_fn = p->recv;
    int peer = 1 - rank;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            send_fn(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            recv_fn(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
        } else {
            recv_fn(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE);
            send_fn(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

int main(int argc, char **argv)
{
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 2000;
    /* Many short rounds suit a busy machine: a preemption spoils one. */
    int ROUNDS = argc > 2 ? atoi(argv[2]) : 21;
    if (ROUNDS < 1 || ROUNDS > MAX_ROUNDS || iters < 4) {
        fprintf(stderr, "usage: bench-pingpong [iters >= 4 [rounds 1..%d]]\n",
                MAX_ROUNDS);
        return 2;
    }
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
        double plain[MAX_ROUNDS], wrapped[MAX_ROUNDS], ratio[MAX_ROUNDS],
            aa[MAX_ROUNDS];
        round_trip(&hotbuf_path, buf, bytes, iters / 4,
                   rank); /* warm up both paths */
        round_trip(&plain_path, buf, bytes, iters / 4, rank);
        /* Each round measures the plain path twice and the hotbuf path
         * once, back to back in a rotating order, and contributes one
         * hotbuf/plain ratio and one plain/plain (A/A) ratio, the noise
         * floor of this machine: a load burst from elsewhere then spoils
         * one ratio, not a whole column. */
        for (int r = 0; r < ROUNDS; r++) {
            double t[3];
            const struct path *order[3][3] = {
                {&plain_path, &hotbuf_path, &plain_path},
                {&hotbuf_path, &plain_path, &plain_path},
                {&plain_path, &plain_path, &hotbuf_path}};
            int w = r % 3 == 0 ? 1 : r % 3 == 1 ? 0 : 2; /* where hotbuf is */
            for (int k = 0; k < 3; k++)
                t[k] = round_trip(order[r % 3][k], buf, bytes, iters, rank);
            int p1 = w == 0 ? 1 : 0, p2 = w == 2 ? 1 : 2;
            plain[r] = t[p1];
            wrapped[r] = t[w];
            ratio[r] = wrapped[r] / plain[r];
            aa[r] = t[p2] / t[p1];
        }
        qsort(plain, ROUNDS, sizeof(double), cmp_double);
        qsort(wrapped, ROUNDS, sizeof(double), cmp_double);
        qsort(ratio, ROUNDS, sizeof(double), cmp_double);
        qsort(aa, ROUNDS, sizeof(double), cmp_double);
        if (rank == 0)
            printf("pingpong size=%d plain_us=%.3f hotbuf_us=%.3f "
                   "min_ratio=%.4f ratio=%.4f aa_ratio=%.4f\n",
                   bytes, plain[ROUNDS / 2], wrapped[ROUNDS / 2],
                   wrapped[0] / plain[0], ratio[ROUNDS / 2], aa[ROUNDS / 2]);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
