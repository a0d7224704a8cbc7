/* Buffers used once: every send and every Allgather names a buffer it
 * never names again (300 distinct 1 KiB send buffers, 20 distinct
 * Allgather receive buffers of 512 B per rank).  Nothing can become hot,
 * and the report's advice for both sites says so
 * (tests/check_report.py check_used_once). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

int main(int argc, char **argv)
{
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (rank + 1) % n, left = (rank + n - 1) % n;
    char *out = malloc(300 * 1024), *in = malloc(1024);
    unsigned long h = DIGEST_INIT;
    for (int i = 0; i < 300; i++) {
        MPI_Request r;
        memset(out + i * 1024, (rank + i) & 0xff, 1024);
        MPI_Irecv(in, 1024, MPI_BYTE, left, 1, MPI_COMM_WORLD, &r);
        MPI_Send(out + i * 1024, 1024, MPI_BYTE, right, 1, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        h = digest_more(h, in, 1024);
    }
    char mine[512], *all = malloc(20 * (size_t)n * 512);
    for (int i = 0; i < 20; i++) {
        memset(mine, (rank * 3 + i) & 0xff, sizeof(mine));
        MPI_Allgather(mine, 512, MPI_BYTE, all + (size_t)i * n * 512, 512,
                      MPI_BYTE, MPI_COMM_WORLD);
    }
    h = digest_more(h, all, 20 * (size_t)n * 512);
    unsigned long *all_h = malloc((size_t)n * sizeof(*all_h));
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, all_h, 1, MPI_UNSIGNED_LONG, 0,
               MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < n; r++) /* in rank order */
        printf("%s rank %d digest %lx\n", "used_once", r, all_h[r]);
    free(all_h);
    free(out);
    free(in);
    free(all);
    MPI_Finalize();
    return 0;
}
