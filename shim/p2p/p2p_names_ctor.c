/* The constructors' hooks: one step of the creation path each, the
 * members folded in (p2p_names.h). */
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/runtime.h"
#include "p2p_names_int.h"

/* What a constructor adds to its parent's name.  key: the sequence
 * number's key beyond the kind (0 for collectives over the parent; tag
 * and group for Comm_create_group). */
struct step {
    enum hb_p2p_ctor kind;
    uint64_t key;
    const int64_t *args;
    size_t nargs;
};

/* The MPI_COMM_WORLD ranks of g's members, in g's order (malloc'd; NULL
 * when out of memory). */
static int *world_ranks(MPI_Group g, int *size)
{
    MPI_Group world;
    PMPI_Group_size(g, size);
    int *in = malloc(2 * (size_t)(*size ? *size : 1) * sizeof *in);
    if (!in)
        return NULL;
    for (int i = 0; i < *size; i++)
        in[i] = i;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_translate_ranks(g, *size, in, world, in + *size);
    PMPI_Group_free(&world);
    memmove(in, in + *size, (size_t)*size * sizeof *in);
    return in;
}

int64_t hb_names_group_digest(MPI_Group g)
{
    int size = 0, *r = world_ranks(g, &size);
    int64_t d = r ? hb_p2p_name_digest_ranks(r, size) : 0;
    free(r);
    return d;
}

/* Folds comm's members into n: an intracommunicator's in rank order; an
 * intercommunicator's two groups in an order both sides see alike. */
static int fold_members(struct hb_p2p_name *n, MPI_Comm comm, int inter)
{
    MPI_Group g;
    PMPI_Comm_group(comm, &g);
    if (!inter) {
        int size = 0, *r = world_ranks(g, &size);
        PMPI_Group_free(&g);
        if (!r)
            return -1;
        hb_p2p_name_members(n, r, size);
        free(r);
        return 0;
    }
    MPI_Group rg;
    PMPI_Comm_remote_group(comm, &rg);
    int64_t a = hb_names_group_digest(g), b = hb_names_group_digest(rg);
    int ranks[4] = {(int)(a < b ? a : b), (int)((a < b ? a : b) >> 32),
                    (int)(a < b ? b : a), (int)((a < b ? b : a) >> 32)};
    hb_p2p_name_members(n, ranks, 4);
    PMPI_Group_free(&rg);
    PMPI_Group_free(&g);
    return 0;
}

/* The new communicator's entry; name NULL when it has none (status says
 * why).  Not under the lock. */
static void finish(MPI_Comm comm, struct hb_p2p_name *name, int status)
{
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &size);
    int one = hb_comm_one_world(comm);
    if (!one)
        name = NULL, status = HB_P2P_UNNAMED_WORLDS;
    if (name && fold_members(name, comm, inter) != 0)
        name = NULL, status = HB_P2P_UNNAMED_NO_MEMORY;
    if (inter && status == HB_P2P_NAMED)
        status = HB_P2P_UNNAMED_INTERCOMM; /* name kept for Intercomm_merge */
    hb_lock();
    struct hb_names_entry *e = hb_names_put(comm);
    if (e) {
        e->status = status;
        e->has_name = name && (status == HB_P2P_NAMED ||
                               status == HB_P2P_UNNAMED_INTERCOMM);
        if (name)
            e->name = *name;
        e->size = size;
        e->tracked = 1;
    }
    hb_names.counts.per_status[e ? status : HB_P2P_UNNAMED_NO_MEMORY]++;
    hb_unlock();
    if (e && hb_names_track(comm) != MPI_SUCCESS) {
        hb_lock();
        struct hb_names_entry *again = hb_names_find(comm);
        if (again)
            again->status = HB_P2P_UNNAMED_UNKNOWN, again->has_name = 0;
        hb_unlock();
    }
}

/* The parent's name with the step applied, or the reason there is none;
 * counts the step on the parent either way (every member of the parent,
 * also the ones that get MPI_COMM_NULL, so sequence numbers agree). */
static int derive(struct hb_names_entry *p, const struct step *s,
                  struct hb_p2p_name *out)
{
    uint32_t seq = 0;
    if (!p)
        return HB_P2P_UNNAMED_PARENT;
    if (hb_p2p_ordinal_next(&p->ord, (uint64_t)s->kind, s->key, &seq) != 0)
        return HB_P2P_UNNAMED_NO_MEMORY;
    if (!p->has_name)
        return HB_P2P_UNNAMED_PARENT;
    hb_p2p_name_child(out, &p->name, s->kind, seq, s->args, s->nargs);
    return HB_P2P_NAMED;
}

