/* A communicator freed while a duplicate of its last ring message is
 * still on its way by MPI, and a new communicator made right after: the
 * new one must see only the application's messages.
 *
 * Rank 0 turns a buffer hot on a duplicate c of MPI_COMM_WORLD (the pair
 * goes live, HOTBUF_TEST_P2P_ASK=1), then sends its last message on c
 * with tag 2, frees c, duplicates MPI_COMM_WORLD into e and, after a
 * barrier, sends one int with tag 3 on e.  Rank 1 receives everything on
 * c, frees c, duplicates MPI_COMM_WORLD into e, probes e for a second
 * (nothing was sent on it yet: nothing may be there), and after the
 * barrier receives from MPI_ANY_SOURCE, MPI_ANY_TAG on e into one int:
 * it must be rank 0's tag 3.
 *
 * Under hotbuf with HOTBUF_TEST_P2P_LATE_FAULT=2 the tag-2 record is
 * placed at rank 1, which takes it, and 300 ms later rank 0's completion
 * of it fails with the QP, so rank 0 resends it by MPI on c.  When rank 1
 * had freed c in MPI already, MPICH gave e c's context id and that RESEND
 * was a message on e (Open MPI's ob1 keeps it back: its sequence number
 * is c's).  Output as without hotbuf.
 *
 * Mode "disconnect": rank 1 also answers every round but the last on c
 * (ring records both ways: each rank waits for the other's CLOSE), and c
 * goes with MPI_Comm_disconnect, which waits for them.
 * Usage: p2p_close [rounds] [disconnect] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256 /* ints: 1 KiB */

int main(int argc, char **argv)
{
    int rank, rounds = argc > 1 ? atoi(argv[1]) : 40, bad = 0;
    int both = argc > 2 && argv[2][0] == 'd';
    int *buf = malloc(N * sizeof(*buf)), one = -1, rc;
    MPI_Comm c, e;
    MPI_Status st;

    if (!buf)
        return 2;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    for (int r = 0; r <= rounds && rank < 2; r++) {
        int tag = r < rounds ? 1 : 2;
        if (rank == 0) {
            for (int i = 0; i < N; i++)
                buf[i] = r * N + i;
            MPI_Send(buf, N, MPI_INT, 1, tag, c);
            if (both && tag == 1) {
                MPI_Recv(buf, N, MPI_INT, 1, 4, c, MPI_STATUS_IGNORE);
                for (int i = 0; i < N; i++)
                    bad += buf[i] != ~(r * N + i);
            }
        } else {
            MPI_Recv(buf, N, MPI_INT, 0, tag, c, MPI_STATUS_IGNORE);
            for (int i = 0; i < N; i++)
                bad += buf[i] != r * N + i;
            if (both && tag == 1) {
                for (int i = 0; i < N; i++)
                    buf[i] = ~(r * N + i);
                MPI_Send(buf, N, MPI_INT, 0, 4, c);
            }
        }
    }
    if (both)
        MPI_Comm_disconnect(&c);
    else
        MPI_Comm_free(&c);
    MPI_Comm_dup(MPI_COMM_WORLD, &e);
    MPI_Comm_set_errhandler(e, MPI_ERRORS_RETURN);
    /* nothing was sent on e yet: rank 1 looks for a second */
    double until = MPI_Wtime() + 1.0;
    while (rank == 1 && MPI_Wtime() < until) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, e, &flag, &st);
        if (flag) {
            int n = 0;
            MPI_Get_count(&st, MPI_BYTE, &n);
            printf("rank 1: a message on the new communicator that nobody "
                   "sent (source %d, tag %d, %d bytes)\n",
                   st.MPI_SOURCE, st.MPI_TAG, n);
            bad++;
            char *junk = malloc(n > 0 ? (size_t)n : 1);
            MPI_Recv(junk, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, e,
                     MPI_STATUS_IGNORE);
            free(junk);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        one = 12345;
        MPI_Send(&one, 1, MPI_INT, 1, 3, e);
    } else if (rank == 1) {
        rc = MPI_Recv(&one, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, e, &st);
        if (rc != MPI_SUCCESS || st.MPI_SOURCE != 0 || st.MPI_TAG != 3 ||
            one != 12345) {
            printf("rank 1: the first message on the new communicator is not "
                   "the application's (rc %d, source %d, tag %d, value %d)\n",
                   rc, st.MPI_SOURCE, st.MPI_TAG, one);
            bad++;
            if (rc != MPI_SUCCESS || st.MPI_TAG != 3) /* the real one */
                MPI_Recv(&one, 1, MPI_INT, 0, 3, e, MPI_STATUS_IGNORE);
        }
    }
    MPI_Comm_free(&e);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < 2)
        printf("rank %d: %d round(s), a new communicator after the free, "
               "errors %d\n",
               rank, rounds, bad);
    MPI_Finalize();
    free(buf);
    return bad != 0;
}
