/* Allgather and Iallgather over many sizes, in place and not, on
 * MPI_COMM_WORLD and on a split communicator, with a reused receive buffer
 * and with a fresh one.  Prints a digest per case; compared with and
 * without hotbuf. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"


static unsigned long run(MPI_Comm comm, int count, int inplace, int nonblocking, char *reused)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    char *mine = malloc(count + 1);
    char *all = reused ? reused : malloc((size_t)count * size + 1);
    for (int i = 0; i < count; i++)
        mine[i] = (char)(rank * 31 + i * 7 + count);
    const void *sbuf = mine;
    if (inplace) {
        memcpy(all + (size_t)rank * count, mine, count);
        sbuf = MPI_IN_PLACE;
    }
    if (nonblocking) {
        MPI_Request r;
        MPI_Iallgather(sbuf, count, MPI_CHAR, all, count, MPI_CHAR, comm, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Allgather(sbuf, count, MPI_CHAR, all, count, MPI_CHAR, comm);
    }
    unsigned long h = digest(all, (size_t)count * size);
    if (!reused)
        free(all);
    free(mine);
    return h;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    static const int counts[] = {1, 7, 128, 1000, 4096, 8192, 65536};
    char *reused = malloc(65536 * (size_t)size + 1);
    unsigned long h = 0;
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int variant = 0; variant < 8; variant++) {
            MPI_Comm comm = variant & 4 ? half : MPI_COMM_WORLD;
            for (int rep = 0; rep < 3; rep++)
                h = h * 31 + run(comm, counts[c], variant & 1, variant & 2, rep ? reused : NULL);
        }
    unsigned long all[64] = {0};
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, all, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < size && i < 64; i++)
            printf("rank %d allgather digest %016lx\n", i, all[i]);
    free(reused);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
