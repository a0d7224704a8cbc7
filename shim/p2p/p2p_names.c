/* The names table: handle -> name, lookups and counts (p2p_names.h). */
#include "p2p_names_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/runtime.h"

struct hb_names_state hb_names = {.keyval = MPI_KEYVAL_INVALID};

static const char *const texts[HB_P2P_NAME_STATUSES] = {
    [HB_P2P_NAMED] = "named",
    [HB_P2P_UNNAMED_UNKNOWN] = "not made by a wrapped constructor",
    [HB_P2P_UNNAMED_INTERCOMM] = "intercommunicator",
    [HB_P2P_UNNAMED_WORLDS] = "spans several MPI_COMM_WORLDs",
    [HB_P2P_UNNAMED_PARENT] = "parent has no name",
    [HB_P2P_UNNAMED_MISMATCH] = "members disagreed on the name",
    [HB_P2P_UNNAMED_PEER] = "another member had no name",
    [HB_P2P_UNNAMED_NO_MEMORY] = "no memory",
    [HB_P2P_UNNAMED_NULL] = "MPI_COMM_NULL",
    [HB_P2P_UNNAMED_DYNAMIC] = "dynamic processes (join)",
};

const char *hb_p2p_name_status_text(int status)
{
    return status >= 0 && status < HB_P2P_NAME_STATUSES ? texts[status] : "?";
}

static unsigned bucket_of(MPI_Comm comm)
{
    uint64_t key = 0;
    memcpy(&key, &comm, sizeof comm < sizeof key ? sizeof comm : sizeof key);
    return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54) % HB_NAMES_BUCKETS;
}

/* MPI_COMM_WORLD and MPI_COMM_SELF: fixed roots, never freed. */
static struct hb_names_entry *root(MPI_Comm comm)
{
    int rank = 0, size = 1;
    struct hb_names_entry *e = hb_names_put(comm);
    if (!e)
        return NULL;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(comm, &size);
    if (comm == MPI_COMM_WORLD)
        hb_p2p_name_world(&e->name);
    else
        hb_p2p_name_self(&e->name, rank);
    e->status = HB_P2P_NAMED;
    e->has_name = 1;
    e->size = size;
    e->tracked = 1;
    return e;
}

struct hb_names_entry *hb_names_find(MPI_Comm comm)
{
    for (struct hb_names_entry *e = hb_names.bucket[bucket_of(comm)]; e;
         e = e->next)
        if (e->comm == comm)
            return e;
    if (comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF)
        return root(comm);
    return NULL;
}

static void unlink_entry(struct hb_names_entry *e)
{
    struct hb_names_entry **p = &hb_names.bucket[bucket_of(e->comm)];
    while (*p != e)
        p = &(*p)->next;
    *p = e->next;
    hb_p2p_ordinals_free(&e->ord);
    free(e);
}

struct hb_names_entry *hb_names_put(MPI_Comm comm)
{
    for (struct hb_names_entry *e = hb_names.bucket[bucket_of(comm)]; e;
         e = e->next)
        if (e->comm == comm) {
            unlink_entry(e); /* a reused handle: the new creation wins */
            break;
        }
    struct hb_names_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    unsigned b = bucket_of(comm);
    e->comm = comm;
    e->next = hb_names.bucket[b];
    hb_names.bucket[b] = e;
    return e;
}

/* MPI calls it from inside the free (every path that frees comm). */
static int delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    hb_lock();
    for (struct hb_names_entry *e = hb_names.bucket[bucket_of(comm)]; e;
         e = e->next)
        if (e->comm == comm) {
            unlink_entry(e);
            break;
        }
    hb_unlock();
    return MPI_SUCCESS;
}

int hb_names_track(MPI_Comm comm)
{
    if (!hb_names.keyval_ready) {
        int rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn,
                                         &hb_names.keyval, NULL);
        if (rc != MPI_SUCCESS)
            return rc;
        hb_names.keyval_ready = 1;
    }
    return PMPI_Comm_set_attr(comm, hb_names.keyval, NULL);
}

