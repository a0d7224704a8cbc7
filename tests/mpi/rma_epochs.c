/* One-sided traffic that hotbuf reroutes, one function per synchronization
 * pattern so that each has its own call sites in the report:
 *   fence_pattern     Put and Get between fences (some opening fences assert
 *                     MPI_MODE_NOPRECEDE), hot and cold origin buffers mixed
 *   pscw_pattern      post/start/complete/wait with Put and Get
 *   lock_pattern      exclusive and shared locks, Put then Get back
 *   lockall_pattern   lock_all with flush, flush_all, flush_local, Rput/Rget
 *   spectrum_pattern  the buffer-reuse paper's spectrum: buffer i used i times
 *   large_window      a Put over rxe's largest message (8 MiB) on a window of
 *                     its own, then small Puts to the same target on the
 *                     first window: the large one stays on MPI, and the
 *                     target must stay reachable for the small ones and
 *                     for an MPI_Allgather (which hotbuf runs on RDMA)
 *   created_window    a window from MPI_Win_create on malloc'ed memory, with
 *                     a Put to self (which stays on MPI)
 *   shared_window, dynamic_window   windows hotbuf leaves to MPI
 * fence_pattern also puts a vector datatype (stays on MPI).
 * Sizes 128 B .. 8 KiB.  Every target checks what it received; prints one
 * digest line per pattern (compared with and without hotbuf) and a last
 * line with the number of wrong elements, which must be 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

#define WIN_DOUBLES 4096 /* 32 KiB window */
#define ITERS 24

static int rank, size, left, right;
static long wrong;

static double value(int origin, int it, int i) { return origin * 1000.0 + it + i * 0.25; }

static void fill(double *p, int n, int origin, int it)
{
    for (int i = 0; i < n; i++)
        p[i] = value(origin, it, i);
}

static const char *pattern = "";

static void expect(const double *p, int n, int origin, int it)
{
    for (int i = 0; i < n; i++)
        if (p[i] != value(origin, it, i) && wrong++ < 8)
            fprintf(stderr, "rank %d %s: element %d is %g, not %g (from rank %d, iteration %d)\n",
                    rank, pattern, i, p[i], value(origin, it, i), origin, it);
}