static void record(MPI_Comm parent, const struct step *s, MPI_Comm comm)
{
    struct hb_p2p_name name;
    hb_lock();
    int status = derive(hb_names_find(parent), s, &name);
    hb_unlock();
    if (comm != MPI_COMM_NULL)
        finish(comm, status == HB_P2P_NAMED ? &name : NULL, status);
}

/* ---- the hooks ------------------------------------------------------- */

void hb_p2p_names_dup(MPI_Comm parent, MPI_Comm newcomm, int with_info)
{
    struct step s = {.kind = with_info ? HB_P2P_CTOR_DUP_WITH_INFO
                                       : HB_P2P_CTOR_DUP};
    record(parent, &s, newcomm);
}

void hb_p2p_names_split(MPI_Comm parent, int color, MPI_Comm newcomm)
{
    int64_t a = color;
    struct step s = {HB_P2P_CTOR_SPLIT, 0, &a, 1};
    record(parent, &s, newcomm);
}

void hb_p2p_names_split_type(MPI_Comm parent, int type, MPI_Comm newcomm)
{
    int64_t a = type;
    struct step s = {HB_P2P_CTOR_SPLIT_TYPE, 0, &a, 1};
    record(parent, &s, newcomm);
}

void hb_p2p_names_create(MPI_Comm parent, MPI_Group group, MPI_Comm newcomm)
{
    /* Open MPI and MPICH give the group's members their order: the
     * members fold it in, the digest tells two groups' steps apart. */
    int64_t a = newcomm != MPI_COMM_NULL ? hb_names_group_digest(group) : 0;
    struct step s = {HB_P2P_CTOR_CREATE, 0, &a, 1};
    record(parent, &s, newcomm);
}

void hb_p2p_names_create_group(MPI_Comm parent, MPI_Group group, int tag,
                               MPI_Comm newcomm)
{
    /* Collective over the group only: its own sequence per (tag, group). */
    int64_t a[2] = {tag, hb_names_group_digest(group)};
    struct step s = {HB_P2P_CTOR_CREATE_GROUP,
                     (uint64_t)a[1] ^ ((uint64_t)(uint32_t)tag << 1), a, 2};
    record(parent, &s, newcomm);
}

/* Arguments as int64, from up to three int arrays and a tail value. */
static int64_t *pack(size_t *n, const int *x, size_t nx, const int *y,
                     size_t ny, int logical_y, int64_t tail)
{
    int64_t *a = malloc((nx + ny + 2) * sizeof *a);
    if (!a)
        return NULL;
    size_t k = 0;
    a[k++] = (int64_t)nx;
    for (size_t i = 0; i < nx; i++)
        a[k++] = x[i];
    for (size_t i = 0; i < ny; i++)
        a[k++] = logical_y ? !!y[i] : y[i];
    a[k++] = tail;
    *n = k;
    return a;
}

static void record_packed(MPI_Comm parent, enum hb_p2p_ctor kind, int64_t *a,
                          size_t n, MPI_Comm newcomm)
{
    struct step s = {kind, 0, a, n};
    if (!a) { /* still counted on the parent; no name */
        s.nargs = 0;
        record(parent, &s, MPI_COMM_NULL);
        if (newcomm != MPI_COMM_NULL)
            finish(newcomm, NULL, HB_P2P_UNNAMED_NO_MEMORY);
        return;
    }
    record(parent, &s, newcomm);
    free(a);
}

void hb_p2p_names_cart(MPI_Comm parent, int ndims, const int dims[],
                       const int periods[], int reorder, MPI_Comm newcomm)
{
    size_t n = 0, nd = ndims > 0 ? (size_t)ndims : 0;
    int64_t *a = pack(&n, dims, nd, periods, nd, 1, !!reorder);
    record_packed(parent, HB_P2P_CTOR_CART_CREATE, a, n, newcomm);
}

void hb_p2p_names_cart_sub(MPI_Comm parent, const int remain[],
                           MPI_Comm newcomm)
{
    int nd = 0;
    PMPI_Cartdim_get(parent, &nd);
    size_t n = 0;
    int64_t *a = pack(&n, remain, nd > 0 ? (size_t)nd : 0, NULL, 0, 0, 0);
    if (a)
        for (int i = 0; i < nd; i++)
            a[1 + i] = !!remain[i];
    record_packed(parent, HB_P2P_CTOR_CART_SUB, a, n, newcomm);
}