/* First lookup of an idup'd communicator: the application uses it, so its
 * idup completed: attach the delete attribute now (not before: using the
 * handle earlier is erroneous), after making sure the handle still is the
 * communicator recorded (same size, same kind). */
static int adopt(MPI_Comm comm, int size, int was_inter)
{
    int inter = !was_inter, now = -1;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &now);
    return inter == was_inter && now == size &&
           hb_names_track(comm) == MPI_SUCCESS;
}

int hb_p2p_name_lookup(MPI_Comm comm, struct hb_p2p_name *out)
{
    if (comm == MPI_COMM_NULL)
        return HB_P2P_UNNAMED_NULL;
    hb_lock();
    struct hb_names_entry *e = hb_names_find(comm);
    int tracked = e ? e->tracked : 1, size = e ? e->size : 0;
    int inter = e && e->status == HB_P2P_UNNAMED_INTERCOMM;
    hb_unlock();
    if (!e)
        return HB_P2P_UNNAMED_UNKNOWN;
    int ok = tracked || adopt(comm, size, inter);
    hb_lock();
    e = hb_names_find(comm);
    int status = e ? e->status : HB_P2P_UNNAMED_UNKNOWN;
    if (e && !tracked && !e->tracked) {
        e->tracked = ok; /* once: setting it again would delete the entry */
        if (!ok)
            e->status = status = HB_P2P_UNNAMED_UNKNOWN;
    }
    if (status == HB_P2P_NAMED)
        *out = e->name;
    hb_unlock();
    return status;
}

void hb_p2p_names_counts(struct hb_p2p_names_counts *out)
{
    hb_lock();
    *out = hb_names.counts;
    hb_unlock();
}

/* Test hooks (tests/mpi/comm_names.c finds them with dlsym; exported so
 * that a test can compare names across ranks): the lookup and the path;
 * the claim and its verdict (the handshake's check, which the test runs
 * over its own messages). */
__attribute__((visibility("default"))) int
hotbuf_test_comm_name(MPI_Comm comm, uint64_t hash[2], char *path, size_t len)
{
    struct hb_p2p_name n;
    int status = hb_p2p_name_lookup(comm, &n);
    if (status == HB_P2P_NAMED) {
        hash[0] = n.hash[0];
        hash[1] = n.hash[1];
        snprintf(path, len, "%s", n.path);
    } else {
        hash[0] = hash[1] = 0;
        snprintf(path, len, "(%s)", hb_p2p_name_status_text(status));
    }
    return status;
}

__attribute__((visibility("default"))) int
hotbuf_test_comm_claim(MPI_Comm comm, void *claim, size_t len)
{
    if (len != sizeof(struct hb_p2p_name_claim))
        return -1;
    return hb_p2p_name_claim(comm, claim);
}

__attribute__((visibility("default"))) int
hotbuf_test_comm_verify(MPI_Comm comm, const void *claim, size_t len)
{
    if (len != sizeof(struct hb_p2p_name_claim))
        return -1;
    return hb_p2p_name_verify(comm, claim);
}

static int same(const struct hb_p2p_name *n, const uint64_t hash[2])
{
    return n->hash[0] == hash[0] && n->hash[1] == hash[1];
}

int hb_p2p_names_find(const uint64_t hash[2], MPI_Comm *out)
{
    struct hb_names_entry *w;
    int rc = -1;
    hb_lock();
    if ((w = hb_names_find(MPI_COMM_WORLD)) && same(&w->name, hash)) {
        *out = MPI_COMM_WORLD;
        rc = 0;
    }
    for (int b = 0; rc && b < HB_NAMES_BUCKETS; b++)
        for (struct hb_names_entry *e = hb_names.bucket[b]; rc && e;
             e = e->next)
            if (e->tracked && e->status == HB_P2P_NAMED &&
                same(&e->name, hash)) {
                *out = e->comm;
                rc = 0;
            }
    hb_unlock();
    return rc;
}
