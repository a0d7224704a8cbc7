/* MPI_Allgather (through hotbuf when preloaded) against PMPI_Allgather
 * (the MPI library's own, never intercepted) in the same run: the results
 * must be bit-identical.  Covers block sizes 1 B .. 256 KiB, MPI_BYTE /
 * MPI_INT / MPI_DOUBLE, non-contiguous send and receive types, MPI_IN_PLACE,
 * one reused receive buffer and a fresh one per call, MPI_COMM_WORLD, a
 * split and a duplicated communicator, communicators freed after use, and
 * an intercommunicator (which hotbuf leaves to MPI: each group gathers the
 * other group's blocks), and single-rank communicators (MPI_COMM_SELF and
 * a split: MPI's, counted "single_rank").  Argument "mix": also 30 calls
 * whose sizes alternate, so that with HOTBUF_AG_RING < HOTBUF_AG_ZCOPY
 * recursive doubling, the copy-based ring and the zero-copy ring follow
 * one another on one communicator.
 * Prints "allgather_check: N checks, M mismatches"; exits 1 on a mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

static long checks, mismatches;
static unsigned long h = DIGEST_INIT;

static void fill(unsigned char *p, size_t n, int rank, int salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(rank * 31 + salt * 7 + i * 13 + (i >> 8));
}

static void compare(const void *got, const void *want, size_t n, const char *what, int block,
                    MPI_Comm comm)
{
    int bad = memcmp(got, want, n) != 0, rank, any = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
    checks++;
    if (bad) {
        mismatches++;
        fprintf(stderr, "FAIL %s block %d: rank %d differs\n", what, block, rank);
    }
    h = digest_more(h, got, n);
}

/* count elements of type per rank, receive buffer reused or fresh. */
static void contiguous(MPI_Comm comm, MPI_Datatype type, int count, int fresh, int in_place,
                       int iters, unsigned char **reused)
{
    int rank, size, tsize;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Type_size(type, &tsize);
    size_t block = (size_t)count * tsize, total = block * size;
    unsigned char *want = malloc(total), *send = malloc(block);
    for (int it = 0; it < iters; it++) {
        unsigned char *got = fresh ? malloc(total) : *reused;
        fill(send, block, rank, it + count);
        memset(got, 0xee, total);
        memset(want, 0xdd, total);
        if (in_place) {
            memcpy(got + rank * block, send, block);
            memcpy(want + rank * block, send, block);
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, count, type, comm);
            PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want, count, type, comm);
        } else {
            MPI_Allgather(send, count, type, got, count, type, comm);
            PMPI_Allgather(send, count, type, want, count, type, comm);
        }
        compare(got, want, total, in_place ? "in place" : fresh ? "fresh" : "reused", (int)block,
                comm);
        if (fresh)
            free(got);
    }
    free(want);
    free(send);
}

/* Every other int of the receive buffer (a vector type), and a send type
 * that takes every third int: packed by hotbuf, same result. */
static void derived(MPI_Comm comm, int n)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype send_t, recv_t, recv_resized;
    MPI_Type_vector(n, 1, 3, MPI_INT, &send_t);
    MPI_Type_commit(&send_t);
    MPI_Type_vector(n, 1, 2, MPI_INT, &recv_t);
    MPI_Type_create_resized(recv_t, 0, (MPI_Aint)(2 * n * sizeof(int)), &recv_resized);
    MPI_Type_commit(&recv_resized);
    int *send = malloc(3 * n * sizeof(int)), *got = calloc(2 * n * size, sizeof(int)),
        *want = calloc(2 * n * size, sizeof(int));
    for (int it = 0; it < 4; it++) {
        for (int i = 0; i < 3 * n; i++)
            send[i] = rank * 100000 + it * 1000 + i;
        MPI_Allgather(send, 1, send_t, got, 1, recv_resized, comm);
        PMPI_Allgather(send, 1, send_t, want, 1, recv_resized, comm);
        compare(got, want, 2 * n * size * sizeof(int), "derived", n * 4, comm);
        /* in place with the vector receive type */
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, 1, recv_resized, comm);
        PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, want, 1, recv_resized, comm);
        compare(got, want, 2 * n * size * sizeof(int), "derived in place", n * 4, comm);
    }
    free(send);
    free(got);
    free(want);
    MPI_Type_free(&send_t);
    MPI_Type_free(&recv_t);
    MPI_Type_free(&recv_resized);
}

static int quick; /* argument "quick": sizes up to 64 KiB + 1, fewer repetitions */

