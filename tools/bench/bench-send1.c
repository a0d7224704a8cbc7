/* A single rank sending one 1 KiB buffer to itself N times through
 * MPI_Send: run under callgrind by tools/bench/run-bench.sh, which takes
 * the instructions of MPI_Send minus those of PMPI_Send inside it, i.e.
 * what hotbuf's wrapper and reuse-table lookup add per call. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *out = calloc(1, 1024), *in = calloc(1, 1024);
    for (int i = 0; i < n; i++) {
        MPI_Request r;
        MPI_Irecv(in, 1024, MPI_BYTE, rank, 0, MPI_COMM_WORLD, &r);
        MPI_Send(out, 1024, MPI_BYTE, rank, 0, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
