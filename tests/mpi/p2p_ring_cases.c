/* Hand-made cases of hotbuf's point-to-point ring (issue 13), each a
 * defect the randomized runs found.
 *
 * In-band messages must never outlive the communicator they were sent on.
 * A marker of the ring protocol travels by MPI on the application's
 * communicator; one that nobody receives stays in MPI's queue when the
 * communicator is freed, and MPICH, which reuses the context id, hands it
 * to a wildcard receive of the next communicator.
 *
 * Each round, rank 1 sends to rank 0 on a fresh duplicate x of
 * MPI_COMM_WORLD (with HOTBUF_TEST_P2P_ASK=1 its first send asks for a
 * grant), in one of three cases:
 *   grant  one message only; rank 1 looks at the handshake (the grant
 *          comes) while rank 0 sleeps and then frees x without looking;
 *   fence  after the grant, ring messages, then rank 1 makes a persistent
 *          send on x and frees it unstarted while rank 0 sleeps;
 *   start  the same, but the persistent send is started and received
 *          (it must come after the ring messages);
 *   partial  after the ring messages, 7 ints received as 4 elements of 3
 *          ints: the last element is partial, MPI writes its first int
 *          and leaves the other two alone (hotbuf dropped the partial
 *          element of a ring message).
 *   large  after the ring messages, a message too large for a slot by
 *          the large-count MPI_Send_c (MPI_Send where the MPI has none),
 *          then a ring message: they must arrive in that order (hotbuf
 *          did not wrap the _c sends, so theirs went without the marker
 *          and the count the receiver's merge orders by).
 *   sync   after the ring messages, an MPI_Ssend and an MPI_Issend while
 *          rank 0 sleeps before each receive: the Ssend must not return,
 *          nor the Issend test complete, before the receive is posted
 *          (on the ring they complete at the receiver's SYNC_ACK).
 * The sleeps make "the receiver no longer looks at x" certain, not likely:
 * that is when a marker sent after the receiver's last look is lost.
 * Then x is freed, y = a new duplicate, and ranks 0 and 1 each receive one
 * message from the other with MPI_ANY_SOURCE/MPI_ANY_TAG on y.  Every
 * receive prints what it got: the output (sorted) must equal plain MPI's.
 *   p2p_ring_cases [ROUNDS]   (2 ranks or more; the others only take part
 *                            in the collectives) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NRING 6
#define TAG 5

enum {
    CASE_GRANT,
    CASE_FENCE,
    CASE_START,
    CASE_PARTIAL,
    CASE_LARGE,
    CASE_SYNC,
    NCASES
};
static const char *case_name[NCASES] = {"grant",   "fence", "start",
                                        "partial", "large", "sync"};

#define SYNC_SLEEP_US 400000 /* rank 0 before each receive */