void hb_p2p_names_graph(MPI_Comm parent, int nnodes, const int index[],
                        const int edges[], int reorder, MPI_Comm newcomm)
{
    size_t nn = nnodes > 0 ? (size_t)nnodes : 0;
    size_t ne = nn && index[nn - 1] > 0 ? (size_t)index[nn - 1] : 0;
    size_t n = 0;
    int64_t *a = pack(&n, index, nn, edges, ne, 0, !!reorder);
    record_packed(parent, HB_P2P_CTOR_GRAPH_CREATE, a, n, newcomm);
}

void hb_p2p_names_dist_graph(MPI_Comm parent, int adjacent, int reorder,
                             MPI_Comm newcomm)
{
    /* The edges are each rank's own: only reorder is common. */
    int64_t a = !!reorder;
    struct step s = {adjacent ? HB_P2P_CTOR_DIST_GRAPH_ADJACENT
                              : HB_P2P_CTOR_DIST_GRAPH_CREATE,
                     0, &a, 1};
    record(parent, &s, newcomm);
}

void hb_p2p_names_merge(MPI_Comm inter, MPI_Comm newcomm)
{
    struct step s = {.kind = HB_P2P_CTOR_INTERCOMM_MERGE};
    record(inter, &s, newcomm);
}

/* An intercommunicator's hidden name (it stays on MPI; Intercomm_merge
 * builds on it): both sides know the tag and both groups, not each
 * other's local communicator, so the name starts from those. */
void hb_p2p_names_intercomm(MPI_Comm local, int tag, MPI_Comm newcomm)
{
    struct hb_p2p_name name;
    uint32_t seq = 0;
    int64_t a = tag;
    hb_lock();
    int rc = hb_p2p_ordinal_next(&hb_names.global,
                                 (uint64_t)HB_P2P_CTOR_INTERCOMM_CREATE,
                                 (uint64_t)(uint32_t)tag, &seq);
    hb_unlock();
    hb_p2p_name_root(&name, HB_P2P_CTOR_INTERCOMM_CREATE, seq, &a, 1);
    if (newcomm != MPI_COMM_NULL)
        finish(newcomm, rc == 0 ? &name : NULL,
               rc == 0 ? HB_P2P_NAMED : HB_P2P_UNNAMED_NO_MEMORY);
}

void hb_p2p_names_unnamed(MPI_Comm newcomm, int status)
{
    if (newcomm == MPI_COMM_NULL)
        return;
    hb_lock();
    struct hb_names_entry *e = hb_names_put(newcomm);
    if (e)
        e->status = status, e->tracked = 1;
    hb_names.counts.per_status[status]++;
    hb_unlock();
    if (e)
        hb_names_track(newcomm);
}

void hb_p2p_names_idup(MPI_Comm parent, MPI_Comm newcomm, int with_info)
{
    struct step s = {.kind = with_info ? HB_P2P_CTOR_IDUP_WITH_INFO
                                       : HB_P2P_CTOR_IDUP};
    struct hb_p2p_name name;
    memset(&name, 0, sizeof name);
    int inter = 0, size = 0;
    hb_lock();
    int status = derive(hb_names_find(parent), &s, &name);
    hb_unlock();
    if (newcomm == MPI_COMM_NULL)
        return;
    PMPI_Comm_test_inter(parent, &inter);
    PMPI_Comm_size(parent, &size);
    int one = hb_comm_one_world(parent);
    if (!one)
        status = HB_P2P_UNNAMED_WORLDS;
    if (status == HB_P2P_NAMED && fold_members(&name, parent, inter) != 0)
        status = HB_P2P_UNNAMED_NO_MEMORY;
    int named = status == HB_P2P_NAMED;
    if (inter && named)
        status = HB_P2P_UNNAMED_INTERCOMM;
    hb_lock();
    struct hb_names_entry *e = hb_names_put(newcomm);
    if (e) {
        e->status = status;
        e->has_name = named;
        e->name = name;
        e->size = size;
        e->tracked = 0; /* attribute at the first lookup (p2p_names.c) */
    }
    hb_names.counts.per_status[e ? status : HB_P2P_UNNAMED_NO_MEMORY]++;
    hb_unlock();
}
