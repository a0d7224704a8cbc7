/* A program whose buffer reuse is known exactly, for checking the report
 * (tests/check_report.py knows these numbers).  Per rank:
 *   send:      one 1 KiB buffer sent 1000 times, 500 distinct 256 B buffers
 *              sent once, a persistent 2 KiB send started 25 times,
 *              7 sends to MPI_PROC_NULL and 3 zero-count sends
 *   put:       buffer i (i = 1..10, 512 B each) put i times   (spectrum)
 *   get:       one 4 KiB buffer read 20 times
 *   allgather: one receive buffer (128 B per rank) 30 times, 1 in place
 * Every message goes to the right neighbour; the program prints what it
 * received so the runs with and without hotbuf can be compared too. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double acc;

__attribute__((noinline)) static void sends(int right, int left)
{
    char *hot = malloc(1024), *in = malloc(2048);
    char *cold = malloc(500 * 256);
    MPI_Request r;
    for (int i = 0; i < 1000; i++) {
        memset(hot, i & 0xff, 1024);
        MPI_Irecv(in, 1024, MPI_BYTE, left, 1, MPI_COMM_WORLD, &r);
        MPI_Send(hot, 1024, MPI_BYTE, right, 1, MPI_COMM_WORLD);              /* site A */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        acc += in[i % 1024];
    }
    for (int i = 0; i < 500; i++) {
        memset(cold + i * 256, i % 251, 256);
        MPI_Irecv(in, 256, MPI_BYTE, left, 2, MPI_COMM_WORLD, &r);
        MPI_Send(cold + i * 256, 256, MPI_BYTE, right, 2, MPI_COMM_WORLD);    /* site B */
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        acc += in[i % 256];
    }
    MPI_Request ps, pr;
    double *pbuf = malloc(2048);
    MPI_Send_init(pbuf, 256, MPI_DOUBLE, right, 3, MPI_COMM_WORLD, &ps);
    MPI_Recv_init(in, 256, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &pr);
    for (int i = 0; i < 25; i++) {
        for (int k = 0; k < 256; k++)
            pbuf[k] = i + k;
        MPI_Start(&pr);
        MPI_Start(&ps);
        MPI_Wait(&ps, MPI_STATUS_IGNORE);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        acc += ((double *)in)[i];
    }
    MPI_Request_free(&ps);
    MPI_Request_free(&pr);
    for (int i = 0; i < 7; i++)
        MPI_Send(hot, 1024, MPI_BYTE, MPI_PROC_NULL, 4, MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++) {
        MPI_Irecv(in, 0, MPI_BYTE, left, 5, MPI_COMM_WORLD, &r);
        MPI_Send(hot, 0, MPI_BYTE, right, 5, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    free(pbuf);
    free(hot);
    free(in);
    free(cold);
}

static void rma(int right)
{
    double *base, *bufs = calloc(10, 512), *get = calloc(1, 4096);
    MPI_Win win;
    MPI_Win_allocate(8192, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, 8192);
    MPI_Win_fence(0, win);
    for (int b = 1; b <= 10; b++)
        for (int k = 0; k < b; k++) {
            double *p = bufs + (b - 1) * 64;
            p[0] = b * 100 + k;
            MPI_Put(p, 64, MPI_DOUBLE, right, (b - 1) * 512, 64, MPI_DOUBLE, win);
            MPI_Win_fence(0, win);
        }
    for (int i = 0; i < 20; i++) {
        MPI_Get(get, 512, MPI_DOUBLE, right, 0, 512, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        acc += get[i * 8];
    }
    MPI_Win_free(&win);
    free(bufs);
    free(get);
}

static void allgathers(int rank, int size)
{
    int *mine = malloc(128), *all = malloc(128 * size), *inplace = malloc(128 * size);
    for (int i = 0; i < 30; i++) {
        for (int k = 0; k < 32; k++)
            mine[k] = rank * 1000 + i + k;
        MPI_Allgather(mine, 32, MPI_INT, all, 32, MPI_INT, MPI_COMM_WORLD);
        acc += all[(i * 7) % (32 * size)];
    }
    for (int k = 0; k < 32; k++)
        inplace[rank * 32 + k] = rank - k;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, inplace, 32, MPI_INT, MPI_COMM_WORLD);
    for (int k = 0; k < 32 * size; k++)
        acc += inplace[k];
    free(mine);
    free(all);
    free(inplace);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    sends(right, left);
    rma(right);
    allgathers(rank, size);
    double total;
    MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("reuse_known: %d ranks, checksum %.1f\n", size, total);
    MPI_Finalize();
    return 0;
}
