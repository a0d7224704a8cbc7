/* Does hotbuf's progress run while a rank sits in a blocking MPI call?
 * Rank 1 waits in MPI_Barrier, MPI_Allreduce and MPI_Recv while rank 0
 * sleeps before joining each; under hotbuf the program samples the hook's
 * passes around each call (hotbuf_test_progress_passes, found with dlsym:
 * absent in a plain run).  Rank 0 also sends K messages with the probe's
 * tag first: with the test probe on (HOTBUF_TEST_PROGRESS_PROBE=1) the
 * hook claims them from inside those calls with Improbe + Imrecv
 * (hotbuf_test_progress_claimed), and rank 1 receives the rest itself.
 * stdout (the same with and without hotbuf): the results.  stderr, under
 * hotbuf only: "progress_hook: rank R passes barrier B allreduce A recv V
 * claimed C" for tests/behaviour.sh to check. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

#define K 5
#define PROBE_TAG 32001 /* progress_probe.c's */
#define WAIT_US 300000

typedef unsigned long (*counter_fn)(void);

static unsigned long count(counter_fn f)
{
    return f ? f() : 0;
}

int main(int argc, char **argv)
{
    int rank, size, x, sum = 0, got = 0, v = 0;
    unsigned long d[3];
    counter_fn passes = (counter_fn)dlsym(RTLD_DEFAULT, "hotbuf_test_progress_passes");
    counter_fn claimed = (counter_fn)dlsym(RTLD_DEFAULT, "hotbuf_test_progress_claimed");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    x = rank + 1;
    for (int i = 0; rank == 0 && size > 1 && i < K; i++)
        MPI_Send(&i, 1, MPI_INT, 1, PROBE_TAG, MPI_COMM_WORLD);

    unsigned long p0 = count(passes);
    if (rank == 0)
        usleep(WAIT_US);
    MPI_Barrier(MPI_COMM_WORLD);
    d[0] = count(passes) - p0;

    p0 = count(passes);
    if (rank == 0)
        usleep(WAIT_US);
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    d[1] = count(passes) - p0;

    p0 = count(passes);
    if (rank == 0 && size > 1) {
        usleep(WAIT_US);
        MPI_Send(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    d[2] = count(passes) - p0;

    /* The probe messages the hook did not claim (all of them in a plain
     * run): the count is re-read, the hook may claim one meanwhile. */
    while (rank == 1 && got + (int)count(claimed) < K) {
        int flag, y;
        MPI_Iprobe(0, PROBE_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag)
            MPI_Recv(&y, 1, MPI_INT, 0, PROBE_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE), got++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (passes)
        fprintf(stderr, "progress_hook: rank %d passes barrier %lu allreduce %lu recv %lu claimed %lu\n",
                rank, d[0], d[1], d[2], count(claimed));
    if (rank == 1)
        printf("progress_hook: allreduce %d, received %d, probe messages %d\n", sum, v,
               got + (int)count(claimed));
    MPI_Finalize();
    return 0;
}
