/* MPI's progress rule with hotbuf matching (P2P-DESIGN.md §5.10, H9): rank
 * 1 posts its receives, then sits in MPI_Allreduce; rank 0 sends with
 * MPI_Ssend and a rendezvous-size MPI_Send before it joins the
 * Allreduce.  Both sends complete only once rank 1 matches them, which on
 * a pulled communicator only hotbuf can do, from inside MPI's Allreduce
 * (the progress hook).  Without the hook this hangs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "digest.h"

#define BIG (1 << 20) /* doubles: far above any eager limit */

int main(int argc, char **argv)
{
    int rank, one = 1, sum = 0, small = 0;
    double *big = malloc(BIG * sizeof(double));
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* A first receive-side call: MPI_COMM_WORLD is pulled from here on. */
    MPI_Sendrecv(&rank, 1, MPI_INT, rank ^ 1, 0, &small, 1, MPI_INT,
                 rank ^ 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 1) {
        MPI_Request q[2];
        MPI_Irecv(&small, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(big, BIG, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, &q[1]);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        printf("rank 1: ssend %d, big %016lx, allreduce %d\n", small,
               digest(big, BIG * sizeof(double)), sum);
    } else if (rank == 0) {
        int v = 42;
        for (int i = 0; i < BIG; i++)
            big[i] = i * 0.5;
        MPI_Ssend(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Send(big, BIG, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    free(big);
    MPI_Finalize();
    return 0;
}
