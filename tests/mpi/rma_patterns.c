/* One-sided patterns: fence, post-start-complete-wait, lock/unlock,
 * lock_all + flush, Rput/Rget, hot and cold origin buffers mixed.  Prints
 * every window's final contents digest; compared with and without hotbuf. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

#define N 256


int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double *win_mem, *hot = malloc(N * sizeof(double)), *cold = malloc(64 * N * sizeof(double));
    MPI_Win win;
    MPI_Win_allocate(4 * N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &win_mem, &win);
    memset(win_mem, 0, 4 * N * sizeof(double));
    unsigned long h = 0;

    for (int it = 0; it < 40; it++) { /* fence */
        for (int i = 0; i < N; i++)
            hot[i] = rank + it * 0.5 + i, cold[it * N + i] = -i - it;
        MPI_Win_fence(0, win);
        MPI_Put(hot, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, win);
        MPI_Put(cold + it * N, N / 2, MPI_DOUBLE, right, N, N / 2, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        MPI_Get(hot, N, MPI_DOUBLE, left, 0, N, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        h ^= digest(hot, N * sizeof(double)) + it;
    }

    MPI_Group world, peers;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranks[2] = {left, right};
    MPI_Group_incl(world, left == right ? 1 : 2, ranks, &peers);
    for (int it = 0; it < 20; it++) { /* post-start-complete-wait */
        for (int i = 0; i < N; i++)
            hot[i] = rank * 3 + it + i;
        MPI_Win_post(peers, 0, win);
        MPI_Win_start(peers, 0, win);
        MPI_Put(hot, N, MPI_DOUBLE, right, 2 * N, N, MPI_DOUBLE, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        h ^= digest(win_mem + 2 * N, N * sizeof(double)) * (it + 1);
    }
    MPI_Group_free(&peers);
    MPI_Group_free(&world);

    for (int it = 0; it < 20; it++) { /* lock/unlock, exclusive on one slot per origin */
        for (int i = 0; i < 8; i++)
            hot[i] = rank * 100 + it + i;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        MPI_Put(hot, 8, MPI_DOUBLE, right, 3 * N, 8, MPI_DOUBLE, win);
        MPI_Win_unlock(right, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        h ^= digest(win_mem + 3 * N, 8 * sizeof(double)) + it;
        MPI_Win_unlock(rank, win);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    MPI_Win_lock_all(0, win); /* lock_all + flush, Rput/Rget */
    for (int it = 0; it < 20; it++) {
        MPI_Request r[2];
        for (int i = 0; i < 16; i++)
            hot[i] = rank + it * 7 + i;
        MPI_Rput(hot, 16, MPI_DOUBLE, right, 3 * N + 16, 16, MPI_DOUBLE, win, &r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        MPI_Win_flush(right, win);
        MPI_Rget(cold, 16, MPI_DOUBLE, right, 3 * N + 16, 16, MPI_DOUBLE, win, &r[1]);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
        h ^= digest(cold, 16 * sizeof(double)) + it;
        MPI_Win_flush_all(win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    h ^= digest(win_mem, 4 * N * sizeof(double));

    unsigned long all[64] = {0};
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, all, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < size && i < 64; i++)
            printf("rank %d rma digest %016lx\n", i, all[i]);
    MPI_Win_free(&win);
    free(hot);
    free(cold);
    MPI_Finalize();
    return 0;
}
