/* Dynamic processes: a parent job spawns a child job and merges the
 * intercommunicator; both then run a hot MPI_Allgather and fence Puts on
 * a window over the merged communicator.  The two jobs' MPI_COMM_WORLD
 * ranks alias (both have a rank 0): nothing may confuse a process of one
 * job with a process of the other.  Prints the merged results once. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"

#define N 4096

int main(int argc, char **argv)
{
    MPI_Comm parent, inter, merged;
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        char *child_argv[] = {"child", NULL};
        MPI_Comm_spawn(argv[0], child_argv, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                       MPI_ERRCODES_IGNORE);
        MPI_Intercomm_merge(inter, 0, &merged);
    } else {
        inter = parent;
        MPI_Intercomm_merge(inter, 1, &merged);
    }
    int rank, size;
    MPI_Comm_rank(merged, &rank);
    MPI_Comm_size(merged, &size);
    static double block[N], all[16 * N], hot[N];
    double *mem;
    MPI_Win win;
    MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, merged, &mem, &win);
    unsigned long h = DIGEST_INIT;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < N; i++)
            block[i] = hot[i] = rank * 1000 + round + i * 1e-3;
        MPI_Allgather(block, N, MPI_DOUBLE, all, N, MPI_DOUBLE, merged);
        h = digest_more(h, all, sizeof(double) * N * size);
        MPI_Win_fence(0, win);
        MPI_Put(hot, N, MPI_DOUBLE, (rank + 1) % size, 0, N, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        h = digest_more(h, mem, sizeof(double) * N);
    }
    unsigned long hs[16] = {0};
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, hs, 1, MPI_UNSIGNED_LONG, 0, merged);
    if (rank == 0)
        for (int i = 0; i < size; i++)
            printf("spawn_merge: merged rank %d of %d: %016lx\n", i, size, hs[i]);
    MPI_Win_free(&win);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&inter);
    MPI_Finalize();
    return 0;
}
