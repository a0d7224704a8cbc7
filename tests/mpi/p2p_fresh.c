/* Rendezvous-size sends from memory that is mapped anew between sends.
 *
 * Rank 0 sends rank 1 messages of BYTES bytes (above the ring's slots:
 * a rendezvous once the buffer is worth registering), in six phases:
 *   0 warm  small messages from one buffer, so that the pair is live;
 *   1 kept  from one buffer K, mapped once: every send after the first
 *           may go by rendezvous (one registration);
 *   2 fresh from new pages at one address F each time (mmap MAP_FIXED
 *           over the last ones, as munmap + mmap gives the same address):
 *           the reuse table sees one buffer reused, but each send finds
 *           its registration gone.  hotbuf registered anew for every one
 *           (4-8 times slower than MPI's copy at 16 KiB); now such sends
 *           go by MPI after the second, with a retry after 16, 64,
 *           256 ... (regcache/regcache_churn.h);
 *   3 again K, mapped anew once and then kept: by rendezvous again after
 *           16 sends;
 *   4 rx    from K, by rendezvous, into new pages at F each time: the
 *           receiver reads most of them through a bounce buffer of its
 *           own (a copy, where each read registered F anew);
 *   5 small 4 KiB (a slot's size: hot, so zero-copy) from new pages at F
 *           each time: copied into the slot, not registered each time;
 *   6 large (its own run, argument "large", after phase 0) 9 MiB from
 *           one buffer into one buffer: longer than rxe's largest message
 *           (8 MiB), which one RDMA read cannot carry; such a read failed,
 *           and with it the pair: by MPI now, the pair kept.
 * Receives go to new pages each time in phases 2 and 4, to one buffer in
 * the others.  Rank 1 checks every byte and prints, per phase, a digest and
 * the errors: the output must equal plain MPI's (a registration that
 * outlived its pages would send old data).  The test runner checks in
 * hotbuf's report how many sends went by rendezvous and how many went to
 * MPI for their churn.
 *   p2p_fresh [N (64)] [large]   (2 ranks or more; the others only take
 *                                part in the barriers) */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "digest.h"

#define BYTES (32 * 1024)
#define WARM_BYTES 1024
#define SMALL_BYTES 4096
#define LARGE_BYTES (9u << 20)
#define KEPT 32

static char pattern(int phase, int i, size_t j)
{
    return (char)(phase * 131 + i * 7 + (int)(j * 13));
}

/* New pages at addr (or anywhere when addr is NULL), replacing what was
 * mapped there. */
static char *pages(void *addr, size_t len)
{
    char *p = mmap(addr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (addr ? MAP_FIXED : 0), -1, 0);
    if (p == MAP_FAILED) {
        perror("p2p_fresh: mmap");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

struct tally {
    unsigned long h;
    long errors;
};

static void sender(int phase, int i, char *buf, size_t len)
{
    for (size_t j = 0; j < len; j++)
        buf[j] = pattern(phase, i, j);
    MPI_Send(buf, (int)len, MPI_BYTE, 1, phase, MPI_COMM_WORLD);
}

static void receiver(int phase, int i, char *buf, size_t len, struct tally *t)
{
    memset(buf, 0, len);
    MPI_Recv(buf, (int)len, MPI_BYTE, 0, phase, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    for (size_t j = 0; j < len; j++)
        t->errors += buf[j] != pattern(phase, i, j);
    t->h = digest_more(t->h, buf, len);
}

/* One phase: n messages of len bytes from tx into rx; fresh (a bit per
 * rank): new pages at the same address for each message. */
static void phase(int rank, int ph, int n, char *tx, char *rx, size_t len,
                  int fresh)
{
    struct tally t = {DIGEST_INIT, 0};
    char *buf = rank == 0 ? tx : rx;
    for (int i = 0; i < n && rank < 2; i++) {
        if (fresh & (1 << rank))
            pages(buf, len);
        if (rank == 0)
            sender(ph, i, buf, len);
        else
            receiver(ph, i, buf, len, &t);
    }
    if (rank == 1)
        printf("phase %d: %d messages of %zu B, digest %016lx, errors %ld\n",
               ph, n, len, t.h, t.errors);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rank, size, n = argc > 1 ? atoi(argv[1]) : 64;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || n < 1) {
        if (rank == 0)
            fprintf(stderr, "p2p_fresh: 2 ranks or more, N >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc > 2 && !strcmp(argv[2], "large")) {
        char *big = pages(NULL, LARGE_BYTES);
        phase(rank, 0, 40, big, big, WARM_BYTES, 0);
        phase(rank, 6, 3, big, big, LARGE_BYTES, 0);
        munmap(big, LARGE_BYTES);
        MPI_Finalize();
        return 0;
    }
    char *kept = pages(NULL, BYTES), *fresh = pages(NULL, BYTES);
    phase(rank, 0, 40, kept, kept, WARM_BYTES, 0);
    phase(rank, 1, KEPT, kept, kept, BYTES, 0);
    phase(rank, 2, n, fresh, fresh, BYTES, 3);
    pages(kept, BYTES);
    phase(rank, 3, KEPT, kept, kept, BYTES, 0);
    phase(rank, 4, n, kept, fresh, BYTES, 2);
    phase(rank, 5, n, fresh, kept, SMALL_BYTES, 1);
    munmap(kept, BYTES);
    munmap(fresh, BYTES);
    MPI_Finalize();
    return 0;
}
