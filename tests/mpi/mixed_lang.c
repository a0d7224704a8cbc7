/* The C half of an MPMD job whose other half is Fortran (mixed_lang_f.f90
 * with `use mpi`, mixed_lang_f08.f90 with `use mpi_f08`): both run the
 * same collective sequence on MPI_COMM_WORLD, so each call meets its
 * Fortran twin on the other rank.
 *   -n 1 mixed_lang : -n 1 mixed_lang_f[08]      (exactly 2 ranks)
 * 1. MPI_Allgather: 64 B blocks (hotbuf's copy path), 64 KiB blocks (its
 *    zero-copy path), MPI_IN_PLACE; the same buffers every time.
 * 2. MPI_Win_create: fence epochs, Put then Get from reused buffers.
 * 3. The same window: lock/unlock epochs, Put then Get back.
 * 4. MPI_Win_allocate: fence epochs, Put then Get.
 * Data is MPI_INTEGER (the Fortran type, also valid in C) with a pattern
 * both languages compute; every rank counts wrong elements, and rank 0
 * prints every rank's counts and a checksum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 12
#define SMALL 16      /* 64 B */
#define LARGE 16384   /* 64 KiB */
#define WIN 256       /* 1 KiB */
#define NRES 10

static int rank, peer;
static int res[NRES]; /* as in the Fortran programs (index - 1) */

static int pat(int r, int it, int i) { return r * 1000000 + it * 20000 + i; }

static void fill(int *p, int n, int r, int it)
{
    for (int i = 0; i < n; i++)
        p[i] = pat(r, it, i);
}

static int wrong(const int *p, int n, int r, int it)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += p[i] != pat(r, it, i);
    return bad;
}

/* Reused (hot) buffers, on the heap: hotbuf cannot register a static
 * array that shares a page with the program's file-backed data (userfaultfd
 * does not watch such mappings), so it would leave it on MPI. */
static int *hot_buffer(int which)
{
    static int *b[4];
    if (!b[which])
        b[which] = malloc(WIN * sizeof(int));
    return b[which];
}

__attribute__((noinline)) static void allgathers(void)
{
    int *send = malloc(LARGE * sizeof(int)), *recv = malloc(2 * LARGE * sizeof(int));
    for (int it = 1; it <= ITERS; it++) {
        fill(send, SMALL, rank, it);
        MPI_Allgather(send, SMALL, MPI_INTEGER, recv, SMALL, MPI_INTEGER, MPI_COMM_WORLD);
        for (int r = 0; r < 2; r++)
            res[0] += wrong(recv + r * SMALL, SMALL, r, it);
        fill(send, LARGE, rank, it);
        MPI_Allgather(send, LARGE, MPI_INTEGER, recv, LARGE, MPI_INTEGER, MPI_COMM_WORLD);
        for (int r = 0; r < 2; r++)
            res[1] += wrong(recv + r * LARGE, LARGE, r, it);
        fill(recv + rank * SMALL, SMALL, rank, it + 50);
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, SMALL, MPI_INTEGER,
                      MPI_COMM_WORLD);
        for (int r = 0; r < 2; r++)
            res[2] += wrong(recv + r * SMALL, SMALL, r, it + 50);
    }
    long sum = 0;
    for (int i = 0; i < 2 * LARGE; i++)
        sum = (sum + (long)recv[i] * (i % 7 + 1)) % 1000003;
    res[8] = (int)sum;
    free(send);
    free(recv);
}

/* Put mine into the peer's window, then Get it back, in fence epochs. */
__attribute__((noinline)) static void fence_epochs(MPI_Win win, const int *mem, int first, int base)
{
    int *obuf = hot_buffer(0), *gbuf = hot_buffer(1);
    MPI_Win_fence(0, win);
    for (int it = 1; it <= ITERS; it++) {
        fill(obuf, WIN, rank, base + it);
        MPI_Put(obuf, WIN, MPI_INTEGER, peer, 0, WIN, MPI_INTEGER, win);
        MPI_Win_fence(0, win);
        res[first] += wrong(mem, WIN, peer, base + it);
        MPI_Get(gbuf, WIN, MPI_INTEGER, peer, 0, WIN, MPI_INTEGER, win);
        MPI_Win_fence(0, win);
        res[first + 1] += wrong(gbuf, WIN, rank, base + it);
    }
}

__attribute__((noinline)) static void lock_epochs(MPI_Win win)
{
    int *obuf = hot_buffer(2), *gbuf = hot_buffer(3);
    for (int it = 1; it <= ITERS; it++) {
        fill(obuf, WIN, rank, 100 + it);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
        MPI_Put(obuf, WIN, MPI_INTEGER, peer, 0, WIN, MPI_INTEGER, win);
        MPI_Win_unlock(peer, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
        MPI_Get(gbuf, WIN, MPI_INTEGER, peer, 0, WIN, MPI_INTEGER, win);
        MPI_Win_unlock(peer, win);
        res[5] += wrong(gbuf, WIN, rank, 100 + it);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

static void windows(void)
{
    int *mem = malloc(WIN * sizeof(int)), *amem;
    MPI_Win win;
    MPI_Win_create(mem, WIN * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    fence_epochs(win, mem, 3, 0);
    MPI_Win_fence(0, win);
    lock_epochs(win);
    MPI_Win_free(&win);
    free(mem);
    MPI_Win_allocate(WIN * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &amem,
                     &win);
    fence_epochs(win, amem, 6, 200);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    int size, all[2 * NRES];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "mixed_lang: run on exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = 1 - rank;
    res[9] = 0; /* language: 0 C, 1 Fortran (use mpi), 2 Fortran (mpi_f08) */
    allgathers();
    windows();
    MPI_Gather(res, NRES, MPI_INTEGER, all, NRES, MPI_INTEGER, 0, MPI_COMM_WORLD);
    static const char *lang[] = {"C", "Fortran mpi", "Fortran mpi_f08"};
    for (int r = 0; rank == 0 && r < 2; r++) {
        const int *v = all + r * NRES;
        printf("rank %d (%s): allgather 64B wrong %d, 64KiB wrong %d, in place wrong %d; "
               "win_create fence put wrong %d, get wrong %d, lock get wrong %d; "
               "win_allocate put wrong %d, get wrong %d; checksum %d\n",
               r, lang[v[9] % 3], v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
    }
    MPI_Finalize();
    return 0;
}
