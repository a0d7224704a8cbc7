/* Progress inside MPI (issue 12's acceptance):
 *
 *   p2p_progress allreduce|barrier [ROUNDS] [SECONDS]
 *
 * Even ranks post their receives (Irecv) and then sit in MPI_Allreduce (or
 * MPI_Barrier) without touching them; the odd rank next to each sends an
 * MPI_Ssend and a rendezvous-size (4 MiB) MPI_Send to it and only then
 * joins the collective.  With plain MPI both sends complete: MPI matches
 * them against the posted receives while the receiver waits in the
 * collective.  When hotbuf owns matching (HOTBUF_P2P_PULL=all), the
 * receives are hotbuf's, and only hotbuf's progress running inside MPI's
 * collective can claim the messages: without it the senders never finish,
 * the collective never completes, and the watchdog (SECONDS, default 60)
 * reports the hang and fails. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"

#define BIG (4 << 20) /* bytes: rendezvous on every transport */
#define SMALL 64      /* ints */

static volatile sig_atomic_t stage; /* where this rank is, for the watchdog */
static int my_rank;

static void watchdog(int sig)
{
    (void)sig;
    static const char *where[] = {
        "starting",        "posting receives",     "in the collective",
        "sending (Ssend)", "sending (4 MiB Send)", "completing",
        "finishing"};
    char line[160];
    int n =
        snprintf(line, sizeof(line), "p2p_progress: HANG: rank %d still %s\n",
                 my_rank, where[stage]);
    if (write(2, line, (size_t)n) < 0)
        _exit(4);
    _exit(4);
}

static void fill(int *v, int n, int round, int who)
{
    for (int i = 0; i < n; i++)
        v[i] = round * 1000003 + who * 7919 + i;
}

/* One round: returns the digest of what this rank received (receivers). */
static unsigned long round_trip(int round, int collective, int *big, int *small)
{
    int rank = my_rank, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1, receiver = rank % 2 == 0, paired = peer < size;
    int nbig = BIG / (int)sizeof(int), one = 1, sum = 0;
    unsigned long h = 0;
    MPI_Request r[2];
    if (receiver && paired) {
        stage = 1;
        memset(big, 0, BIG), memset(small, 0, SMALL * sizeof(int));
        MPI_Irecv(small, SMALL, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(big, nbig, MPI_INT, peer, 2, MPI_COMM_WORLD, &r[1]);
    }
    if (!receiver && paired) {
        fill(small, SMALL, round, rank), fill(big, nbig, round, rank + 100);
        stage = 3;
        MPI_Ssend(small, SMALL, MPI_INT, peer, 1, MPI_COMM_WORLD);
        stage = 4;
        MPI_Send(big, nbig, MPI_INT, peer, 2, MPI_COMM_WORLD);
    }
    /* The receivers are here before the senders even start. */
    stage = 2;
    if (collective)
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Barrier(MPI_COMM_WORLD);
    if (receiver && paired) {
        stage = 5;
        MPI_Status st[2];
        MPI_Waitall(2, r, st);
        int c0, c1;
        MPI_Get_count(&st[0], MPI_INT, &c0);
        MPI_Get_count(&st[1], MPI_INT, &c1);
        int rec[4] = {st[0].MPI_SOURCE, st[0].MPI_TAG, c0, c1};
        h = digest_more(digest(rec, sizeof(rec)), small, SMALL * sizeof(int));
        h = digest_more(h, big, BIG);
    }
    if (collective && sum != size)
        h ^= 1; /* a wrong sum shows in the digest */
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    int collective = argc > 1 && strcmp(argv[1], "allreduce") == 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 3,
        secs = argc > 3 ? atoi(argv[3]) : 60;
    if (argc < 2 || (!collective && strcmp(argv[1], "barrier") != 0)) {
        if (my_rank == 0)
            fprintf(
                stderr,
                "usage: p2p_progress allreduce|barrier [ROUNDS] [SECONDS]\n");
        MPI_Finalize();
        return 2;
    }
    signal(SIGALRM, watchdog);
    alarm((unsigned)secs);
    int *big = malloc(BIG), *small = malloc(SMALL * sizeof(int));
    unsigned long h = DIGEST_INIT;
    for (int i = 0; i < rounds; i++) {
        unsigned long d = round_trip(i, collective, big, small);
        h = digest_more(h, &d, sizeof(d));
    }
    stage = 6;
    unsigned long all = 0;
    MPI_Reduce(&h, &all, 1, MPI_UNSIGNED_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (my_rank == 0)
        printf("p2p_progress %s: %d rounds, digest %016lx\n", argv[1], rounds,
               all);
    alarm(0);
    free(big), free(small);
    MPI_Finalize();
    return 0;
}
