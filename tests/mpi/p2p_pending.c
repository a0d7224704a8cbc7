/* Many receives pending at once on a pulled communicator: every one of
 * them holds one of hotbuf's request handles (a pool of inactive MPI
 * requests), and all of them come back to the pool when they complete.
 *   p2p_pending [N] [ROUNDS]
 * Rank 1 posts N receives from rank 0 (each into its own slot) and only
 * then lets rank 0 send; each round ends in Waitall.  Rank 1 prints a
 * digest of what it got, compared with and without hotbuf.  (The pool
 * kept room for twice its first chunk only: with more than 96 handles out
 * at once, their return wrote past its array and corrupted the heap.) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "digest.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 300, rounds = argc > 2 ? atoi(argv[2]) : 5;
    int rank, errors = 0;
    unsigned long h = DIGEST_INIT;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *buf = malloc(sizeof(int) * (size_t)n);
    MPI_Request *q = malloc(sizeof(*q) * (size_t)n);
    MPI_Status *st = malloc(sizeof(*st) * (size_t)n);
    for (int r = 0; r < rounds; r++) {
        if (rank == 1)
            for (int i = 0; i < n; i++)
                MPI_Irecv(&buf[i], 1, MPI_INT, 0, i % 7, MPI_COMM_WORLD, &q[i]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            for (int i = 0; i < n; i++) {
                int v = r * 100000 + i;
                MPI_Send(&v, 1, MPI_INT, 1, i % 7, MPI_COMM_WORLD);
            }
        if (rank == 1) {
            MPI_Waitall(n, q, st);
            for (int i = 0; i < n; i++)
                errors += buf[i] != r * 100000 + i;
            h = digest_more(h, buf, sizeof(int) * (size_t)n);
            MPI_Send(&errors, 1, MPI_INT, 0, 99, MPI_COMM_WORLD);
        } else if (rank == 0) { /* rank 0 receives too: both pull */
            int e;
            MPI_Recv(&e, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 1)
        printf("pending %d x %d: errors %d digest %016lx\n", n, rounds, errors,
               h);
    free(buf);
    free(q);
    free(st);
    MPI_Finalize();
    return 0;
}
