/* Communicator names across processes (shim/p2p/p2p_names.h).
 *
 * Builds dup, dup_with_info, idup, split, split_type, create,
 * create_group, cart, cart_sub, graph, dist_graph(_adjacent),
 * intercomm_create and merge communicators, frees one and makes another
 * (handle reuse), and prints, on world rank 0, what MPI says of each
 * (size, sum of world ranks): the same with and without hotbuf.
 *
 * Under hotbuf (its test hooks hotbuf_test_comm_* are found with dlsym)
 * it also runs the pairwise check each rank would run in a handshake: on
 * every intracommunicator, a rank sends its claim to the next rank and
 * verifies the claim of the previous one.  Then it gathers every rank's
 * names and verdicts to rank 0, which checks: one label (one communicator)
 * has one name on all its members; two labels never share a name;
 * intercommunicators stay unnamed, the rest is named and verified, except
 * "mismatch", a split made after rank 0 bypassed hotbuf for one split
 * (PMPI_Comm_split): rank 0's name differs, and the two ranks whose check
 * involves rank 0's claim must refuse it and mark the communicator
 * unnamed.  The verdict goes to stderr ("comm_names: checked N, bad B"),
 * exit 1 if bad.
 *
 * Usage: comm_names [nodist]   (nodist: no MPI_Dist_graph_create) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXC 40

struct rec {
    char label[32];
    uint64_t h[2];
    int status, verify, after, expect_named, valid;
    char path[48];
};

/* The claim's size (shim/p2p/p2p_names.h: 40 bytes); opaque here. */
#define CLAIM 40

static int rank, size, ncomm;
static MPI_Comm comms[MAXC];
static char labels[MAXC][32];
static int expect_named[MAXC];

static void add(MPI_Comm c, int named, const char *fmt, int arg)
{
    if (c == MPI_COMM_NULL)
        return;
    comms[ncomm] = c;
    expect_named[ncomm] = named;
    snprintf(labels[ncomm], sizeof labels[0], fmt, arg);
    ncomm++;
}

/* What plain MPI says of every communicator, printed by world rank 0. */
static void describe(void)
{
    for (int i = 0; i < ncomm; i++) {
        int inter = 0, n = 0, sum = 0;
        MPI_Comm_test_inter(comms[i], &inter);
        if (inter) {
            MPI_Comm_remote_size(comms[i], &n);
            if (rank == 0)
                printf("%-16s inter, remote size %d\n", labels[i], n);
            continue;
        }
        MPI_Comm_size(comms[i], &n);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comms[i]);
        if (rank == 0)
            printf("%-16s size %d, world ranks sum %d\n", labels[i], n, sum);
    }
}

typedef int hook_fn(MPI_Comm, uint64_t[2], char *, size_t);
typedef int claim_fn(MPI_Comm, void *, size_t);
typedef int verify_fn(MPI_Comm, const void *, size_t);

/* One rank's check of comm: its claim to the next rank, the previous
 * rank's claim verified. */
static int pair_check(MPI_Comm comm, claim_fn *claim, verify_fn *verify)
{
    char mine[CLAIM], theirs[CLAIM];
    int me, n, inter = 0;
    MPI_Comm_test_inter(comm, &inter);
    if (inter)
        return -1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    claim(comm, mine, CLAIM);
    MPI_Sendrecv(mine, CLAIM, MPI_BYTE, (me + 1) % n, 99, theirs, CLAIM,
                 MPI_BYTE, (me + n - 1) % n, 99, comm, MPI_STATUS_IGNORE);
    return verify(comm, theirs, CLAIM);
}

/* The mismatch step: only the checks that involve rank 0's claim (rank 0's
 * own, which reads the last rank's, and rank 1's, which reads rank 0's)
 * can see it. */
static int judge_mismatch(const struct rec *a, int r, const struct rec *r0)
{
    int bad = 0;
    if (r > 0 && a->h[0] == r0->h[0] && a->h[1] == r0->h[1]) {
        fprintf(stderr, "comm_names: mismatch: rank %d has rank 0's name\n", r);
        bad++;
    }
    if ((r <= 1) != (a->verify != 0) || (a->verify != 0) != (a->after != 0)) {
        fprintf(stderr, "comm_names: mismatch: rank %d verify %d, then %d\n", r,
                a->verify, a->after);
        bad++;
    }
    return bad;
}

