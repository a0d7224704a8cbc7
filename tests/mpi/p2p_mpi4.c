/* MPI-4 calls against the ring (MPICH here), two defects of session 29's
 * review.  2 ranks, rank 1 sends to rank 0; each rank prints "errors 0".
 *
 * Modes 0, 1: an MPI_Isendrecv (0) or MPI_Isendrecv_replace (1) of rank 0
 * whose receive is pending in MPI when rank 1's sends on the same
 * communicator turn hot and ask for the ring; mode 2 is the same with
 * MPI_Irecv + MPI_Isend (a receive hotbuf can migrate).  A receive inside
 * an Isendrecv cannot be migrated (cancelling it would cancel the send),
 * so the grant must wait until it is done: hotbuf granted at once, and the
 * message for it then waited in hotbuf's matcher while MPI's receive
 * waited for it, forever.
 *
 * Mode 3: ring messages taken by MPI_Mprobe and received by MPI_Mrecv_c
 * and MPI_Imrecv_c: their status names the sender (it said 0: hotbuf hands
 * a matched ring message out on a private communicator, and only the int
 * forms gave it its sender back).
 *
 * Usage: p2p_mpi4 MODE */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64
#define HOT 12 /* tag-1 sends: hot, and a grant asked for, before the tag-2 */

static int hot[N];

/* Small exchanges on MPI_COMM_WORLD between the sends: wrapper entries,
 * where the receiver looks at the handshake. */
static void chat(int rank)
{
    for (int i = 0; i < 8; i++) {
        int out = i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, 1 - rank, 0, &in, 1, MPI_INT, 1 - rank,
                     0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static int receiver(MPI_Comm x, int mode)
{
    int a[N], b[N], s = 5, errors = 0;
    MPI_Request q = MPI_REQUEST_NULL, q2 = MPI_REQUEST_NULL;

    memset(b, 0, sizeof b);
#if MPI_VERSION >= 4
    if (mode == 0)
        MPI_Isendrecv(&s, 1, MPI_INT, 1, 9, b, N, MPI_INT, 1, 2, x, &q);
    if (mode == 1) {
        b[0] = s;
        MPI_Isendrecv_replace(b, N, MPI_INT, 1, 9, 1, 2, x, &q);
    }
#endif
    if (mode == 2) {
        MPI_Irecv(b, N, MPI_INT, 1, 2, x, &q);
        MPI_Isend(&s, 1, MPI_INT, 1, 9, x, &q2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < HOT; i++) {
        MPI_Recv(a, N, MPI_INT, 1, 1, x, MPI_STATUS_IGNORE);
        errors += a[0] != i;
        chat(0);
    }
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Wait(&q2, MPI_STATUS_IGNORE);
    return errors + (b[0] != 4242);
}

/* Mode 3's receiver: after the pair is on the ring, two messages. */
static int matched(MPI_Comm x)
{
    int errors = 0;
#if MPI_VERSION >= 4
    int b[N] = {0};
    MPI_Message m;
    MPI_Status st;
    MPI_Request q;

    for (int i = 0; i < HOT; i++) {
        MPI_Recv(b, N, MPI_INT, 1, 1, x, MPI_STATUS_IGNORE);
        chat(0);
    }
    MPI_Mprobe(1, 3, x, &m, &st);
    MPI_Mrecv_c(b, N, MPI_INT, &m, &st);
    errors += st.MPI_SOURCE != 1 || st.MPI_TAG != 3 || b[0] != 11;
    MPI_Mprobe(MPI_ANY_SOURCE, 4, x, &m, &st);
    MPI_Imrecv_c(b, N, MPI_INT, &m, &q);
    MPI_Wait(&q, &st);
    errors += st.MPI_SOURCE != 1 || st.MPI_TAG != 4 || b[0] != 12;
#endif
    return errors;
}

static int sender_matched(MPI_Comm x)
{
    int a[N] = {0};

    for (int i = 0; i < HOT; i++) {
        hot[0] = i;
        MPI_Send(hot, N, MPI_INT, 0, 1, x);
        chat(1);
    }
    a[0] = 11;
    MPI_Send(a, N, MPI_INT, 0, 3, x);
    a[0] = 12;
    MPI_Send(a, N, MPI_INT, 0, 4, x);
    return 0;
}

static int sender(MPI_Comm x)
{
    int r[N], last[N] = {4242};

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Recv(r, N, MPI_INT, 0, 9, x, MPI_STATUS_IGNORE);
    for (int i = 0; i < HOT; i++) {
        hot[0] = i;
        MPI_Send(hot, N, MPI_INT, 0, 1, x);
        chat(1);
    }
    MPI_Send(last, N, MPI_INT, 0, 2, x);
    return r[0] != 5;
}

int main(int argc, char **argv)
{
    int rank, mode = argc > 1 ? atoi(argv[1]) : 0, errors;
    MPI_Comm x;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#if MPI_VERSION < 4
    if (mode != 2) {
        if (rank == 0)
            fprintf(stderr, "p2p_mpi4: mode %d needs MPI-4\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
#endif
    MPI_Comm_dup(MPI_COMM_WORLD, &x);
    if (mode == 3)
        errors = rank == 0 ? matched(x) : sender_matched(x);
    else
        errors = rank == 0 ? receiver(x, mode) : sender(x);
    MPI_Comm_free(&x);
    printf("rank %d mode %d: errors %d\n", rank, mode, errors);
    MPI_Finalize();
    return 0;
}
