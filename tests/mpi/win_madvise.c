/* A target zeroes half of its own window with madvise(MADV_DONTNEED)
 * between two fences (a legal local update: no RMA touches the window in
 * that epoch) and then writes a few elements there itself.  Rank 0 puts a
 * reused (hot) buffer into the whole window and gets it back, every round.
 * The kernel gives the target fresh zero pages; a registration of the old
 * pages must not be used afterwards, locally or by the origin.
 * Argument: how the epochs are made: fence (default), pscw (post/start/
 * complete/wait: the target changes the memory between wait and post),
 * lock (passive target: the target locks its own window for the change,
 * the origin's next lock epoch follows a barrier).
 * Prints the wrong elements each side saw: 0 and 0 with a correct MPI. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 2 /* 8 KiB: within HOTBUF_EAGER_LIMIT, so the buffers turn hot */
#define ROUNDS 12

enum mode { FENCE, PSCW, LOCK };
static enum mode mode;
static MPI_Group peer_group; /* the other rank */

/* Opens (open = 1) or closes an epoch in which rank 0 accesses rank 1. */
static void epoch(MPI_Win win, int rank, int open)
{
    if (mode == FENCE) {
        MPI_Win_fence(0, win);
    } else if (mode == PSCW) {
        if (rank == 0 && open)
            MPI_Win_start(peer_group, 0, win);
        else if (rank == 0)
            MPI_Win_complete(win);
        else if (rank == 1 && open)
            MPI_Win_post(peer_group, 0, win);
        else if (rank == 1)
            MPI_Win_wait(win);
    } else if (rank == 0 && open) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    } else if (rank == 0) {
        MPI_Win_unlock(1, win);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (rank != 0 && !open) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* The target's local change, inside its own lock in passive mode. */
static void local_change(MPI_Win win, int *mem, size_t bytes, int n, int r)
{
    if (mode == LOCK)
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
    /* fresh zero pages for the second half, then a few local stores */
    madvise((char *)mem + bytes / 2, bytes / 2, MADV_DONTNEED);
    for (int i = n / 2; i < n; i += 97)
        mem[i] = -r - 1;
    if (mode == LOCK)
        MPI_Win_unlock(1, win);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *m = argc > 1 ? argv[1] : "fence";
    mode = !strcasecmp(m, "pscw") ? PSCW : !strcasecmp(m, "lock") ? LOCK : FENCE;
    MPI_Group world;
    int other = rank == 0 ? 1 : 0;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &other, &peer_group);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = PAGES * page;
    int n = (int)(bytes / sizeof(int)), half = n / 2;
    int *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    static int src[PAGES * 65536 / sizeof(int)], dst[PAGES * 65536 / sizeof(int)];
    MPI_Win win;
    memset(mem, 0, bytes);
    MPI_Win_create(mem, (MPI_Aint)bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int bad_target = 0, bad_origin = 0;
    for (int r = 0; r < ROUNDS; r++) {
        epoch(win, rank, 1);
        if (rank == 0) {
            for (int i = 0; i < n; i++)
                src[i] = r * 100000 + i;
            MPI_Put(src, n, MPI_INT, 1, 0, n, MPI_INT, win);
        }
        epoch(win, rank, 0);
        if (rank == 1) {
            if (mode == LOCK)
                MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            for (int i = 0; i < n; i++)
                bad_target += mem[i] != r * 100000 + i;
            if (mode == LOCK)
                MPI_Win_unlock(1, win);
            local_change(win, mem, bytes, n, r);
        }
        if (mode == LOCK)
            MPI_Barrier(MPI_COMM_WORLD); /* the change is made */
        epoch(win, rank, 1);
        if (rank == 0)
            MPI_Get(dst, n, MPI_INT, 1, 0, n, MPI_INT, win);
        epoch(win, rank, 0);
        if (rank == 0)
            for (int i = 0; i < n; i++) {
                int want = i < half ? r * 100000 + i : (i - half) % 97 ? 0 : -r - 1;
                bad_origin += dst[i] != want;
            }
    }
    int mine[2] = {bad_target, bad_origin}, all[2];
    MPI_Reduce(mine, all, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("win_madvise %s: wrong elements target %d origin %d\n", m, all[0],
               all[1]);
    MPI_Win_free(&win);
    MPI_Group_free(&peer_group);
    MPI_Group_free(&world);
    munmap(mem, bytes);
    MPI_Finalize();
    return 0;
}
