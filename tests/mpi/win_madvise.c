/* A target zeroes half of its own window with madvise(MADV_DONTNEED)
 * between two fences (a legal local update: no RMA touches the window in
 * that epoch) and then writes a few elements there itself.  Rank 0 puts a
 * reused (hot) buffer into the whole window and gets it back, every round.
 * The kernel gives the target fresh zero pages; a registration of the old
 * pages must not be used afterwards, locally or by the origin.
 * Prints the wrong elements each side saw: 0 and 0 with a correct MPI. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 2 /* 8 KiB: within HOTBUF_EAGER_LIMIT, so the buffers turn hot */
#define ROUNDS 12

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = PAGES * page;
    int n = (int)(bytes / sizeof(int)), half = n / 2;
    int *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    static int src[PAGES * 65536 / sizeof(int)], dst[PAGES * 65536 / sizeof(int)];
    MPI_Win win;
    memset(mem, 0, bytes);
    MPI_Win_create(mem, (MPI_Aint)bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int bad_target = 0, bad_origin = 0;
    for (int r = 0; r < ROUNDS; r++) {
        MPI_Win_fence(0, win);
        if (rank == 0) {
            for (int i = 0; i < n; i++)
                src[i] = r * 100000 + i;
            MPI_Put(src, n, MPI_INT, 1, 0, n, MPI_INT, win);
        }
        MPI_Win_fence(0, win);
        if (rank == 1) {
            for (int i = 0; i < n; i++)
                bad_target += mem[i] != r * 100000 + i;
            /* fresh zero pages for the second half, then a few local stores */
            madvise((char *)mem + bytes / 2, bytes / 2, MADV_DONTNEED);
            for (int i = half; i < n; i += 97)
                mem[i] = -r - 1;
        }
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Get(dst, n, MPI_INT, 1, 0, n, MPI_INT, win);
        MPI_Win_fence(0, win);
        if (rank == 0)
            for (int i = 0; i < n; i++) {
                int want = i < half ? r * 100000 + i : (i - half) % 97 ? 0 : -r - 1;
                bad_origin += dst[i] != want;
            }
    }
    int mine[2] = {bad_target, bad_origin}, all[2];
    MPI_Reduce(mine, all, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("win_madvise: wrong elements target %d origin %d\n", all[0], all[1]);
    MPI_Win_free(&win);
    munmap(mem, bytes);
    MPI_Finalize();
    return 0;
}
