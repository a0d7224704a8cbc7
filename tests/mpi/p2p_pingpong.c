/* A ping-pong and a halo exchange with reused buffers (issue 13's
 * acceptance: after the grant every hot message goes zero-copy).
 *
 *   p2p_pingpong ITERS
 *
 * ping-pong: ranks 0 and 1, blocking MPI_Send / MPI_Recv, 128 B .. 8 KiB,
 *            one send and one receive buffer per size, reused ITERS times.
 * halo:      every rank with its left and right neighbour on a ring:
 *            Irecv from both, MPI_Send to both, Waitall; one buffer pair
 *            per direction, reused ITERS times.
 * Each message's bytes depend on (sender, iteration, size); the receiver
 * checks them.  Rank 0 prints one line per pattern: errors and a digest
 * of everything every rank received, compared with and without hotbuf. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

static const int sizes[] = {128, 1024, 4096, 8192};
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

static void fill(unsigned char *b, int n, int src, int it, int size)
{
    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(src * 31 + it * 7 + size + i * 13);
}

static int check(const unsigned char *b, int n, int src, int it, int size)
{
    for (int i = 0; i < n; i++)
        if (b[i] != (unsigned char)(src * 31 + it * 7 + size + i * 13))
            return 1;
    return 0;
}

static void report(const char *what, long errors, unsigned long h)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long e = 0;
    unsigned long *all = malloc((size_t)size * sizeof(*all));
    MPI_Reduce(&errors, &e, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, all, 1, MPI_UNSIGNED_LONG, 0,
               MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s errors %ld digest %016lx\n", what, e,
               digest(all, (size_t)size * sizeof(*all)));
    free(all);
}

static void pingpong(int iters)
{
    int rank;
    long errors = 0;
    unsigned long h = DIGEST_INIT;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s], peer = 1 - rank;
        unsigned char *out = malloc((size_t)n), *in = malloc((size_t)n);
        for (int it = 0; rank < 2 && it < iters; it++) {
            MPI_Status st;
            int got = 0;
            fill(out, n, rank, it, n);
            if (rank == 0) {
                MPI_Send(out, n, MPI_BYTE, peer, s, MPI_COMM_WORLD);
                MPI_Recv(in, n, MPI_BYTE, peer, s, MPI_COMM_WORLD, &st);
            } else {
                MPI_Recv(in, n, MPI_BYTE, peer, s, MPI_COMM_WORLD, &st);
                MPI_Send(out, n, MPI_BYTE, peer, s, MPI_COMM_WORLD);
            }
            MPI_Get_count(&st, MPI_BYTE, &got);
            errors += got != n || st.MPI_SOURCE != peer || st.MPI_TAG != s ||
                      check(in, n, peer, it, n);
            h = digest_more(h, in, (size_t)n);
        }
        free(out);
        free(in);
    }
    report("pingpong", errors, h);
}

static void halo(int iters)
{
    int rank, size;
    long errors = 0;
    unsigned long h = DIGEST_INIT;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s];
        unsigned char *ol = malloc((size_t)n), *or_ = malloc((size_t)n);
        unsigned char *il = malloc((size_t)n), *ir = malloc((size_t)n);
        for (int it = 0; it < iters; it++) {
            MPI_Request q[2];
            MPI_Status st[2];
            MPI_Irecv(il, n, MPI_BYTE, left, 100 + s, MPI_COMM_WORLD, &q[0]);
            MPI_Irecv(ir, n, MPI_BYTE, right, 200 + s, MPI_COMM_WORLD, &q[1]);
            fill(or_, n, rank, it, n);
            fill(ol, n, rank, it + 1000, n);
            MPI_Send(or_, n, MPI_BYTE, right, 100 + s, MPI_COMM_WORLD);
            MPI_Send(ol, n, MPI_BYTE, left, 200 + s, MPI_COMM_WORLD);
            MPI_Waitall(2, q, st);
            errors += check(il, n, left, it, n) ||
                      check(ir, n, right, it + 1000, n);
            h = digest_more(h, il, (size_t)n);
            h = digest_more(h, ir, (size_t)n);
        }
        free(ol);
        free(or_);
        free(il);
        free(ir);
    }
    report("halo", errors, h);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size >= 2)
        pingpong(iters);
    if (size >= 3)
        halo(iters);
    MPI_Finalize();
    return 0;
}