/* Sizes in turn: small, medium, large, again (see "mix" above). */
static void mixed(MPI_Comm comm)
{
    static const int bytes[] = {64, 4096, 1000, 8192, 40000, 3};
    int size;
    MPI_Comm_size(comm, &size);
    unsigned char *reused = malloc(40000 * (size_t)size);
    for (int it = 0; it < 30; it++)
        contiguous(comm, MPI_BYTE, bytes[it % 6], 0, 0, 1, &reused);
    free(reused);
}

/* One rank per communicator: each calls twice on MPI_COMM_SELF and on a
 * split of its own. */
__attribute__((noinline)) static void single(int rank)
{
    MPI_Comm alone;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &alone);
    unsigned char *reused = malloc(4096);
    contiguous(MPI_COMM_SELF, MPI_BYTE, 4096, 0, 0, 2, &reused);
    contiguous(alone, MPI_BYTE, 4096, 0, 0, 2, &reused);
    free(reused);
    MPI_Comm_free(&alone);
}

static void all_sizes(MPI_Comm comm)
{
    static const int bytes[] = {1, 3, 64, 1000, 4096, 8191, 8192, 8193, 65536, 65537, 262144};
    const size_t nsizes = sizeof(bytes) / sizeof(bytes[0]) - (quick ? 1 : 0);
    int size;
    MPI_Comm_size(comm, &size);
    unsigned char *reused = malloc(262144 * (size_t)size + 64);
    for (size_t i = 0; i < nsizes; i++) {
        int iters = bytes[i] > 65536 || quick ? 2 : 4;
        contiguous(comm, MPI_BYTE, bytes[i], 0, 0, iters, &reused);
        contiguous(comm, MPI_BYTE, bytes[i], 1, 0, 2, &reused);
        contiguous(comm, MPI_BYTE, bytes[i], 0, 1, 2, &reused);
    }
    contiguous(comm, MPI_INT, 250, 0, 0, 3, &reused);
    contiguous(comm, MPI_DOUBLE, 3000, 0, 0, 3, &reused);
    contiguous(comm, MPI_DOUBLE, 3000, 1, 1, 2, &reused);
    derived(comm, 10);
    derived(comm, 5000);
    free(reused);
}

/* Even ranks against odd ranks: MPI_Allgather on an intercommunicator
 * fills the receive buffer with the remote group's blocks. */
__attribute__((noinline)) static void intercomm(int rank) /* its own call site */
{
    MPI_Comm local, inter;
    int remote;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - rank % 2, 77, &inter);
    MPI_Comm_remote_size(inter, &remote);
    const int block = 4096;
    unsigned char *send = malloc(block), *got = malloc((size_t)block * remote),
                  *want = malloc((size_t)block * remote);
    for (int it = 0; it < 3; it++) {
        fill(send, block, rank, it + 1000);
        memset(got, 0xee, (size_t)block * remote);
        memset(want, 0xdd, (size_t)block * remote);
        MPI_Allgather(send, block, MPI_BYTE, got, block, MPI_BYTE, inter);
        PMPI_Allgather(send, block, MPI_BYTE, want, block, MPI_BYTE, inter);
        compare(got, want, (size_t)block * remote, "intercomm", block, MPI_COMM_WORLD);
    }
    free(send);
    free(got);
    free(want);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int mix = 0;
    for (int i = 1; i < argc; i++) {
        quick |= !strcmp(argv[i], "quick");
        mix |= !strcmp(argv[i], "mix");
    }
    all_sizes(MPI_COMM_WORLD);
    if (mix)
        mixed(MPI_COMM_WORLD);
    single(rank);
    for (int round = 0; round < 2; round++) { /* communicators made and freed */
        MPI_Comm half, dup;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        unsigned char *reused = malloc(8192 * (size_t)size);
        contiguous(half, MPI_BYTE, 8192, 0, 0, 3, &reused);
        contiguous(dup, MPI_INT, 100, 0, 0, 3, &reused);
        contiguous(dup, MPI_BYTE, 2048, 0, 1, 2, &reused);
        free(reused);
        MPI_Comm_free(&half);
        MPI_Comm_free(&dup);
    }
    if (size > 1)
        intercomm(rank);
    long all_checks = 0, all_bad = 0;
    MPI_Reduce(&checks, &all_checks, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mismatches, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    unsigned long hall = 0;
    MPI_Reduce(&h, &hall, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("allgather_check: %d ranks, %ld checks, %ld mismatches, digest %016lx\n", size,
               all_checks, all_bad, hall);
    MPI_Finalize();
    return all_bad != 0;
}
