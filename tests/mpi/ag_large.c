/* MPI_Allgather of blocks longer than the RDMA device's largest message
 * (rxe: 8 MiB, max_msg_sz): hotbuf must hand them to the MPI, since one
 * write that long fails, and a write failing in the middle of a
 * collective aborts the job (it did: a correct program killed).  Blocks
 * of BLOCK_OK (4 MiB, under the limit: hotbuf's RDMA) and BLOCK_BIG (12
 * MiB, over it), two calls each, compared bit for bit with
 * PMPI_Allgather in the same run.
 * Prints "ag_large: N ranks, C checks, M mismatches"; exits 1 on one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_OK (4l << 20)
#define BLOCK_BIG (12l << 20)

static int check(long block, int rank, int size, int salt)
{
    char *s = malloc(block), *got = malloc(block * size),
         *want = malloc(block * size);
    if (!s || !got || !want)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (long i = 0; i < block; i += 4096)
        memset(s + i, (rank * 7 + salt * 3 + (int)(i >> 12)) | 1,
               block - i < 4096 ? block - i : 4096);
    MPI_Allgather(s, (int)block, MPI_BYTE, got, (int)block, MPI_BYTE,
                  MPI_COMM_WORLD);
    PMPI_Allgather(s, (int)block, MPI_BYTE, want, (int)block, MPI_BYTE,
                   MPI_COMM_WORLD);
    int bad = memcmp(got, want, (size_t)(block * size)) != 0, any = 0;
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(s);
    free(got);
    free(want);
    return any;
}

int main(int argc, char **argv)
{
    int rank, size, checks = 0, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 0; k < 2; k++, checks += 2) {
        bad += check(BLOCK_OK, rank, size, k);
        bad += check(BLOCK_BIG, rank, size, k);
    }
    if (rank == 0)
        printf("ag_large: %d ranks, %d checks, %d mismatches\n", size, checks,
               bad);
    MPI_Finalize();
    return bad != 0;
}