static void print(const char *name, unsigned long h)
{
    unsigned long all = 0;
    MPI_Reduce(&h, &all, 1, MPI_UNSIGNED_LONG, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %016lx\n", name, all);
}

/* n doubles: 16 (128 B) .. 1024 (8 KiB), by iteration */
static int count_of(int it) { return 16 << (it % 7); }

__attribute__((noinline)) static void fence_pattern(MPI_Win win, double *mem)
{
    pattern = "fence";
    double *hot = malloc(1024 * sizeof(double)), *got = malloc(1024 * sizeof(double));
    unsigned long h = 0;
    MPI_Datatype every_other; /* non-contiguous: stays on MPI */
    MPI_Type_vector(64, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    for (int it = 0; it < ITERS; it++) {
        int n = count_of(it % 2 ? 6 : it), assert_open = it % 3 == 0 ? MPI_MODE_NOPRECEDE : 0;
        double *cold = malloc(n * sizeof(double));
        fill(hot, n, rank, it);
        fill(cold, n, rank, it + 100);
        MPI_Win_fence(assert_open, win);
        MPI_Put(hot, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, win);
        MPI_Put(cold, n, MPI_DOUBLE, right, 1024, n, MPI_DOUBLE, win);
        MPI_Put(hot, 1, every_other, right, 3840, 64, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        expect(mem, n, left, it);
        for (int i = 0; i < 64 && n >= 128; i++)
            if (mem[3840 + i] != value(left, it, 2 * i) && wrong++ < 8)
                fprintf(stderr, "rank %d vector: element %d wrong\n", rank, i);
        expect(mem + 1024, n, left, it + 100);
        h ^= digest(mem, n * sizeof(double)) + it;
        MPI_Get(got, n, MPI_DOUBLE, left, 1024, n, MPI_DOUBLE, win);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        /* left's window slot 1024 holds what left's left put there */
        expect(got, n, (left + size - 1) % size, it + 100);
        free(cold);
    }
    print("fence", h);
    MPI_Type_free(&every_other);
    free(hot);
    free(got);
}

__attribute__((noinline)) static void pscw_pattern(MPI_Win win, double *mem)
{
    pattern = "pscw";
    MPI_Group world, peers;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranks[2] = {left, right};
    MPI_Group_incl(world, left == right ? 1 : 2, ranks, &peers);
    double *hot = malloc(1024 * sizeof(double)), *got = malloc(1024 * sizeof(double));
    unsigned long h = 0;
    for (int it = 0; it < ITERS; it++) {
        int n = count_of(it);
        fill(hot, n, rank, it + 200);
        MPI_Win_post(peers, 0, win);
        MPI_Win_start(peers, 0, win);
        MPI_Put(hot, n, MPI_DOUBLE, right, 2048, n, MPI_DOUBLE, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        expect(mem + 2048, n, left, it + 200);
        h ^= digest(mem + 2048, n * sizeof(double)) * (it + 1);
        MPI_Win_post(peers, 0, win);
        MPI_Win_start(peers, 0, win);
        MPI_Get(got, n, MPI_DOUBLE, left, 2048, n, MPI_DOUBLE, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        expect(got, n, (left + size - 1) % size, it + 200);
    }
    print("pscw", h);
    MPI_Group_free(&peers);
    MPI_Group_free(&world);
    free(hot);
    free(got);
}

/* Each origin owns one 1 KiB slot of its right neighbour's window: the
 * lock epochs of different origins never touch the same bytes. */
__attribute__((noinline)) static void lock_pattern(MPI_Win win, double *mem)
{
    pattern = "lock";
    double hot[128], got[128];
    unsigned long h = 0;
    for (int it = 0; it < ITERS; it++) {
        fill(hot, 128, rank, it + 300);
        int type = it % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE;
        MPI_Win_lock(type, right, 0, win);
        MPI_Put(hot, 128, MPI_DOUBLE, right, 3072, 128, MPI_DOUBLE, win);
        MPI_Win_unlock(right, win);
        MPI_Win_lock(type, right, 0, win);
        MPI_Get(got, 128, MPI_DOUBLE, right, 3072, 128, MPI_DOUBLE, win);
        MPI_Win_unlock(right, win);
        expect(got, 128, rank, it + 300);
        h ^= digest(got, sizeof(got)) + it;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect(mem + 3072, 128, left, ITERS - 1 + 300);
    print("lock", h);
}

__attribute__((noinline)) static void lockall_pattern(MPI_Win win, double *mem)
{
    pattern = "lockall";
    double *hot = malloc(512 * sizeof(double)), *got = malloc(512 * sizeof(double));
    unsigned long h = 0;
    MPI_Win_lock_all(0, win);
    for (int it = 0; it < ITERS; it++) {
        MPI_Request req;
        fill(hot, 256, rank, it + 400);
        MPI_Put(hot, 256, MPI_DOUBLE, right, 3200, 256, MPI_DOUBLE, win);
        if (it % 3 == 0)
            MPI_Win_flush(right, win);
        else if (it % 3 == 1)
            MPI_Win_flush_all(win);
        else {
            MPI_Win_flush_local(right, win);
            MPI_Win_flush(right, win);
        }
        MPI_Rget(got, 256, MPI_DOUBLE, right, 3200, 256, MPI_DOUBLE, win, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect(got, 256, rank, it + 400);
        fill(hot + 256, 256, rank, it + 500);
        MPI_Rput(hot + 256, 256, MPI_DOUBLE, right, 3456, 256, MPI_DOUBLE, win, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Win_flush_local_all(win);
        MPI_Win_flush_all(win);
        h ^= digest(got, 256 * sizeof(double)) + it;
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    expect(mem + 3456, 256, left, ITERS - 1 + 500);
    print("lock_all", h);
    free(hot);
    free(got);
}

/* Buffer i (i = 1..32, 1 KiB each) is put i times. */
__attribute__((noinline)) static void spectrum_pattern(MPI_Win win, double *mem)
{
    pattern = "spectrum";
    enum { K = 32, N = 128 };
    double *buf = malloc(K * N * sizeof(double));
    unsigned long h = 0;
    for (int i = 1; i <= K; i++)
        for (int use = 0; use < i; use++) {
            double *b = buf + (i - 1) * N;
            fill(b, N, rank, i * 100 + use);
            MPI_Win_fence(0, win);
            MPI_Put(b, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, win);
            MPI_Win_fence(0, win);
            expect(mem, N, left, i * 100 + use);
            h = digest_more(h, mem, N * sizeof(double));
        }
    print("spectrum", h);
    free(buf);
}

#define LARGE_DOUBLES (9 << 17) /* 9 MiB */

__attribute__((noinline)) static void large_window(MPI_Win win, double *mem)
{
    pattern = "large";
    double *big, *hot = malloc(LARGE_DOUBLES * sizeof(double));
    unsigned long h = 0;
    int *ranks = malloc(size * sizeof(int));
    MPI_Win bwin;
    MPI_Allgather(&rank, 1, MPI_INT, ranks, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Win_allocate(LARGE_DOUBLES * sizeof(double), sizeof(double), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &big, &bwin);
    for (int it = 0; it < ITERS / 3; it++) {
        fill(hot, LARGE_DOUBLES, rank, it + 900);
        MPI_Win_fence(0, bwin);
        MPI_Put(hot, LARGE_DOUBLES, MPI_DOUBLE, right, 0, LARGE_DOUBLES, MPI_DOUBLE, bwin);
        MPI_Win_fence(0, bwin);
        expect(big, LARGE_DOUBLES, left, it + 900);
        h ^= digest(big, LARGE_DOUBLES * sizeof(double)) + it;
        MPI_Win_fence(0, win);
        MPI_Put(hot, 1024, MPI_DOUBLE, right, 0, 1024, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        expect(mem, 1024, left, it + 900);
        h ^= digest(mem, 1024 * sizeof(double)) * 5 + it;
    }
    for (int i = 0; i < size; i++)
        ranks[i] = -1;
    MPI_Allgather(&rank, 1, MPI_INT, ranks, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        if (ranks[i] != i && wrong++ < 8)
            fprintf(stderr, "rank %d large: Allgather gave %d for rank %d\n", rank, ranks[i], i);
    print("large_window", h);
    MPI_Win_free(&bwin);
    free(ranks);
    free(hot);
}

/* A window from MPI_Win_create on malloc'ed memory; a Put to self. */
__attribute__((noinline)) static void created_window(void)
{
    pattern = "created";
    double *hot = malloc(512 * sizeof(double)), *mem = calloc(512, sizeof(double));
    unsigned long h = 0;
    MPI_Win win;
    MPI_Win_create(mem, 512 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int it = 0; it < ITERS; it++) {
        fill(hot, 512, rank, it + 600);
        MPI_Win_fence(0, win);
        MPI_Put(hot, 256, MPI_DOUBLE, right, 0, 256, MPI_DOUBLE, win);
        MPI_Put(hot + 256, 128, MPI_DOUBLE, rank, 384, 128, MPI_DOUBLE, win); /* self */
        MPI_Win_fence(0, win);
        expect(mem, 256, left, it + 600);
        for (int i = 0; i < 128; i++)
            if (mem[384 + i] != value(rank, it + 600, 256 + i) && wrong++ < 8)
                fprintf(stderr, "rank %d self: element %d wrong\n", rank, i);
        h ^= digest(mem, 512 * sizeof(double)) + it;
    }
    print("created_window", h);
    MPI_Win_free(&win);
    free(mem);
    free(hot);
}

/* Shared-memory and dynamic windows stay on MPI. */
__attribute__((noinline)) static void shared_window(void)
{
    pattern = "shared";
    double *hot = malloc(256 * sizeof(double)), *smem;
    unsigned long h = 0;
    MPI_Comm node;
    MPI_Win win;
    int nrank, nsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    MPI_Win_allocate_shared(256 * sizeof(double), sizeof(double), MPI_INFO_NULL, node, &smem,
                            &win);
    for (int it = 0; it < ITERS; it++) {
        fill(hot, 256, rank, it + 700);
        MPI_Win_fence(0, win);
        MPI_Put(hot, 256, MPI_DOUBLE, (nrank + 1) % nsize, 0, 256, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        h ^= digest(smem, 256 * sizeof(double)) * 3 + it;
    }
    print("shared_window", h);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    free(hot);
}

__attribute__((noinline)) static void dynamic_window(void)
{
    pattern = "dynamic";
    double *hot = malloc(256 * sizeof(double)), *dmem = calloc(256, sizeof(double));
    MPI_Aint daddr, *dall = malloc(size * sizeof(MPI_Aint));
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, dmem, 256 * sizeof(double));
    MPI_Get_address(dmem, &daddr);
    MPI_Allgather(&daddr, 1, MPI_AINT, dall, 1, MPI_AINT, MPI_COMM_WORLD);
    for (int it = 0; it < ITERS; it++) {
        fill(hot, 256, rank, it + 800);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        MPI_Put(hot, 256, MPI_DOUBLE, right, dall[right], 256, MPI_DOUBLE, win);
        MPI_Win_unlock(right, win);
        MPI_Barrier(MPI_COMM_WORLD);
        expect(dmem, 256, left, it + 800);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    print("dynamic_window", digest(dmem, 256 * sizeof(double)));
    MPI_Win_detach(win, dmem);
    MPI_Win_free(&win);
    free(dall);
    free(dmem);
    free(hot);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size, left = (rank + size - 1) % size;
    double *mem;
    MPI_Win win;
    MPI_Win_allocate(WIN_DOUBLES * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &mem, &win);
    memset(mem, 0, WIN_DOUBLES * sizeof(double));
    MPI_Barrier(MPI_COMM_WORLD);
    fence_pattern(win, mem);
    pscw_pattern(win, mem);
    lock_pattern(win, mem);
    lockall_pattern(win, mem);
    spectrum_pattern(win, mem);
    large_window(win, mem);
    MPI_Win_free(&win);
    created_window();
    shared_window();
    dynamic_window();
    long all = 0;
    MPI_Reduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("rma_epochs: %d ranks, wrong elements %ld\n", size, all);
    MPI_Finalize();
    return all != 0;
}
