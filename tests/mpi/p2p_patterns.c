/* Point-to-point through every intercepted send call, with derived
 * datatypes, MPI_PROC_NULL, zero counts and wildcard receives.  Prints a
 * digest of everything received; the test compares it with and without
 * hotbuf. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

#define N 1024
#define ROUNDS 50

static unsigned long received = DIGEST_INIT;

static void mix(const void *p, size_t len)
{
    received = digest_more(received, p, len);
}

static void fill(double *v, int n, int seed)
{
    for (int i = 0; i < n; i++)
        v[i] = seed * 31.0 + i * 0.5;
}

/* Each send call, paired with a receive on the right neighbour. */
static void each_send_mode(int rank, int size, double *sbuf, double *rbuf, int round)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request r[2];
    for (int mode = 0; mode < 8; mode++) {
        fill(sbuf, N, rank * 100 + round * 8 + mode);
        MPI_Irecv(rbuf, N, MPI_DOUBLE, left, mode, MPI_COMM_WORLD, &r[0]);
        switch (mode) {
        case 0: MPI_Send(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD); break;
        case 1: MPI_Ssend(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD); break;
        case 2: MPI_Bsend(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD); break;
        case 3:
            MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted: Rsend is legal */
            MPI_Rsend(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD);
            break;
        case 4: MPI_Isend(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD, &r[1]); break;
        case 5: MPI_Issend(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD, &r[1]); break;
        case 6: MPI_Ibsend(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD, &r[1]); break;
        case 7:
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Irsend(sbuf, N, MPI_DOUBLE, right, mode, MPI_COMM_WORLD, &r[1]);
            break;
        }
        MPI_Waitall(mode >= 4 ? 2 : 1, r, MPI_STATUSES_IGNORE);
        mix(rbuf, N * sizeof(double));
    }
}

static void sendrecv_and_wildcards(int rank, int size, double *sbuf, double *rbuf)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;
    fill(sbuf, N, rank + 7);
    MPI_Sendrecv(sbuf, N, MPI_DOUBLE, right, 11, rbuf, N, MPI_DOUBLE, left, 11, MPI_COMM_WORLD,
                 &st);
    mix(rbuf, N * sizeof(double));
    fill(rbuf, 64, rank + 9);
    MPI_Sendrecv_replace(rbuf, 64, MPI_DOUBLE, right, 12, left, 12, MPI_COMM_WORLD, &st);
    mix(rbuf, 64 * sizeof(double));
    /* Wildcards: rank 0 collects one message from everyone else, on its own
     * communicator so that no ring message still in flight can match. */
    MPI_Comm wc;
    MPI_Comm_dup(MPI_COMM_WORLD, &wc);
    if (rank == 0) {
        long sum = 0;
        for (int i = 1; i < size; i++) {
            int v;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, wc, &st);
            sum += (long)v * st.MPI_TAG;
        }
        mix(&sum, sizeof(sum));
    } else {
        int v = rank * 3;
        MPI_Send(&v, 1, MPI_INT, 0, rank, wc);
    }
    MPI_Comm_free(&wc);
}

static void datatypes_and_edges(int rank, int size, double *sbuf, double *rbuf)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Datatype vec, resized;
    MPI_Type_vector(16, 2, 5, MPI_DOUBLE, &vec);
    MPI_Type_create_resized(vec, -8 * (MPI_Aint)sizeof(double), 90 * sizeof(double), &resized);
    MPI_Type_commit(&resized);
    fill(sbuf, N, rank + 3);
    memset(rbuf, 0, N * sizeof(double));
    MPI_Request r;
    MPI_Irecv(rbuf + 8, 3, resized, left, 21, MPI_COMM_WORLD, &r);
    MPI_Send(sbuf + 8, 3, resized, right, 21, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    mix(rbuf, N * sizeof(double));
    MPI_Type_free(&resized);
    MPI_Type_free(&vec);

    /* MPI_BOTTOM with a datatype of absolute addresses */
    MPI_Aint where[2];
    int lens[2] = {4, 4};
    MPI_Get_address(sbuf + 40, &where[0]);
    MPI_Get_address(sbuf + 80, &where[1]);
    MPI_Datatype absolute;
    MPI_Type_create_hindexed(2, lens, where, MPI_DOUBLE, &absolute);
    MPI_Type_commit(&absolute);
    MPI_Irecv(rbuf, 8, MPI_DOUBLE, left, 24, MPI_COMM_WORLD, &r);
    MPI_Send(MPI_BOTTOM, 1, absolute, right, 24, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    mix(rbuf, 8 * sizeof(double));
    MPI_Type_free(&absolute);

    MPI_Send(sbuf, N, MPI_DOUBLE, MPI_PROC_NULL, 22, MPI_COMM_WORLD);
    MPI_Irecv(rbuf, 0, MPI_DOUBLE, left, 23, MPI_COMM_WORLD, &r);
    MPI_Send(sbuf, 0, MPI_DOUBLE, right, 23, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void persistent(int rank, int size, double *sbuf, double *rbuf)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request req[4];
    MPI_Send_init(sbuf, N, MPI_DOUBLE, right, 31, MPI_COMM_WORLD, &req[0]);
    MPI_Ssend_init(sbuf + 1, 8, MPI_DOUBLE, right, 32, MPI_COMM_WORLD, &req[1]);
    MPI_Recv_init(rbuf, N, MPI_DOUBLE, left, 31, MPI_COMM_WORLD, &req[2]);
    MPI_Recv_init(rbuf + N, 8, MPI_DOUBLE, left, 32, MPI_COMM_WORLD, &req[3]);
    for (int i = 0; i < 20; i++) {
        fill(sbuf, N + 8, rank * 7 + i);
        MPI_Start(&req[2]);
        MPI_Start(&req[3]);
        if (i % 2)
            MPI_Startall(2, req);
        else {
            MPI_Start(&req[0]);
            MPI_Start(&req[1]);
        }
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        mix(rbuf, (N + 8) * sizeof(double));
    }
    for (int i = 0; i < 4; i++)
        MPI_Request_free(&req[i]);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bsize = 4 * (N * sizeof(double) + MPI_BSEND_OVERHEAD);
    void *bbuf = malloc(bsize);
    MPI_Buffer_attach(bbuf, bsize);
    double *sbuf = malloc(2 * N * sizeof(double)), *rbuf = malloc(2 * N * sizeof(double));
    for (int round = 0; round < ROUNDS; round++)
        each_send_mode(rank, size, sbuf, rbuf, round);
    sendrecv_and_wildcards(rank, size, sbuf, rbuf);
    datatypes_and_edges(rank, size, sbuf, rbuf);
    persistent(rank, size, sbuf, rbuf);
    MPI_Buffer_detach(&bbuf, &bsize);

    unsigned long all[64] = {0};
    MPI_Gather(&received, 1, MPI_UNSIGNED_LONG, all, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < size && i < 64; i++)
            printf("rank %d digest %016lx\n", i, all[i]);
    free(sbuf);
    free(rbuf);
    free(bbuf);
    MPI_Finalize();
    return 0;
}
