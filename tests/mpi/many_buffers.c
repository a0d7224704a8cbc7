/* Many distinct buffers: 8-byte... 256-byte sends from 200000 different
 * addresses, each once, plus one buffer reused throughout.  With a small
 * table the report must say the table stopped growing; memory stays
 * bounded; results match the run without hotbuf. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DISTINCT 200000

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long *pool = malloc(DISTINCT * sizeof(long)), hot = 0, in, sum = 0;
    for (long i = 0; i < DISTINCT; i++)
        pool[i] = i * (rank + 1);
    for (long i = 0; i < DISTINCT; i++) {
        MPI_Request r;
        MPI_Irecv(&in, 1, MPI_LONG, left, 0, MPI_COMM_WORLD, &r);
        MPI_Send(i % 2 ? &pool[i] : &hot, 1, MPI_LONG, right, 0, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        sum += in;
        hot++;
    }
    long total;
    MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("many_buffers: total %ld\n", total);
    free(pool);
    MPI_Finalize();
    return 0;
}
