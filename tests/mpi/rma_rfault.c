/* Rput/Rget whose RDMA fails (tests/rdma/rma_faults.sh sets the test-only
 * HOTBUF_TEST_RMA_FAIL): the request may complete only when the operation
 * redone on MPI has.  Rank 0 reads rank 1's window with MPI_Rget under a
 * MPI_MODE_NOCHECK lock while rank 1 sleeps outside MPI (MPI's own Get
 * then needs rank 1 to make progress), and checks the buffer right after
 * MPI_Wait; it also overwrites its MPI_Rput buffer right after MPI_Wait,
 * which must not change what arrives.  Prints the wrong elements. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 1024 /* 4 KiB: within HOTBUF_EAGER_LIMIT */
#define ROUNDS 8

int main(int argc, char **argv)
{
    int rank, size, *mem = NULL, bad = 0;
    static int buf[N], put[N];
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* MPI_Win_create on heap memory: MPI cannot map it into the other
     * process, so its own Get needs the target's progress (Win_allocate
     * would give MPICH a shared-memory window that completes at once) */
    if (posix_memalign((void **)&mem, 4096, N * sizeof(int)))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    /* warm-up: fence epochs both ways, so that hotbuf connects the ranks
     * (a rank asleep or in a barrier does not answer a connection) */
    static int warm[N];
    for (int r = 0; r < 6; r++) {
        MPI_Win_fence(0, win);
        MPI_Put(warm, N, MPI_INT, (rank + 1) % size, 0, N, MPI_INT, win);
        MPI_Win_fence(0, win);
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++)
            mem[i] = rank * 1000000 + r * 1000 + i;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            usleep(200000); /* outside MPI while rank 0 reads */
        if (rank == 0) {
            MPI_Request req;
            for (int i = 0; i < N; i++)
                buf[i] = -1;
            MPI_Win_lock(MPI_LOCK_SHARED, 1, MPI_MODE_NOCHECK, win);
            MPI_Rget(buf, N, MPI_INT, 1, 0, N, MPI_INT, win, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; i < N; i++)
                bad += buf[i] != 1000000 + r * 1000 + i;
            for (int i = 0; i < N; i++)
                put[i] = 7000000 + r * 1000 + i;
            MPI_Rput(put, N, MPI_INT, 1, 0, N, MPI_INT, win, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            for (int i = 0; i < N; i++)
                put[i] = -2; /* reusable once the request is complete */
            MPI_Win_unlock(1, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            for (int i = 0; i < N; i++)
                bad += mem[i] != 7000000 + r * 1000 + i;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int all = 0;
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("rma_rfault: wrong elements %d\n", all);
    MPI_Win_free(&win);
    free(mem);
    MPI_Finalize();
    return 0;
}
