/* A hot buffer among cold traffic: the receiver's grant policy (issue 13
 * item 1, shim/p2p/p2p_policy.h).
 *
 *   p2p_cold_mix ITERS COLD
 *
 * Rank 0 sends to rank 1 on a duplicate of MPI_COMM_WORLD, ITERS times:
 * one 1 KiB message from the same buffer (it turns hot), then COLD
 * messages of 1 KiB from places in a large buffer that are never used
 * twice (cold).  Rank 1 receives them in order and checks every byte.
 * With COLD = 0 the hot traffic is alone on the communicator and a ring
 * pair pays; with many cold messages pull would cost the receiver more on
 * them than the hot buffer's copies save, and the grant is refused.
 * Rank 0 prints the errors and a digest of what rank 1 received. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "digest.h"

#define MSG 1024

static void fill(unsigned char *b, int it, int k)
{
    for (int i = 0; i < MSG; i++)
        b[i] = (unsigned char)(it * 7 + k * 13 + i);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    int cold = argc > 2 ? atoi(argv[2]) : 20, rank;
    long errors = 0;
    unsigned long h = DIGEST_INIT;
    MPI_Comm comm;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    unsigned char *hot = malloc(MSG), *in = malloc(MSG);
    unsigned char *fresh = malloc((size_t)iters * (size_t)cold * MSG + 1);
    for (int it = 0; rank < 2 && it < iters; it++) {
        for (int k = 0; k <= cold; k++) {
            unsigned char *out =
                k ? fresh + ((size_t)it * (size_t)cold + (size_t)(k - 1)) * MSG
                  : hot;
            if (rank == 0) {
                fill(out, it, k);
                MPI_Send(out, MSG, MPI_BYTE, 1, k, comm);
                continue;
            }
            MPI_Status st;
            int got = 0;
            unsigned char want[MSG];
            MPI_Recv(in, MSG, MPI_BYTE, 0, k, comm, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            fill(want, it, k);
            for (int i = 0; i < MSG; i++)
                errors += in[i] != want[i];
            errors += got != MSG || st.MPI_TAG != k;
            h = digest_more(h, in, MSG);
        }
    }
    long e = 0;
    unsigned long hx = 0, mine = rank == 1 ? h : 0;
    MPI_Reduce(&errors, &e, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &hx, 1, MPI_UNSIGNED_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("cold_mix %d cold: errors %ld digest %016lx\n", cold, e, hx);
    MPI_Comm_free(&comm);
    free(hot);
    free(in);
    free(fresh);
    MPI_Finalize();
    return 0;
}
