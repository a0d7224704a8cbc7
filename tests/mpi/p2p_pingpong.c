/* A ping-pong and a halo exchange with reused buffers (issue 13's
 * acceptance: after the grant every hot message goes zero-copy).
 *
 *   p2p_pingpong ITERS
 *
 * ping-pong: ranks 0 and 1, blocking MPI_Send / MPI_Recv, 128 B .. 8 KiB,
 *            one send and one receive buffer per size, reused ITERS times.
 * halo:      every rank with its left and right neighbour on a ring:
 *            Irecv from both, MPI_Send to both, Waitall; one buffer pair
 *            per direction, reused ITERS times (3 ranks and more).
 * halo_isend, halo_persistent, halo_sendrecv, halo_ssend, halo_isendrecv:
 *            the same exchange by Isend + Irecv + Waitall of all four; by
 *            Send_init/Recv_init made once per size, then Startall +
 *            Waitall; by two Sendrecv; by Irecv + Ssend; by two Isendrecv
 *            + Waitall (MPI-4: MPICH here) (2 ranks and more).
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

enum halo_style {
    HALO_SEND,
    HALO_ISEND,
    HALO_PERSISTENT,
    HALO_SENDRECV,
    HALO_SSEND,
    HALO_ISENDRECV /* MPI-4 (MPICH here) */
};
static const char *const halo_name[] = {
    "halo", "halo_isend", "halo_persistent", "halo_sendrecv", "halo_ssend",
    "halo_isendrecv"};
#if MPI_VERSION >= 4
#define HALO_LAST HALO_ISENDRECV
#else
#define HALO_LAST HALO_SSEND
#endif

struct halo {
    int left, right, n, tl, tr;  /* tl: tag of what goes left */
    unsigned char *ol, *or_;     /* out to the left and right */
    unsigned char *il, *ir;      /* in from the left and right */
    MPI_Request q[4];            /* persistent: made once per size */
};

/* One exchange: il from the left's or_, ir from the right's ol. */
static void halo_step(struct halo *x, int style)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request *q = x->q;
    MPI_Status st[4]; /* not STATUSES_IGNORE: gcc 12 warns on Open MPI's */
    int n = x->n;
    switch (style) {
    case HALO_SEND:
        MPI_Irecv(x->il, n, MPI_BYTE, x->left, x->tr, w, &q[0]);
        MPI_Irecv(x->ir, n, MPI_BYTE, x->right, x->tl, w, &q[1]);
        MPI_Send(x->or_, n, MPI_BYTE, x->right, x->tr, w);
        MPI_Send(x->ol, n, MPI_BYTE, x->left, x->tl, w);
        MPI_Waitall(2, q, st);
        break;
    case HALO_SSEND: /* the receives are posted first: no deadlock */
        MPI_Irecv(x->il, n, MPI_BYTE, x->left, x->tr, w, &q[0]);
        MPI_Irecv(x->ir, n, MPI_BYTE, x->right, x->tl, w, &q[1]);
        MPI_Ssend(x->or_, n, MPI_BYTE, x->right, x->tr, w);
        MPI_Ssend(x->ol, n, MPI_BYTE, x->left, x->tl, w);
        MPI_Waitall(2, q, st);
        break;
    case HALO_ISEND:
        MPI_Irecv(x->il, n, MPI_BYTE, x->left, x->tr, w, &q[0]);
        MPI_Irecv(x->ir, n, MPI_BYTE, x->right, x->tl, w, &q[1]);
        MPI_Isend(x->or_, n, MPI_BYTE, x->right, x->tr, w, &q[2]);
        MPI_Isend(x->ol, n, MPI_BYTE, x->left, x->tl, w, &q[3]);
        MPI_Waitall(4, q, st);
        break;
    case HALO_PERSISTENT:
        MPI_Startall(4, q);
        MPI_Waitall(4, q, st);
        break;
    case HALO_SENDRECV:
        MPI_Sendrecv(x->or_, n, MPI_BYTE, x->right, x->tr, x->il, n, MPI_BYTE,
                     x->left, x->tr, w, MPI_STATUS_IGNORE);
        MPI_Sendrecv(x->ol, n, MPI_BYTE, x->left, x->tl, x->ir, n, MPI_BYTE,
                     x->right, x->tl, w, MPI_STATUS_IGNORE);
        break;
#if MPI_VERSION >= 4
    case HALO_ISENDRECV:
        MPI_Isendrecv(x->or_, n, MPI_BYTE, x->right, x->tr, x->il, n,
                      MPI_BYTE, x->left, x->tr, w, &q[0]);
        MPI_Isendrecv(x->ol, n, MPI_BYTE, x->left, x->tl, x->ir, n, MPI_BYTE,
                      x->right, x->tl, w, &q[1]);
        MPI_Waitall(2, q, st);
        break;
#endif
    }
}

static void halo(int iters, int style)
{
    int rank, size;
    long errors = 0;
    unsigned long h = DIGEST_INIT;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct halo x = {(rank + size - 1) % size, (rank + 1) % size};
    for (int s = 0; s < NSIZES; s++) {
        int n = x.n = sizes[s];
        x.tl = 200 + s, x.tr = 100 + s;
        x.ol = malloc((size_t)n), x.or_ = malloc((size_t)n);
        x.il = malloc((size_t)n), x.ir = malloc((size_t)n);
        if (style == HALO_PERSISTENT) {
            MPI_Recv_init(x.il, n, MPI_BYTE, x.left, x.tr, MPI_COMM_WORLD,
                          &x.q[0]);
            MPI_Recv_init(x.ir, n, MPI_BYTE, x.right, x.tl, MPI_COMM_WORLD,
                          &x.q[1]);
            MPI_Send_init(x.or_, n, MPI_BYTE, x.right, x.tr, MPI_COMM_WORLD,
                          &x.q[2]);
            MPI_Send_init(x.ol, n, MPI_BYTE, x.left, x.tl, MPI_COMM_WORLD,
                          &x.q[3]);
        }
        for (int it = 0; it < iters; it++) {
            fill(x.or_, n, rank, it, n);
            fill(x.ol, n, rank, it + 1000, n);
            halo_step(&x, style);
            errors += check(x.il, n, x.left, it, n) ||
                      check(x.ir, n, x.right, it + 1000, n);
            h = digest_more(h, x.il, (size_t)n);
            h = digest_more(h, x.ir, (size_t)n);
        }
        if (style == HALO_PERSISTENT)
            for (int i = 0; i < 4; i++)
                MPI_Request_free(&x.q[i]);
        free(x.ol);
        free(x.or_);
        free(x.il);
        free(x.ir);
    }
    report(halo_name[style], errors, h);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size >= 2)
        pingpong(iters);
    if (size >= 3)
        halo(iters, HALO_SEND);
    for (int style = HALO_ISEND; size >= 2 && style <= HALO_LAST; style++)
        halo(iters, style);
    MPI_Finalize();
    return 0;
}
