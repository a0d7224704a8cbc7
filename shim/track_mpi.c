/* MPI arguments -> tracker (see track_mpi.h). */
#include "track_mpi.h"

#include <string.h>

#include "runtime.h"

/* Extent information of a datatype, as a buffer key needs it. */
struct dtinfo {
    MPI_Datatype type;
    int64_t size, true_lb, extent, true_extent;
};

/* Predefined datatypes never change or go away, so their extents can be
 * cached for the life of the job; derived types can be freed and their
 * handles reused, so they are queried on every call. */
#define DT_SLOTS 128
static struct dtinfo dt_cache[DT_SLOTS];

static unsigned dt_slot(MPI_Datatype t)
{
    uint64_t h = 0; /* MPI_Datatype is a pointer in Open MPI, an int in MPICH */
    memcpy(&h, &t, sizeof(t) < sizeof(h) ? sizeof(t) : sizeof(h));
    return (unsigned)((h * 0x61C8864680B583EBull) >> 57) & (DT_SLOTS - 1);
}

static int dt_query(MPI_Datatype t, struct dtinfo *d)
{
    int size;
    MPI_Aint lb, extent, tlb, textent;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(t, &tlb, &textent) != MPI_SUCCESS)
        return -1;
    *d = (struct dtinfo){t, size, tlb, extent, textent};
    return 0;
}

void hb_datatypes_init(void)
{
    const MPI_Datatype predefined[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED_SHORT,
        MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG,
        MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_C_BOOL,
        MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T,
        MPI_UINT32_T, MPI_UINT64_T, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_INTEGER,
        MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_LOGICAL,
        MPI_CHARACTER, MPI_AINT, MPI_OFFSET, MPI_WCHAR,
    };
    memset(dt_cache, 0, sizeof(dt_cache));
    for (size_t i = 0; i < sizeof(predefined) / sizeof(predefined[0]); i++) {
        struct dtinfo d;
        if (predefined[i] == MPI_DATATYPE_NULL || dt_query(predefined[i], &d))
            continue;
        struct dtinfo *slot = &dt_cache[dt_slot(predefined[i])];
        if (slot->size == 0) /* first come keeps a colliding slot */
            *slot = d;
    }
}

static int dt_info(MPI_Datatype t, struct dtinfo *tmp, const struct dtinfo **out)
{
    const struct dtinfo *c = &dt_cache[dt_slot(t)];
    if (c->size && c->type == t) {
        *out = c;
        return 0;
    }
    if (dt_query(t, tmp))
        return -1;
    *out = tmp;
    return 0;
}

/* The span a call touches is the true extent of count elements: for
 * derived types that can start before buf (negative lb) and have holes, so
 * the key is buf + true_lb, not buf. */
static int use_of(const void *buf, int count, MPI_Datatype type, struct hb_use *u)
{
    struct dtinfo tmp;
    const struct dtinfo *d;
    if (count <= 0 || dt_info(type, &tmp, &d))
        return -1;
    u->bytes = (uint64_t)count * (uint64_t)d->size;
    u->addr = (const char *)buf + d->true_lb;
    int64_t span = (int64_t)(count - 1) * d->extent + d->true_extent;
    u->span = span > 0 ? (uint64_t)span : u->bytes;
    return u->bytes ? 0 : -1;
}

void hb_track_use(unsigned op, const struct hb_use *u, int empty, int proc_null, void *ret)
{
    hb_lock();
    if (empty)
        hb_tracker_record_empty(&hb_rt.tracker, op, proc_null, ret);
    else
        hb_tracker_record(&hb_rt.tracker, op, u, ret);
    hb_unlock();
}

int hb_use_compute(const void *buf, int count, MPI_Datatype type, int peer, struct hb_use *u,
                   int *proc_null)
{
    *proc_null = peer == MPI_PROC_NULL;
    return *proc_null || use_of(buf, count, type, u) != 0;
}

void hb_track(unsigned op, const void *buf, int count, MPI_Datatype type, int peer, void *ret)
{
    struct hb_use u;
    int proc_null;
    int empty = hb_use_compute(buf, count, type, peer, &u, &proc_null);
    hb_track_use(op, &u, empty, proc_null, ret);
}

void hb_track_allgather(const void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        void *ret)
{
    int n = 1;
    struct hb_use u;
    PMPI_Comm_size(comm, &n);
    int64_t total = (int64_t)recvcount * n;
    int empty = total > 0x7fffffff || use_of(recvbuf, (int)total, recvtype, &u) != 0;
    hb_track_use(HB_OP_ALLGATHER, &u, empty, 0, ret);
}
