/* A shared linked list in a dynamic window (MPI_Win_create_dynamic +
 * MPI_Win_attach), in the manner of MPICH's test/mpi/rma/linked_list*.c:
 * every rank appends NELEMS elements of its own, allocated with
 * MPI_Alloc_mem and attached one by one, to a list whose head lives on
 * rank 0, by compare-and-swap on the tail's next pointer.
 *
 *   dyn_linked_list lock_all   one MPI_Win_lock_all epoch, flushes
 *   dyn_linked_list shared     MPI_Win_lock(SHARED) per operation
 *   dyn_linked_list nocheck    the same with MPI_MODE_NOCHECK
 *
 * Rank 0 then walks the list and prints how many elements each rank
 * contributed (the order of the list is not deterministic; the counts
 * are).  Any MPI error aborts (MPI_ERRORS_ARE_FATAL on the window). */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NELEMS 48 /* more than osc rdma's default 32 attachments */

struct ptr {
    int rank;
    MPI_Aint disp;
};

struct elem {
    struct ptr next;
    int value;
};

static const struct ptr nil = {-1, 0};
static int mode_lock_all, assert_flag;
static struct elem *mine[NELEMS + 1];
static int nmine;

/* Opens an access epoch to target, unless one lock_all covers all. */
static void begin(MPI_Win win, int target)
{
    if (!mode_lock_all)
        MPI_Win_lock(MPI_LOCK_SHARED, target, assert_flag, win);
}

static void end(MPI_Win win, int target)
{
    if (mode_lock_all)
        MPI_Win_flush(target, win);
    else
        MPI_Win_unlock(target, win);
}

static struct ptr new_elem(MPI_Win win, int rank, int value)
{
    struct elem *e;
    struct ptr p;

    MPI_Alloc_mem(sizeof *e, MPI_INFO_NULL, &e);
    e->value = value;
    e->next = nil;
    MPI_Win_attach(win, e, sizeof *e);
    mine[nmine++] = e;
    p.rank = rank;
    MPI_Get_address(e, &p.disp);
    return p;
}

/* Reads the tail's next.disp until its owner has written it. */
static struct ptr follow(MPI_Win win, struct ptr tail, int next_rank)
{
    struct ptr n = {next_rank, 0};
    MPI_Aint dummy = 0;

    do {
        begin(win, tail.rank);
        MPI_Fetch_and_op(&dummy, &n.disp, MPI_AINT, tail.rank,
                         tail.disp + offsetof(struct elem, next.disp),
                         MPI_NO_OP, win);
        end(win, tail.rank);
    } while (n.disp == 0);
    return n;
}

/* Appends elem after the list's last element; returns the new tail. */
static struct ptr append(MPI_Win win, struct ptr tail, struct ptr elem)
{
    for (;;) {
        int prev = -2;

        begin(win, tail.rank);
        MPI_Compare_and_swap(&elem.rank, &nil.rank, &prev, MPI_INT,
                             tail.rank,
                             tail.disp + offsetof(struct elem, next.rank),
                             win);
        end(win, tail.rank);
        if (prev == nil.rank)
            break;
        tail = follow(win, tail, prev);
    }
    begin(win, tail.rank);
    MPI_Accumulate(&elem.disp, 1, MPI_AINT, tail.rank,
                   tail.disp + offsetof(struct elem, next.disp), 1, MPI_AINT,
                   MPI_REPLACE, win);
    end(win, tail.rank);
    return elem;
}

/* Rank 0: walks the list from head, counting elements per rank. */
static void walk(MPI_Win win, struct ptr head, int size)
{
    int *count = calloc((size_t)size, sizeof *count), total = 0;
    struct ptr p = head;

    while (p.rank != nil.rank) {
        struct elem e;

        begin(win, p.rank);
        MPI_Get(&e, sizeof e, MPI_BYTE, p.rank, p.disp, sizeof e, MPI_BYTE,
                win);
        end(win, p.rank);
        if (e.value >= 0 && e.value < size)
            count[e.value]++;
        total++;
        p = e.next;
    }
    printf("list: %d elements after the head\n", total - 1);
    for (int r = 0; r < size; r++)
        printf("rank %d: %d elements\n", r, count[r]);
    free(count);
}

static int parse_mode(const char *m)
{
    if (strcmp(m, "lock_all") == 0)
        mode_lock_all = 1;
    else if (strcmp(m, "nocheck") == 0)
        assert_flag = MPI_MODE_NOCHECK;
    else if (strcmp(m, "shared") != 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size;
    struct ptr head, tail;
    MPI_Win win, big = MPI_WIN_NULL;
    char *big_base = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || argc > 3 || parse_mode(argv[1]) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: %s lock_all|shared|nocheck [KiB]\n",
                    argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (argc == 3) {
        /* a window of KiB bytes per rank, alive during the list */
        MPI_Aint bytes = (MPI_Aint)atol(argv[2]) * 1024;
        MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &big_base,
                         &big);
        memset(big_base, 0, (size_t)bytes);
        MPI_Win_fence(0, big);
        MPI_Put(&rank, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, big);
        MPI_Win_fence(0, big);
    }
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL);
    head = nil;
    if (rank == 0)
        head = new_elem(win, 0, -1);
    MPI_Bcast(&head.disp, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    head.rank = 0;
    tail = head;
    if (mode_lock_all)
        MPI_Win_lock_all(assert_flag, win);
    for (int i = 0; i < NELEMS; i++)
        tail = append(win, tail, new_elem(win, rank, rank));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        walk(win, head, size);
    if (mode_lock_all)
        MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < nmine; i++) {
        MPI_Win_detach(win, mine[i]);
        MPI_Free_mem(mine[i]);
    }
    MPI_Win_free(&win);
    if (big != MPI_WIN_NULL)
        MPI_Win_free(&big);
    MPI_Finalize();
    return 0;
}
