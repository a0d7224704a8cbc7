/* A program whose per-call sizes are known exactly, for checking the
 * report's size figures and per-size hotness (tests/check_report.py
 * "sizes_known" replays the same calls).  Per rank:
 *   send:      one buffer, 600 sends of 1 KiB then 1000 of 32 KiB (site A);
 *              one buffer at 82 NetPIPE-style sizes, the i-th smallest
 *              sent i+1 times (site B)
 *   put:       one buffer, 150 Puts of 1 KiB, 100 of 16 KiB (above the
 *              default 8 KiB eager limit), 50 of 2 KiB
 *   allgather: one receive buffer, blocks of 64 KiB down to 4 B, block
 *              2^j gathered j+1 times
 * Every message goes to the right neighbour; the program prints what it
 * received so the runs with and without hotbuf can be compared too. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP_SIZES 82
#define MAX_NP (96 * 1024)

static double acc;

/* NetPIPE's pattern: around every power of two p, the sizes p-3, p, p+3
 * and 5p/4, 3p/2, 7p/4; the first NP_SIZES ascending ones (1 B..64 KiB+3). */
static int netpipe_sizes(int *out)
{
    int n = 0, last = 0;
    for (int p = 1; n < NP_SIZES && p <= MAX_NP; p *= 2) {
        int cand[] = {p - 3, p, p + 3, p + p / 4, p + p / 2, p + 3 * p / 4};
        for (int k = 0; k < 6 && n < NP_SIZES; k++)
            if (cand[k] > last)
                out[n++] = last = cand[k];
    }
    return n;
}

static void receive(char *in, int bytes, int left, int tag, MPI_Request *r)
{
    MPI_Irecv(in, bytes, MPI_BYTE, left, tag, MPI_COMM_WORLD, r);
}

static void done(const char *in, int bytes, MPI_Request *r)
{
    MPI_Wait(r, MPI_STATUS_IGNORE);
    acc += in[bytes / 2] + in[bytes - 1];
}

__attribute__((noinline)) static void one_buffer(char *buf, char *in, int right, int left)
{
    MPI_Request r;
    for (int i = 0; i < 1600; i++) {
        int bytes = i < 600 ? 1024 : 32768;
        memset(buf, i & 0xff, bytes);
        receive(in, bytes, left, 1, &r);
        MPI_Send(buf, bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD);        /* site A */
        done(in, bytes, &r);
    }
}

__attribute__((noinline)) static void netpipe(char *buf, char *in, int right, int left)
{
    int sizes[NP_SIZES], n = netpipe_sizes(sizes);
    MPI_Request r;
    for (int i = 0; i < n; i++)
        for (int k = 0; k <= i; k++) {
            memset(buf, (i + k) & 0xff, sizes[i]);
            receive(in, sizes[i], left, 2, &r);
            MPI_Send(buf, sizes[i], MPI_BYTE, right, 2, MPI_COMM_WORLD); /* site B */
            done(in, sizes[i], &r);
        }
}

static void rma_puts(int rank, int right)
{
    char *base, *buf = calloc(1, 16384);
    MPI_Win win;
    MPI_Win_allocate(16384, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, 16384);
    MPI_Win_fence(0, win);
    for (int i = 0; i < 300; i++) {
        int bytes = i < 150 ? 1024 : i < 250 ? 16384 : 2048;
        buf[bytes - 1] = (char)i;
        MPI_Put(buf, bytes, MPI_BYTE, right, 0, bytes, MPI_BYTE, win);
        MPI_Win_fence(0, win);
    }
    /* Read once, at the end, in a lock on the own window: reading it
     * after every fence gave run-to-run differences under Open MPI 4.1
     * even without hotbuf. */
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int k = 0; k < 16384; k += 511)
        acc += base[k];
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    free(buf);
}

static void allgathers(int rank, int size)
{
    int *mine = malloc(65536), *all = malloc(65536 * size);
    for (int j = 16; j >= 2; j--)
        for (int k = 0; k <= j; k++) {
            int ints = (1 << j) / 4;
            for (int m = 0; m < ints; m++)
                mine[m] = rank * 7 + j * 3 + k + m;
            MPI_Allgather(mine, ints, MPI_INT, all, ints, MPI_INT, MPI_COMM_WORLD);
            acc += all[(ints * size) - 1] + all[k % ints];
        }
    free(mine);
    free(all);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    char *buf = malloc(MAX_NP), *in = malloc(MAX_NP), *np = malloc(MAX_NP);
    one_buffer(buf, in, right, left);
    netpipe(np, in, right, left);
    rma_puts(rank, right);
    allgathers(rank, size);
    double total;
    MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sizes_known: %d ranks, checksum %.1f\n", size, total);
    free(buf);
    free(in);
    free(np);
    MPI_Finalize();
    return 0;
}
