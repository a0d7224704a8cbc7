/* MPI_THREAD_MULTIPLE: two threads per rank send concurrently on their own
 * tags, then the main thread runs AG_CALLS MPI_Allgathers.  The report
 * must count every call exactly (tracking is serialized by a lock), every
 * Allgather as left on MPI for "threads", and results must match the run
 * without hotbuf. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SENDS 500
#define AG_CALLS 3

static int rank, size;

static void *worker(void *arg)
{
    int id = (int)(long)arg, right = (rank + 1) % size, left = (rank + size - 1) % size;
    double buf[64], in[64], *acc = malloc(sizeof(double));
    *acc = 0;
    for (int i = 0; i < SENDS; i++) {
        MPI_Request r;
        for (int k = 0; k < 64; k++)
            buf[k] = rank * 10 + id + i + k;
        MPI_Irecv(in, 64, MPI_DOUBLE, left, id, MPI_COMM_WORLD, &r);
        MPI_Send(buf, 64, MPI_DOUBLE, right, id, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        *acc += in[i % 64];
    }
    return acc;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0)
            printf("thread_multiple: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 0;
    }
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    double local = 0, total;
    for (int i = 0; i < 2; i++) {
        void *res;
        pthread_join(t[i], &res);
        local += *(double *)res;
        free(res);
    }
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double mine[256], *all = malloc(sizeof(mine) * size), sum = 0;
    for (int c = 0; c < AG_CALLS; c++) {
        for (int k = 0; k < 256; k++)
            mine[k] = rank * 1000 + c + k;
        MPI_Allgather(mine, 256, MPI_DOUBLE, all, 256, MPI_DOUBLE, MPI_COMM_WORLD);
        for (int k = 0; k < 256 * size; k++)
            sum += all[k] * (k + 1);
    }
    free(all);
    if (rank == 0)
        printf("thread_multiple: total %.1f, allgather %.1f\n", total, sum);
    MPI_Finalize();
    return 0;
}
