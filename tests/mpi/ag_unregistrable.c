/* A zero-copy-size MPI_Allgather whose receive buffer, on rank 1 only, is
 * memory hotbuf cannot register or watch: an initialized global array
 * (.data, a private file mapping), a MAP_HUGETLB buffer, a MAP_PRIVATE
 * file mapping, or (mode "cap") an ordinary buffer that no longer fits
 * under the registration cap because rank 1's large window holds it.
 * filemap maps this program's own file: a file in /tmp may be on tmpfs,
 * whose (shmem) pages the monitor can watch, so it would not test this.
 * cap needs HOTBUF_REGCACHE_MAX_BYTES=256K and HOTBUF_AG_BUFFER=4K (the
 * communicator's area must fit, the receive buffer not): the window is
 * MPI_Win_create on page-aligned anonymous memory, which hotbuf registers
 * and holds (Win_allocate memory may be shared memory it cannot watch).
 * The other rank's buffer is ordinary.  Plain MPI gathers fine; so must
 * hotbuf, on one path agreed by both ranks.  Usage: ag_unregistrable MODE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "digest.h"

#define BLOCK 16384
#define BIG (2u << 20)

static char data_buf[8 * BLOCK] = {1}; /* initialized: lives in .data */

static char *special(const char *mode, size_t len)
{
    if (!strcmp(mode, "data"))
        return data_buf;
    if (!strcmp(mode, "hugetlb")) {
        char *p = mmap(NULL, BIG, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    if (!strcmp(mode, "filemap")) {
        int fd = open("/proc/self/exe", O_RDONLY);
        off_t end = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
        char *p = end < (off_t)len ? MAP_FAILED
                  : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (fd >= 0)
            close(fd);
        return p == MAP_FAILED ? NULL : p;
    }
    return malloc(len); /* "cap": ordinary memory */
}

int main(int argc, char **argv)
{
    int rank, size;
    const char *mode = argc > 1 ? argv[1] : "data";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t len = (size_t)size * BLOCK;
    /* mode "cap": rank 1's window takes most of the registration cap */
    MPI_Aint wsize = !strcmp(mode, "cap") && rank == 1 ? 15 * BLOCK : 0; /* 240 of 256 KiB */
    void *wmem = NULL;
    MPI_Win win;
    if (wsize && posix_memalign(&wmem, 4096, (size_t)wsize))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Win_create(wmem, wsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    char *recv = rank == 1 ? special(mode, len) : malloc(len);
    int have = recv != NULL, all_have;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_have) {
        if (rank == 0)
            printf("ag_unregistrable %s: no such memory here\n", mode);
        MPI_Win_free(&win);
        MPI_Finalize();
        return 0;
    }
    char block[BLOCK];
    unsigned long h = DIGEST_INIT;
    for (int round = 0; round < 6; round++) {
        memset(block, rank * 16 + round, sizeof(block));
        MPI_Allgather(block, BLOCK, MPI_BYTE, recv, BLOCK, MPI_BYTE, MPI_COMM_WORLD);
        h = digest_more(h, recv, len);
    }
    unsigned long hs[64] = {0};
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, hs, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < size; i++)
            printf("ag_unregistrable %s: rank %d gathered %016lx\n", mode, i, hs[i]);
    MPI_Win_free(&win);
    free(wmem);
    MPI_Finalize();
    return 0;
}
