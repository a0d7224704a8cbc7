/* A pair that was granted, revoked before it carried a record, and asked
 * for again when the receiver cannot make a channel: the sender's CLOSE
 * at its MPI_Comm_free must stay hotbuf's.
 *
 * Rank 1 (A) sends to rank 0 (B) on x, a duplicate of MPI_COMM_WORLD.
 * Run with HOTBUF_TEST_P2P_ASK=1 (A asks at its first send),
 * HOTBUF_P2P_IDLE=16 (B revokes a channel idle for 16 of its looks) and
 * HOTBUF_TEST_P2P_RX_FAIL=2 (B's second channel cannot be made):
 *   1. A sends; B grants (its first channel) and pulls x; A sees the GRANT
 *      (so it owes B a CLOSE when it frees x) but sends nothing by ring;
 *   2. both look at the handshake for a while: B revokes the idle
 *      channel, A answers, B frees it;
 *   3. A sends again and asks again; B cannot make a channel and refuses;
 *   4. B posts an MPI_ANY_SOURCE/MPI_ANY_TAG receive on x; A frees x (its
 *      CLOSE goes to B); then B sends itself a message on x, which the
 *      wildcard receive must get, as under plain MPI.
 * B used to forget the pair when it refused (it kept only pairs that had
 * carried messages), so A's CLOSE, a message of hotbuf's, went to the
 * application's wildcard receive.  Rank 0 prints what the receive got
 * and each rank its errors; the output must equal plain MPI's.
 *   p2p_regrant   (2 ranks) */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

#define TAG 5
#define LOOKS 120

/* Calls that make hotbuf look at its handshake (every send does, and a
 * send to itself on MPI_COMM_SELF carries nothing on the ring). */
static void look(int n)
{
    for (int i = 0; i < n; i++) {
        int out = i, in = -1;
        MPI_Request q;
        MPI_Isend(&out, 1, MPI_INT, 0, 0, MPI_COMM_SELF, &q);
        MPI_Recv(&in, 1, MPI_INT, 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        usleep(1000);
    }
}

int main(int argc, char **argv)
{
    int rank, size, v[4] = {0, 0, 0, 0}, errors = 0;
    MPI_Comm x;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "p2p_regrant: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &x);
    for (int round = 0; round < 2; round++) { /* 1 and 3 */
        if (rank == 1) {
            v[0] = 10 + round;
            MPI_Send(v, 4, MPI_INT, 0, TAG, x);
        } else {
            MPI_Recv(v, 4, MPI_INT, 1, TAG, x, MPI_STATUS_IGNORE);
            printf("message %d value %d\n", round, v[0]);
        }
        look(LOOKS); /* 2; after 3, the REQ answered */
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) { /* 4 */
        MPI_Request q;
        MPI_Status st;
        int got[4] = {-1, -1, -1, -1}, mine[4] = {42, 43, 44, 45}, count = -1;
        MPI_Irecv(got, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, x, &q);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD); /* A has freed x */
        usleep(200000);              /* its CLOSE is here */
        MPI_Send(mine, 4, MPI_INT, 0, TAG, x);
        MPI_Wait(&q, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        printf("wildcard: source %d tag %d count %d value %d\n", st.MPI_SOURCE,
               st.MPI_TAG, count, got[0]);
        errors += st.MPI_SOURCE != 0 || st.MPI_TAG != TAG || count != 4 ||
                  got[0] != 42;
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Comm_free(&x);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
        MPI_Comm_free(&x);
    printf("p2p_regrant rank %d: errors %d\n", rank, errors);
    MPI_Finalize();
    return 0;
}