/* Rank 0's verdict on everyone's names (stderr). */
static int judge(const struct rec *all, int n)
{
    int bad = 0, checked = 0;
    for (int i = 0; i < n; i++) {
        const struct rec *a = &all[i];
        if (!a->valid)
            continue;
        checked++;
        if (!strcmp(a->label, "mismatch")) {
            const struct rec *r0 = all;
            while (strcmp(r0->label, "mismatch")) /* rank 0's, by label */
                r0++;
            bad += judge_mismatch(a, i / MAXC, r0);
            continue;
        }
        if (a->expect_named && (a->verify != 0 || a->after != 0)) {
            fprintf(stderr, "comm_names: %s: verify %d, then %d\n", a->label,
                    a->verify, a->after);
            bad++;
        }
        if (a->expect_named != (a->status == 0)) {
            fprintf(stderr, "comm_names: %s: status %d %s\n", a->label,
                    a->status, a->path);
            bad++;
        }
        for (int j = i + 1; j < n; j++) {
            const struct rec *b = &all[j];
            if (!b->valid || !strcmp(b->label, "mismatch"))
                continue;
            int same_label = !strcmp(a->label, b->label);
            int same_name = a->status == 0 && b->status == 0 &&
                            a->h[0] == b->h[0] && a->h[1] == b->h[1];
            if (same_label && (a->status != b->status ||
                               (a->status == 0 && !same_name))) {
                fprintf(stderr, "comm_names: %s: members disagree (%s, %s)\n",
                        a->label, a->path, b->path);
                bad++;
            } else if (!same_label && same_name) {
                fprintf(stderr, "comm_names: %s and %s share a name (%s)\n",
                        a->label, b->label, a->path);
                bad++;
            }
        }
    }
    fprintf(stderr, "comm_names: checked %d, bad %d\n", checked, bad);
    return bad;
}

static int check_names(hook_fn *hook, claim_fn *claim, verify_fn *verify)
{
    struct rec mine[MAXC];
    memset(mine, 0, sizeof mine);
    for (int i = 0; i < ncomm; i++) {
        snprintf(mine[i].label, sizeof mine[i].label, "%s", labels[i]);
        mine[i].status = hook(comms[i], mine[i].h, mine[i].path,
                              sizeof mine[i].path);
        mine[i].expect_named = expect_named[i];
        mine[i].valid = 1;
    }
    for (int i = 0; i < ncomm; i++) { /* after every lookup: a refusal marks */
        char path[48];
        uint64_t h[2];
        mine[i].verify = pair_check(comms[i], claim, verify);
        mine[i].after = hook(comms[i], h, path, sizeof path);
    }
    struct rec *all = rank == 0 ? malloc(sizeof mine * size) : NULL;
    MPI_Gather(mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    int bad = 0;
    if (rank == 0) {
        for (int i = 0; i < ncomm; i++)
            fprintf(stderr, "comm_names: %-16s %s\n", all[i].label,
                    all[i].path);
        bad = judge(all, MAXC * size);
        free(all);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return bad;
}

/* A freed communicator has left hotbuf's table (its handle is not used
 * with MPI: hotbuf's lookup of an unknown handle calls no MPI function). */
static int freed_named;
static void freed_name(MPI_Comm gone)
{
    hook_fn *hook = (hook_fn *)dlsym(RTLD_DEFAULT, "hotbuf_test_comm_name");
    uint64_t h[2];
    char path[48];
    if (hook && hook(gone, h, path, sizeof path) == 0) {
        fprintf(stderr, "comm_names: a freed communicator keeps %s\n", path);
        freed_named = 1;
    }
}

static void build_topologies(int dist)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0}, remain[2] = {1, 0};
    MPI_Comm cart, sub, graph, dg, dga;
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    add(cart, 1, "cart", 0);
    int coords[2];
    MPI_Cart_coords(cart, rank, 2, coords);
    MPI_Cart_sub(cart, remain, &sub);
    add(sub, 1, "cart_sub:%d", coords[1]);

    int *index = malloc(size * sizeof *index), *edges = malloc(size * sizeof *edges);
    for (int i = 0; i < size; i++) {
        index[i] = i + 1;
        edges[i] = (i + 1) % size;
    }
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
    add(graph, 1, "graph", 0);
    free(index);
    free(edges);

    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &from, MPI_UNWEIGHTED,
                                   1, &to, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                   &dga);
    add(dga, 1, "dgraph_adj", 0);
    if (dist) {
        int one = 1;
        MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &one, &to,
                              MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
        add(dg, 1, "dgraph", 0);
    }
}

