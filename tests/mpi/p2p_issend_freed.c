/* A synchronous send whose communicator the application frees before the
 * send completes (legal), and whose SYNC_ACK is lost with the QP
 * (HOTBUF_TEST_P2P_ACK_FAULT=1 under hotbuf): the send must still
 * complete.  Rank 0 turns a buffer hot on a duplicate of MPI_COMM_WORLD
 * (the pair goes live), then MPI_Issend on it, MPI_Comm_free, MPI_Wait;
 * rank 1 receives everything and frees its duplicate.  Output as without
 * hotbuf.  Usage: p2p_issend_freed [rounds] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256 /* ints: 1 KiB */

int main(int argc, char **argv)
{
    int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 40, bad = 0;
    int buf[N];
    MPI_Comm c;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    for (int r = 0; r <= rounds && rank < 2; r++) {
        int tag = r < rounds ? 1 : 2; /* the last one synchronous */
        if (rank == 0) {
            for (int i = 0; i < N; i++)
                buf[i] = r * N + i;
            if (tag == 1) {
                MPI_Send(buf, N, MPI_INT, 1, tag, c);
            } else {
                MPI_Issend(buf, N, MPI_INT, 1, tag, c, &req);
                MPI_Comm_free(&c);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        } else {
            MPI_Recv(buf, N, MPI_INT, 0, tag, c, MPI_STATUS_IGNORE);
            for (int i = 0; i < N; i++)
                bad += buf[i] != r * N + i;
            if (tag == 2)
                MPI_Comm_free(&c);
        }
    }
    if (rank >= 2)
        MPI_Comm_free(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < 2)
        printf("rank %d: %d round(s) and the Issend on a freed communicator "
               "done, errors %d\n",
               rank, rounds, bad);
    MPI_Finalize();
    return bad != 0;
}
