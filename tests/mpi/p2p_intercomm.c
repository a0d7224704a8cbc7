/* MPI_Intercomm_create on a peer communicator hotbuf is pulling.  The
 * leaders exchange their groups by point-to-point on peer_comm with the
 * application's tag, inside MPI (Open MPI and MPICH alike): a message
 * hotbuf claimed there with Improbe(ANY_SOURCE, ANY_TAG) never reaches
 * MPI's internal receive, and the creation hangs.  Here the remote leader
 * (rank 1) is busy in MPI calls that run hotbuf's progress while rank 0's
 * leader message arrives, then creates its side.  Prints what each rank
 * sees of the new intercommunicator and a message through it. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, flag, v = -1, rsize = 0, lrank;
    MPI_Comm local, inter;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int color = rank % 2;
    /* One receive on MPI_COMM_WORLD: it is pulled from here on. */
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 1, &v, 1, MPI_INT,
                 (rank + size - 1) % size, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    if (rank == 1) { /* rank 0's leader message arrives meanwhile */
        double t = MPI_Wtime();
        while (MPI_Wtime() - t < 0.5)
            MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag,
                       MPI_STATUS_IGNORE);
    }
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 777, &inter);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &lrank);
    int got[2] = {-1, -1};
    if (lrank == 0) { /* the leaders exchange one value through it */
        int out = rank * 10;
        MPI_Sendrecv(&out, 1, MPI_INT, 0, 5, &got[0], 1, MPI_INT, 0, 5, inter,
                     MPI_STATUS_IGNORE);
        got[1] = rsize;
        if (rank == 1)
            MPI_Send(got, 2, MPI_INT, 0, 6, MPI_COMM_WORLD);
        else
            printf("group 0: remote size %d, leader got %d\n", rsize, got[0]);
    }
    if (rank == 0) {
        MPI_Recv(got, 2, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("group 1: remote size %d, leader got %d\n", got[1], got[0]);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
