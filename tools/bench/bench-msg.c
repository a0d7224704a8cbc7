/* A cold message, end to end: rank 0 sends N messages of 64 B (below
 * HOTBUF_MIN_SIZE: never hot, never rerouted) with MPI_Send, rank 1
 * receives each with MPI_Irecv and completes it with MPI_Wait.  Run under
 * callgrind by tools/bench/run-bench.sh, which takes, per MPI call, its
 * instructions minus those of the PMPI call inside it: what hotbuf adds to
 * one message on the sending and the receiving side. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MSG_BYTES 64

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10000, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "bench-msg needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = calloc(1, MSG_BYTES);
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(buf, MSG_BYTES, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        } else {
            MPI_Request r;
            MPI_Irecv(buf, MSG_BYTES, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        if (i % 256 == 255) /* bounds the receiver's unexpected queue */
            MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
