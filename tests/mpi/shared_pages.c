/* Hot buffers in shared memory whose pages are replaced while the address
 * and the mapping stay: a memfd truncated and grown again or a hole punched
 * in it, and MAP_SHARED anonymous memory a forked helper drops with
 * madvise(MADV_REMOVE).  None of these raises an event in this process, so
 * a registration cached over them would keep the old pages (session 29's
 * review: the Put sent the last round's bytes, the Get and the Allgather
 * wrote into pages nobody could see any more, a window kept the old pages
 * for its remote writers).  Correct program; run on 2 ranks.
 *
 *   A  MPI_Put from the buffer (origin)
 *   B  MPI_Get into the buffer (origin)
 *   C  MPI_Win_create on the buffer, its target renews it between epochs
 *   D  MPI_Allgather into the buffer (zero-copy with HOTBUF_AG_ZCOPY=1K)
 *   E  MPI_Put from MAP_SHARED anonymous memory after a child's MADV_REMOVE
 *
 * Rank 0 prints, per case, how many bytes differed from what was sent: 0
 * without hotbuf, and with it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096
#define ROUNDS 8 /* uses before the renewal: hot under HOTBUF_THRESHOLD=2 */

static int rank, size;

static char *memfd_buf(int *fd)
{
    char *p = MAP_FAILED;

    *fd = memfd_create("shared_pages", MFD_CLOEXEC);
    if (*fd >= 0 && ftruncate(*fd, N) == 0)
        p = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (p == MAP_FAILED) {
        perror("shared_pages: memfd");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* New pages under the same mapping: how 0 truncates the file to nothing
 * and grows it again, how 1 punches a hole over it. */
static void renew(int fd, int how)
{
    int rc = how == 0 ? (ftruncate(fd, 0) || ftruncate(fd, N))
                      : fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                  0, N);
    if (rc) {
        perror("shared_pages: renew");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static int differing(const char *p, size_t len, int want)
{
    int bad = 0;

    for (size_t i = 0; i < len; i++)
        bad += (unsigned char)p[i] != (unsigned char)want;
    return bad;
}

/* how: 0 or 1 as for renew, -1 none */
static void report(const char *what, int how, int bad)
{
    static const char *const hows[] = {" (truncated)", " (hole punched)"};
    int all = 0;

    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s%s: %d byte(s) wrong\n", what, how < 0 ? "" : hows[how],
               all);
}

static void put_from(int how)
{
    int fd = -1, bad = 0;
    char *buf = rank == 0 ? memfd_buf(&fd) : NULL, *base;
    MPI_Win win;

    MPI_Win_allocate(N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int it = 0; it <= ROUNDS; it++) {
        int v = 0x10 + it;
        if (rank == 0) {
            if (it == ROUNDS)
                renew(fd, how);
            memset(buf, v, N);
        }
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Put(buf, N, MPI_BYTE, 1, 0, N, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        if (rank == 1)
            bad += differing(base, N, v);
    }
    MPI_Win_free(&win);
    if (rank == 0) {
        munmap(buf, N);
        close(fd);
    }
    report("A put from a memfd buffer", how, bad);
}

static void get_into(int how)
{
    int fd = -1, bad = 0;
    char *buf = rank == 0 ? memfd_buf(&fd) : NULL, *base;
    MPI_Win win;

    MPI_Win_allocate(N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int it = 0; it <= ROUNDS; it++) {
        int v = 0x20 + it;
        if (rank == 1)
            memset(base, v, N);
        if (rank == 0 && it == ROUNDS)
            renew(fd, how);
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Get(buf, N, MPI_BYTE, 1, 0, N, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        if (rank == 0)
            bad += differing(buf, N, v);
    }
    MPI_Win_free(&win);
    if (rank == 0) {
        munmap(buf, N);
        close(fd);
    }
    report("B get into a memfd buffer", how, bad);
}

static void window_on(int how)
{
    int fd = -1, bad = 0;
    char *wbuf = memfd_buf(&fd), *src = malloc(N);
    MPI_Win win;

    memset(wbuf, 0, N);
    MPI_Win_create(wbuf, N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    for (int it = 0; it <= ROUNDS; it++) {
        int v = 0x30 + it;
        if (rank == 1 && it == ROUNDS)
            renew(fd, how); /* its own memory, outside any epoch */
        if (rank == 0)
            memset(src, v, N);
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Put(src, N, MPI_BYTE, 1, 0, N, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        if (rank == 1)
            bad += differing(wbuf, N, v);
    }
    MPI_Win_free(&win);
    munmap(wbuf, N);
    close(fd);
    free(src);
    report("C window on a memfd buffer", how, bad);
}

static void allgather_into(int how)
{
    int fd = -1, bad = 0, blk = N / size;
    char *rbuf = memfd_buf(&fd), *sbuf = malloc(blk);

    for (int it = 0; it <= ROUNDS; it++) {
        if (it == ROUNDS)
            renew(fd, how);
        memset(sbuf, 0x40 + it + 16 * rank, blk);
        MPI_Allgather(sbuf, blk, MPI_BYTE, rbuf, blk, MPI_BYTE, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            bad += differing(rbuf + r * blk, blk, 0x40 + it + 16 * r);
    }
    munmap(rbuf, N);
    close(fd);
    free(sbuf);
    report("D allgather into a memfd buffer", how, bad);
}

static void put_after_child_remove(void)
{
    int bad = 0;
    char *base, *p = mmap(NULL, N, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    MPI_Win win;

    MPI_Win_allocate(N, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int it = 0; it <= ROUNDS; it++) {
        int v = 0x50 + it;
        if (rank == 0 && it == ROUNDS) {
            pid_t c = fork(); /* the pages are the child's too */
            if (c == 0) {
                madvise(p, N, MADV_REMOVE);
                _exit(0);
            }
            waitpid(c, NULL, 0);
        }
        if (rank == 0)
            memset(p, v, N);
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Put(p, N, MPI_BYTE, 1, 0, N, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        if (rank == 1)
            bad += differing(base, N, v);
    }
    MPI_Win_free(&win);
    munmap(p, N);
    report("E put from shared anonymous memory after a child's MADV_REMOVE",
           -1, bad);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int how = 0; how < 2; how++) {
        put_from(how);
        get_into(how);
        window_on(how);
        allgather_into(how);
    }
    put_after_child_remove();
    MPI_Finalize();
    return 0;
}