/* Synchronous sends complete only once the receive is there. */
static void sync_sends(MPI_Comm x, int rank, int round, int *buf)
{
    if (rank == 1) {
        MPI_Request q;
        int flag = 0;
        buf[0] = 100 * round + 60;
        double t = MPI_Wtime();
        MPI_Ssend(buf, 64, MPI_INT, 0, TAG, x);
        /* rank 0 sleeps SYNC_SLEEP_US from the barrier on: half of it is
         * far beyond any barrier skew, and no upper bound is assumed */
        printf("round %d sync: Ssend waited for the receive: %s\n", round,
               MPI_Wtime() - t > 0.5e-6 * SYNC_SLEEP_US ? "yes" : "no");
        buf[0] = 100 * round + 61;
        MPI_Issend(buf, 64, MPI_INT, 0, TAG, x, &q);
        t = MPI_Wtime();
        while (!flag && MPI_Wtime() - t < 0.25e-6 * SYNC_SLEEP_US)
            MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        printf("round %d sync: Issend pending before the receive: %s\n",
               round, flag ? "no" : "yes");
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else if (rank == 0) {
        int in[64];
        for (int i = 0; i < 2; i++) {
            usleep(SYNC_SLEEP_US);
            MPI_Recv(in, 64, MPI_INT, 1, TAG, x, MPI_STATUS_IGNORE);
            printf("round %d sync: message %d value %d\n", round, i, in[0]);
        }
    }
}

#define LARGE 4096 /* ints: more than the ring's largest slot */

/* A large message by MPI between ring messages: received in send order. */
static void large(MPI_Comm x, int rank, int round, int *buf)
{
    static int big[LARGE];
    if (rank == 1) {
        big[0] = 100 * round + 50;
#if MPI_VERSION >= 4
        MPI_Send_c(big, LARGE, MPI_INT, 0, TAG, x);
#else
        MPI_Send(big, LARGE, MPI_INT, 0, TAG, x);
#endif
        buf[0] = 100 * round + 51;
        MPI_Send(buf, 64, MPI_INT, 0, TAG, x);
    } else if (rank == 0) {
        usleep(200000); /* both are there before the first receive */
        for (int i = 0; i < 2; i++) {
            MPI_Recv(big, LARGE, MPI_INT, 1, MPI_ANY_TAG, x, MPI_STATUS_IGNORE);
            printf("round %d large: message %d value %d\n", round, i, big[0]);
        }
    }
}

/* 7 ints into 4 elements of 3: printed whole, with count and elements. */
static void partial(MPI_Comm x, int rank, int round, int *buf)
{
    if (rank == 1) {
        for (int i = 0; i < 7; i++)
            buf[i] = 100 * round + 10 + i;
        MPI_Send(buf, 7, MPI_INT, 0, TAG, x);
    } else if (rank == 0) {
        int in[12], count, elements;
        MPI_Datatype t3;
        MPI_Status st;
        MPI_Type_contiguous(3, MPI_INT, &t3);
        MPI_Type_commit(&t3);
        for (int i = 0; i < 12; i++)
            in[i] = -1 - i;
        MPI_Recv(in, 4, t3, 1, TAG, x, &st);
        MPI_Get_count(&st, t3, &count);
        MPI_Get_elements(&st, t3, &elements);
        printf("round %d partial: count %d elements %d:", round,
               count == MPI_UNDEFINED ? -1 : count, elements);
        for (int i = 0; i < 12; i++)
            printf(" %d", in[i]);
        printf("\n");
        MPI_Type_free(&t3);
    }
}

/* A few messages each way on MPI_COMM_WORLD: every call lets hotbuf look
 * at its handshake, so a grant asked for on x arrives meanwhile. */
static void chat(int rank)
{
    for (int i = 0; i < 8 && rank < 2; i++) {
        int out = i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, 1 - rank, 0, &in, 1, MPI_INT, 1 - rank,
                     0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* Calls that let hotbuf look at its handshake, with nothing to receive. */
static void look(void)
{
    int flag;
    for (int i = 0; i < 16; i++)
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag,
                   MPI_STATUS_IGNORE);
}

/* Rank 1 -> rank 0 on x.  Rank 0 prints what it got, then sleeps: it does
 * not look at x again before freeing it. */
static void traffic(MPI_Comm x, int rank, int kase, int round)
{
    static int buf[64]; /* one reused buffer: hot */
    MPI_Request q;
    if (rank == 1) {
        buf[0] = -1;
        MPI_Send(buf, 64, MPI_INT, 0, TAG, x);
    } else if (rank == 0) {
        MPI_Recv(buf, 64, MPI_INT, 1, TAG, x, MPI_STATUS_IGNORE);
    }
    if (kase != CASE_GRANT) {
        chat(rank);
        for (int i = 0; i < NRING; i++) {
            if (rank == 1) {
                buf[0] = 100 * round + i;
                MPI_Send(buf, 64, MPI_INT, 0, TAG, x);
            } else if (rank == 0) {
                MPI_Recv(buf, 64, MPI_INT, 1, MPI_ANY_TAG, x,
                         MPI_STATUS_IGNORE);
                printf("round %d %s: ring %d value %d\n", round,
                       case_name[kase], i, buf[0]);
            }
        }
    }
    if (kase == CASE_PARTIAL)
        partial(x, rank, round, buf);
    if (kase == CASE_LARGE)
        large(x, rank, round, buf);
    if (kase == CASE_SYNC) {
        MPI_Barrier(x);
        sync_sends(x, rank, round, buf);
    }
    if (rank == 1) {
        int v = 100 * round + 99;
        usleep(300000); /* rank 0 is asleep now */
        look();
        if (kase == CASE_FENCE || kase == CASE_START) {
            MPI_Send_init(&v, 1, MPI_INT, 0, TAG, x, &q);
            if (kase == CASE_START) {
                MPI_Start(&q);
                MPI_Wait(&q, MPI_STATUS_IGNORE);
            }
            MPI_Request_free(&q);
        }
    } else if (rank == 0) {
        int v = -1;
        if (kase == CASE_START) {
            MPI_Recv(&v, 1, MPI_INT, 1, MPI_ANY_TAG, x, MPI_STATUS_IGNORE);
            printf("round %d %s: persistent value %d\n", round,
                   case_name[kase], v);
        }
        usleep(900000);
    }
}

/* On the next communicator, a wildcard receive must get the other
 * rank's message, not something hotbuf left behind. */
static void next_comm(int rank, int kase, int round)
{
    MPI_Comm y;
    MPI_Status st;
    int out = 1000 * round + rank, in = -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &y);
    if (rank < 2) {
        MPI_Request q;
        MPI_Isend(&out, 1, MPI_INT, 1 - rank, TAG, y, &q);
        MPI_Recv(&in, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, y, &st);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        printf("round %d %s: rank %d got source %d tag %d value %d\n", round,
               case_name[kase], rank, st.MPI_SOURCE, st.MPI_TAG, in);
    }
    MPI_Comm_free(&y);
}

int main(int argc, char **argv)
{
    int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 4;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "p2p_ring_cases: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int round = 0; round < rounds; round++) {
        int kase = round % NCASES;
        MPI_Comm x;
        MPI_Comm_dup(MPI_COMM_WORLD, &x);
        traffic(x, rank, kase, round);
        MPI_Comm_free(&x);
        next_comm(rank, kase, round);
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
