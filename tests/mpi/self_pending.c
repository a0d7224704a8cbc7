/* A receive the application has pending on MPI_COMM_SELF while it calls an
 * MPI_Allgather with non-contiguous datatypes (which hotbuf's RDMA
 * Allgather packs locally), then a message to itself that the pending
 * receive must get.  No message of hotbuf's may match it. */
#include <mpi.h>
#include <stdio.h>

#include "digest.h"

#define N 4096

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static double send[2 * N], recv[2 * N * 16];
    MPI_Datatype every_other;
    MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    for (int i = 0; i < 2 * N; i++)
        send[i] = rank * 1e6 + i;
    unsigned long h = DIGEST_INIT;
    int bad = 0;
    for (int round = 0; round < 8; round++) {
        int got[4] = {-1, -1, -1, -1}, val[4] = {round, rank, 42, -7};
        MPI_Request req;
        MPI_Status st;
        MPI_Irecv(got, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &req);
        MPI_Allgather(send, 1, every_other, recv, N, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Send(val, 4, MPI_INT, 0, 5, MPI_COMM_SELF);
        MPI_Wait(&req, &st);
        int count;
        MPI_Get_count(&st, MPI_INT, &count);
        bad += count != 4 || st.MPI_TAG != 5 || got[0] != round || got[1] != rank;
        h = digest_more(h, recv, sizeof(double) * N * size);
    }
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("self_pending: wrong self receives %d, allgather %016lx\n", all, h);
    MPI_Type_free(&every_other);
    MPI_Finalize();
    return 0;
}
