/* Two call sites share one buffer: site A (first_sends) sends a 1 KiB
 * buffer 10 times, then site B (more_sends) sends the same buffer 290
 * times.  With HOTBUF_THRESHOLD=100 the buffer is hot from its 100th use,
 * all of them made at B: B's max reuse (300) and saving (201 hot calls)
 * belong to B, not to A, which first used the buffer
 * (tests/check_report.py check_shared_buffer). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

static unsigned long h = DIGEST_INIT;

__attribute__((noinline)) static void first_sends(char *out, char *in,
                                                  int right, int left)
{
    for (int i = 0; i < 10; i++) {
        MPI_Request r;
        memset(out, i & 0xff, 1024);
        MPI_Irecv(in, 1024, MPI_BYTE, left, 1, MPI_COMM_WORLD, &r);
        MPI_Send(out, 1024, MPI_BYTE, right, 1, MPI_COMM_WORLD); /* site A */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        h = digest_more(h, in, 1024);
    }
}

__attribute__((noinline)) static void more_sends(char *out, char *in,
                                                 int right, int left)
{
    for (int i = 0; i < 290; i++) {
        MPI_Request r;
        memset(out, (i * 7) & 0xff, 1024);
        MPI_Irecv(in, 1024, MPI_BYTE, left, 2, MPI_COMM_WORLD, &r);
        MPI_Send(out, 1024, MPI_BYTE, right, 2, MPI_COMM_WORLD); /* site B */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        h = digest_more(h, in, 1024);
    }
}

int main(int argc, char **argv)
{
    int rank, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char *out = malloc(1024), *in = malloc(1024);
    first_sends(out, in, (rank + 1) % n, (rank + n - 1) % n);
    more_sends(out, in, (rank + 1) % n, (rank + n - 1) % n);
    unsigned long *all_h = malloc((size_t)n * sizeof(*all_h));
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, all_h, 1, MPI_UNSIGNED_LONG, 0,
               MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < n; r++) /* in rank order */
        printf("%s rank %d digest %lx\n", "shared_buffer", r, all_h[r]);
    free(all_h);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
