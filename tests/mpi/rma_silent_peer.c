/* A target that stays inside an MPI call hotbuf does not see (a barrier)
 * while its origin keeps putting from a hot buffer under a lock.  The
 * target never answers hotbuf's connection requests: hotbuf must not wait
 * for it, must leave the peer on PMPI once HOTBUF_CONNECT_TIMEOUT has
 * passed, and the report names the peer.  Rank 0 is the origin for
 * `seconds` (argument, default 3), every other rank a silent target.
 * Prints the targets' window digests: the same with and without hotbuf.
 * The target is silent only without hotbuf's progress hook inside MPI
 * (tests/rdma/rma_faults.sh leaves it out with a test switch); with the
 * hook its MPI_Barrier answers, and tests/rdma/progress_hook.sh uses this
 * program as the passive target whose Puts must then be rerouted. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "digest.h"

#define N 512

int main(int argc, char **argv)
{
    int rank, size;
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *mem, hot[N];
    MPI_Win win;
    MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                     &win);
    for (int i = 0; i < N; i++)
        mem[i] = -1, hot[i] = 1.5 * i;
    MPI_Barrier(MPI_COMM_WORLD); /* windows initialized everywhere */
    if (rank == 0) {
        long puts = 0;
        for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < seconds;)
            for (int target = 1; target < size; target++, puts++) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
                MPI_Put(hot, N, MPI_DOUBLE, target, 0, N, MPI_DOUBLE, win);
                MPI_Win_unlock(target, win);
            }
        if (puts < 2 * (size - 1))
            fprintf(stderr, "only %ld puts\n", puts);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the targets wait here all along */
    unsigned long h = digest(mem, sizeof(mem[0]) * N), all = 0;
    MPI_Reduce(&h, &all, 1, MPI_UNSIGNED_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; rank > 0 && i < N; i++)
        bad += mem[i] != 1.5 * i;
    int bad_all = 0;
    MPI_Reduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("silent_peer: windows %016lx, wrong elements %d\n", all, bad_all);
    MPI_Win_free(&win);
    MPI_Finalize();
    return bad_all != 0;
}
