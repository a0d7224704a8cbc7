/* Jobs that end without MPI_Finalize: argv[1] = "abort" calls MPI_Abort
 * after some traffic, "exit" returns from main without finalizing.  With
 * hotbuf they must end the same way as without it: no hang, no crash. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, buf[64] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 100; i++)
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 1 && !strcmp(argv[1], "abort")) {
        if (rank == 0) {
            printf("abort_early: aborting\n");
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* the others wait to be killed */
    }
    if (rank == 0)
        printf("abort_early: leaving without MPI_Finalize\n");
    return 0;
}
