/* Migration's order (run with HOTBUF_P2P_PULL=after:3: the fourth
 * receive call on the communicator pulls it).
 *
 * Rank 1 has three receives from rank 0 pending in MPI: r1 (tag 0), rA
 * (tag 5, a large message whose rendezvous MPI has matched but not
 * finished) and r2 (ANY_TAG).  Rank 0's two small messages, tags 0 and 1,
 * reach rank 1's MPI while rank 1 makes no MPI call.  Then the pull:
 * waiting for rA inside migration runs MPI's progress, which matches the
 * small messages there.  r1 must get the tag-0 message and r2 the tag-1
 * one, as without hotbuf.  Migrating oldest first had r1 cancelled and r2
 * still in MPI at that moment: r2 took the tag-0 message and r1 waited for
 * ever (the watchdog says so).  Other ranks only take part in barriers
 * and probes. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BIG (4 << 20) /* ints: far beyond any eager limit */

static void watchdog(int sig)
{
    static const char m[] = "p2p_migrate: HANG (a receive took another's message)\n";
    (void)sig;
    if (write(2, m, sizeof(m) - 1) < 0)
        _exit(4);
    _exit(4);
}

int main(int argc, char **argv)
{
    int rank, flag, small[2] = {101, 102}, got[2] = {-1, -1};
    MPI_Request q[3], big_req;
    MPI_Status st[3];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *big = calloc(BIG, sizeof(int));
    signal(SIGALRM, watchdog);
    alarm(60);
    if (rank == 1) {
        MPI_Irecv(&got[0], 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(big, BIG, MPI_INT, 0, 5, MPI_COMM_WORLD, &q[1]);
        MPI_Irecv(&got[1], 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &q[2]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        big[BIG - 1] = 7;
        MPI_Isend(big, BIG, MPI_INT, 1, 5, MPI_COMM_WORLD, &big_req);
        usleep(200000); /* rank 1 matches the rendezvous meanwhile */
        MPI_Send(&small[0], 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Send(&small[1], 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        MPI_Wait(&big_req, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        usleep(100000);
        MPI_Test(&q[1], &flag, &st[1]); /* matches rA: not a receive call */
        usleep(300000);                 /* the small messages arrive */
        MPI_Iprobe(0, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE); /* 4th */
        MPI_Waitall(3, q, st);
        printf("r1 %d (tag %d), rA %d (tag %d), r2 %d (tag %d)\n", got[0],
               st[0].MPI_TAG, big[BIG - 1], st[1].MPI_TAG, got[1],
               st[2].MPI_TAG);
    }
    for (int i = 0; i < 4; i++) /* every rank pulls (the report check) */
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    free(big);
    MPI_Finalize();
    return 0;
}
