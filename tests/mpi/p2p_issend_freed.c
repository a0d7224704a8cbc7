/* A synchronous send whose communicator the application frees before the
 * send completes (legal), and whose SYNC_ACK is lost with the QP
 * (HOTBUF_TEST_P2P_ACK_FAULT=1 under hotbuf): the send must still
 * complete.  Rank 0 turns a buffer hot on a duplicate of MPI_COMM_WORLD
 * (the pair goes live), then MPI_Issend on it, MPI_Comm_free, MPI_Wait;
 * rank 1 receives everything and frees its duplicate.  Output as without
 * hotbuf.  Usage: p2p_issend_freed [rounds] [rndv]
 * rndv: the last send is instead an MPI_Isend of 256 KiB, a rendezvous
 * on the ring, and its communicator freed before MPI_Wait; the receive is
 * posted after a barrier that follows the free, and under hotbuf with
 * HOTBUF_TEST_P2P_READ_FAULT=1 the receiver's read of it fails, so the
 * message must come again by MPI on the communicator freed meanwhile. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256      /* ints: 1 KiB */
#define BIG 65536 /* ints: 256 KiB, the rendezvous */
static int *big; /* malloc'd: hotbuf registers no static data (.bss may
                    share a mapping with the program's file) */

int main(int argc, char **argv)
{
    int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 40, bad = 0;
    int rndv = argc > 2 && argv[2][0] == 'r';
    if (!(big = malloc(BIG * sizeof(*big))))
        return 2;
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
            } else if (rndv) {
                for (int i = 0; i < BIG; i++)
                    big[i] = i ^ 0x5a5a;
                MPI_Isend(big, BIG, MPI_INT, 1, tag, c, &req);
                MPI_Comm_free(&c);
                /* the receive is posted only after the free: its read
                 * fails then, with the communicator gone here */
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                MPI_Issend(buf, N, MPI_INT, 1, tag, c, &req);
                MPI_Comm_free(&c);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        } else if (tag == 2 && rndv) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Recv(big, BIG, MPI_INT, 0, tag, c, MPI_STATUS_IGNORE);
            for (int i = 0; i < BIG; i++)
                bad += big[i] != (i ^ 0x5a5a);
            MPI_Comm_free(&c);
        } else {
            MPI_Recv(buf, N, MPI_INT, 0, tag, c, MPI_STATUS_IGNORE);
            for (int i = 0; i < N; i++)
                bad += buf[i] != r * N + i;
            if (tag == 2)
                MPI_Comm_free(&c);
        }
    }
    if (rank >= 2 && rndv)
        MPI_Barrier(MPI_COMM_WORLD);
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
