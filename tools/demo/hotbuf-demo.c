/* hotbuf demo: a small MPI program with hot and cold buffers on each of
 * the four operations hotbuf watches.  Run it under tools/hotbuf-run to
 * see the buffer-reuse report; it prints a checksum so runs with and
 * without hotbuf can be compared.
 *
 *   send:      one 4 KiB halo buffer sent every iteration (hot), plus a
 *              freshly allocated 1 KiB message each iteration (cold)
 *   put/get:   one 2 KiB origin buffer reused (hot), one new buffer per
 *              iteration (cold), fence synchronization
 *   allgather: one reused 1 KiB-per-rank receive buffer
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 200

static double checksum(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i] * (i % 7 + 1);
    return s;
}

static double halo_exchange(int rank, int size)
{
    enum { N = 512 }; /* 4 KiB of doubles */
    double *halo = malloc(N * sizeof(double)), *in = malloc(N * sizeof(double));
    /* Cold messages come from a different place every time (a freed and
     * re-malloc'ed buffer would often get the same address back, which the
     * reuse table rightly counts as reuse). */
    double *pool = malloc((size_t)ITERS * 128 * sizeof(double));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double sum = 0;
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            halo[i] = rank * 1000 + it + i * 0.5;
        MPI_Request r;
        MPI_Irecv(in, N, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &r);
        MPI_Send(halo, N, MPI_DOUBLE, right, 1, MPI_COMM_WORLD); /* hot */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        sum += checksum(in, N);

        double *once = pool + (size_t)it * 128; /* cold */
        for (int i = 0; i < 128; i++)
            once[i] = it - i;
        MPI_Irecv(in, 128, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &r);
        MPI_Send(once, 128, MPI_DOUBLE, right, 2, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        sum += checksum(in, 128);
    }
    free(pool);
    free(halo);
    free(in);
    return sum;
}

static double one_sided(int rank, int size)
{
    enum { N = 256 }; /* 2 KiB */
    double *winbuf, *origin = malloc(N * sizeof(double)), sum = 0;
    double *pool = malloc((size_t)ITERS * N * sizeof(double));
    MPI_Win win;
    MPI_Win_allocate(2 * N * sizeof(double), sizeof(double), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &winbuf, &win);
    memset(winbuf, 0, 2 * N * sizeof(double));
    int peer = (rank + 1) % size;
    for (int it = 0; it < ITERS / 2; it++) {
        for (int i = 0; i < N; i++)
            origin[i] = rank + it * 0.25 + i;
        MPI_Win_fence(0, win);
        MPI_Put(origin, N, MPI_DOUBLE, peer, 0, N, MPI_DOUBLE, win); /* hot */
        MPI_Win_fence(0, win);
        MPI_Get(origin, N, MPI_DOUBLE, peer, 0, N, MPI_DOUBLE, win); /* hot */
        double *fresh = pool + (size_t)it * N;                       /* cold */
        MPI_Get(fresh, N, MPI_DOUBLE, peer, N, N, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        sum += checksum(origin, N) + checksum(fresh, N);
    }
    MPI_Win_free(&win);
    free(pool);
    free(origin);
    return sum;
}

static double gather(int rank, int size)
{
    enum { N = 128 }; /* 1 KiB per rank */
    double *mine = malloc(N * sizeof(double)),
           *all = malloc((size_t)size * N * sizeof(double));
    double sum = 0;
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            mine[i] = rank * 10 + it + i;
        MPI_Allgather(mine, N, MPI_DOUBLE, all, N, MPI_DOUBLE,
                      MPI_COMM_WORLD); /* hot */
        sum += checksum(all, size * N);
    }
    free(mine);
    free(all);
    return sum;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double local[3] = {halo_exchange(rank, size), one_sided(rank, size),
                       gather(rank, size)};
    double total[3];
    MPI_Reduce(local, total, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("demo checksums: send %.6e  rma %.6e  allgather %.6e\n",
               total[0], total[1], total[2]);
    MPI_Finalize();
    return 0;
}