static void build_inter(void)
{
    MPI_Comm half, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    add(half, 1, "half:%d", rank % 2);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 5, &inter);
    add(inter, 0, "inter", 0);
    MPI_Intercomm_merge(inter, rank % 2, &merged);
    add(merged, 0, "merged", 0); /* Intercomm_create is not named yet */
}

int main(int argc, char **argv)
{
    int dist = !(argc > 1 && !strcmp(argv[1], "nodist"));
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm d1, d2, d3, dd, di, id, sp, sp2, st, cr, cg, sd, mis, bypass;
    MPI_Request req;
    add(MPI_COMM_WORLD, 1, "world", 0);
    add(MPI_COMM_SELF, 1, "self:%d", rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &d1);
    add(d1, 1, "dup1", 0);
    MPI_Comm_dup(MPI_COMM_WORLD, &d2);
    MPI_Comm_dup(d1, &dd);
    add(dd, 1, "dup1.dup", 0);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &di);
    add(di, 1, "dup_info", 0);
    MPI_Comm_idup(MPI_COMM_WORLD, &id, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    add(id, 1, "idup", 0);
#ifdef MPICH_VERSION /* MPI-4; not in Open MPI 4.1 */
    MPI_Comm idi;
    MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &idi, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    add(idi, 1, "idup_info", 0);
#endif
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sp);
    add(sp, 1, "split:%d", rank % 2);
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2 ? 0 : MPI_UNDEFINED, rank,
                   &sp2);
    add(sp2, 1, "split_low", 0);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                        MPI_INFO_NULL, &st);
    add(st, 1, "split_type", 0);

    MPI_Group world, even, pair;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ranks[64], n = 0;
    for (int r = (size - 1) / 2 * 2; r >= 0; r -= 2)
        ranks[n++] = r; /* even ranks, reversed */
    MPI_Group_incl(world, n, ranks, &even);
    MPI_Comm_create(MPI_COMM_WORLD, even, &cr);
    add(cr, 1, "create_even", 0);
    int two[2] = {0, 1};
    MPI_Group_incl(world, 2, two, &pair);
    cg = MPI_COMM_NULL;
    if (rank < 2)
        MPI_Comm_create_group(MPI_COMM_WORLD, pair, 7, &cg);
    add(cg, 1, "create_group", 0);

    build_topologies(dist);
    build_inter();

    /* A handle freed and reused: the new communicator is another one. */
    MPI_Comm gone = d2;
    MPI_Comm_free(&d2);
    freed_name(gone);
    MPI_Comm_dup(MPI_COMM_WORLD, &d3);
    add(d3, 1, "dup3", 0);
    MPI_Comm_dup(sp, &sd);
    add(sd, 1, "split.dup:%d", rank % 2);

    /* Rank 0 bypasses hotbuf for one split: its next split on WORLD
     * counts differently, and the pairwise check must see it. */
    if (rank == 0)
        PMPI_Comm_split(MPI_COMM_WORLD, 0, rank, &bypass);
    else
        MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &bypass);
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &mis);
    add(mis, 1, "mismatch", 0);

    describe();
    hook_fn *hook = (hook_fn *)dlsym(RTLD_DEFAULT, "hotbuf_test_comm_name");
    claim_fn *claim = (claim_fn *)dlsym(RTLD_DEFAULT, "hotbuf_test_comm_claim");
    verify_fn *verify =
        (verify_fn *)dlsym(RTLD_DEFAULT, "hotbuf_test_comm_verify");
    int bad = hook && claim && verify ? check_names(hook, claim, verify) : 0;
    bad += freed_named;
    if (rank == 0)
        printf("comm_names: %d communicators\n", ncomm);
    MPI_Group_free(&pair);
    MPI_Group_free(&even);
    MPI_Group_free(&world);
    MPI_Finalize();
    return bad ? 1 : 0;
}
