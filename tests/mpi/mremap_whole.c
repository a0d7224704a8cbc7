/* mremap(MREMAP_MAYMOVE) of a whole mapping after hotbuf has used a part
 * of it: a hot Put origin, an Allgather receive buffer (zero-copy size)
 * and a window, each inside a larger anonymous mapping.  Once the MPI
 * operations are complete the application may move the mapping; the
 * system call must behave exactly as without hotbuf.  Prints the result of
 * each mremap and the data the mapping carried along. */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "digest.h"

#define MAP_PAGES 16

static char *map_pages(size_t page)
{
    char *p = mmap(NULL, MAP_PAGES * page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 7, MAP_PAGES * page);
    return p;
}

/* On failure: the VMAs the mapping spans and their flags, to stderr (why
 * the kernel saw more than one mapping: VmFlags uw = userfaultfd
 * write-protect registration, dc = MADV_DONTFORK). */
static void dump_vmas(const char *p, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    unsigned long lo, hi, a = (unsigned long)p;
    char line[512];
    int in = 0;

    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
            line[strspn(line, "0123456789abcdef")] == '-') {
            in = hi > a && lo < a + len;
            if (in)
                fprintf(stderr, "vma %lx-%lx\n", lo, hi);
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            fprintf(stderr, "    %s", line);
        }
    }
    if (f)
        fclose(f);
}

/* Moves the whole mapping to a larger one; reports errno like the app would. */
static void remap(const char *what, char *p, size_t page, int rank)
{
    void *q = mremap(p, MAP_PAGES * page, 2 * MAP_PAGES * page, MREMAP_MAYMOVE);
    int err = q == MAP_FAILED ? errno : 0;
    if (err)
        dump_vmas(p, MAP_PAGES * page);
    unsigned long h = q == MAP_FAILED ? 0 : digest(q, MAP_PAGES * page);
    int all_err[2] = {0, 0};
    MPI_Gather(&err, 1, MPI_INT, all_err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    unsigned long hs[2] = {0, 0};
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, hs, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mremap after %s: rank 0 %s, rank 1 %s, data %016lx %016lx\n", what,
               all_err[0] ? strerror(all_err[0]) : "ok",
               all_err[1] ? strerror(all_err[1]) : "ok", hs[0], hs[1]);
    munmap(q == MAP_FAILED ? (void *)p : q,
           (q == MAP_FAILED ? 1 : 2) * MAP_PAGES * page);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    /* 1. a hot Put origin: two pages in the middle of the mapping */
    char *origin = map_pages(page), *win_mem = map_pages(page);
    MPI_Win win;
    MPI_Win_create(win_mem + 4 * page, 4 * page, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int i = 0; i < 10; i++) {
        MPI_Win_fence(0, win);
        if (rank == 0)
            MPI_Put(origin + 4 * page, (int)(2 * page), MPI_BYTE, 1, 0, (int)(2 * page),
                    MPI_BYTE, win);
        MPI_Win_fence(0, win);
    }
    remap("a hot Put origin", origin, page, rank);

    /* 2. the window: moved after MPI_Win_free */
    MPI_Win_free(&win);
    remap("a freed window", win_mem, page, rank);

    /* 3. an Allgather receive buffer of zero-copy size */
    char *recv = map_pages(page);
    char block[16384];
    memset(block, rank + 1, sizeof(block));
    for (int i = 0; i < 6; i++)
        MPI_Allgather(block, sizeof(block), MPI_BYTE, recv + 2 * page, sizeof(block), MPI_BYTE,
                      MPI_COMM_WORLD);
    remap("an Allgather receive buffer", recv, page, rank);

    MPI_Finalize();
    return 0;
}
