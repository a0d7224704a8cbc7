/* MPI arguments -> tracker (see track_mpi.h). */
#include "track_mpi.h"

#include <string.h>

#include "runtime.h"
#include "util/hash.h"

/* Extent information of a datatype, as a buffer key needs it. */
struct dtinfo {
    MPI_Datatype type;
    int64_t size, true_lb, extent, true_extent;
};

/* Global: read inline by every wrapper (hb_track), which has no context. */
struct hb_dt_slot hb_dt_cache[HB_DT_SLOTS];
struct hb_entry *hb_track_last;
uint64_t hb_dt_mult = HB_GOLDEN_RATIO_64;

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

/* Predefined types whose elements are packed end to end: for them the
 * span of count elements is simply count x size. */
static size_t packed_predefined(struct dtinfo *out, size_t max)
{
    const MPI_Datatype predefined[] = {
        MPI_CHAR,
        MPI_SIGNED_CHAR,
        MPI_UNSIGNED_CHAR,
        MPI_BYTE,
        MPI_SHORT,
        MPI_UNSIGNED_SHORT,
        MPI_INT,
        MPI_UNSIGNED,
        MPI_LONG,
        MPI_UNSIGNED_LONG,
        MPI_LONG_LONG,
        MPI_UNSIGNED_LONG_LONG,
        MPI_FLOAT,
        MPI_DOUBLE,
        MPI_LONG_DOUBLE,
        MPI_C_BOOL,
        MPI_INT8_T,
        MPI_INT16_T,
        MPI_INT32_T,
        MPI_INT64_T,
        MPI_UINT8_T,
        MPI_UINT16_T,
        MPI_UINT32_T,
        MPI_UINT64_T,
        MPI_C_FLOAT_COMPLEX,
        MPI_C_DOUBLE_COMPLEX,
        MPI_INTEGER,
        MPI_REAL,
        MPI_DOUBLE_PRECISION,
        MPI_COMPLEX,
        MPI_DOUBLE_COMPLEX,
        MPI_LOGICAL,
        MPI_CHARACTER,
        MPI_AINT,
        MPI_OFFSET,
        MPI_WCHAR,
    };
    size_t n = 0;
    for (size_t i = 0;
         i < sizeof(predefined) / sizeof(predefined[0]) && n < max; i++) {
        struct dtinfo d;
        if (predefined[i] == MPI_DATATYPE_NULL || dt_query(predefined[i], &d))
            continue;
        if (d.true_lb != 0 || d.extent != d.size || d.true_extent != d.size ||
            d.size <= 0)
            continue;
        int dup = 0; /* MPICH aliases some (MPI_INT32_T may be MPI_INT) */
        for (size_t k = 0; k < n; k++)
            dup |= out[k].type == d.type;
        if (!dup)
            out[n++] = d;
    }
    return n;
}

/* Fills the cache under multiplier mult; 0 if every type got its own slot. */
static int fill_cache(const struct dtinfo *types, size_t n, uint64_t mult)
{
    int collisions = 0;
    hb_dt_mult = mult;
    memset(hb_dt_cache, 0, sizeof(hb_dt_cache));
    for (size_t i = 0; i < n; i++) {
        struct hb_dt_slot *slot = &hb_dt_cache[hb_dt_slot_of(types[i].type)];
        if (slot->size) { /* first come keeps the slot; the other takes the slow path */
            collisions++;
            continue;
        }
        slot->type = types[i].type;
        slot->size = (uint64_t)types[i].size;
    }
    return collisions;
}

void hb_datatypes_init(void)
{
    struct dtinfo types[64];
    size_t n = packed_predefined(types, 64);
    uint64_t mult = HB_GOLDEN_RATIO_64, best = mult;
    int fewest = fill_cache(types, n, mult);
    for (int tries = 0; fewest && tries < 4096; tries++) {
        mult = mult * 6364136223846793005ull + 1442695040888963407ull; /* LCG */
        int c = fill_cache(types, n, mult | 1);
        if (c < fewest)
            fewest = c, best = mult | 1;
    }
    fill_cache(types, n, best);
}

/* The span a call touches is the true extent of count elements: for
 * derived types that can start before buf (negative lb) and have holes, so
 * the key is buf + true_lb, not buf. */
static int use_of(const void *buf, int count, MPI_Datatype type,
                  struct hb_use *u)
{
    struct dtinfo tmp, *d = &tmp;
    if (count <= 0 || dt_query(type, &tmp))
        return -1;
    u->bytes = (uint64_t)count * (uint64_t)d->size;
    u->addr = (const char *)buf + d->true_lb;
    int64_t span = (int64_t)(count - 1) * d->extent + d->true_extent;
    u->span = span > 0 ? (uint64_t)span : u->bytes;
    return u->bytes ? 0 : -1;
}

uint16_t hb_track_site(unsigned op, void *ret)
{
    hb_lock();
    uint16_t site = hb_tracker_site(&hb_rt.tracker, op, ret);
    hb_unlock();
    return site;
}

void hb_track_site_persistent(uint16_t site)
{
    hb_lock();
    hb_rt.tracker.sites.site[site].persistent = 1;
    hb_unlock();
}

void hb_track_use(unsigned op, const struct hb_use *u, int empty, int proc_null,
                  uint16_t site)
{
    hb_lock();
    if (empty)
        hb_tracker_record_empty(&hb_rt.tracker, op, proc_null, site);
    else
        hb_tracker_record(&hb_rt.tracker, op, u, site);
    hb_unlock();
}

/* The site is looked up inside the lock together with the record: one
 * lock round trip per call. */
static uint16_t track_here(unsigned op, const struct hb_use *u, int empty,
                           int proc_null, void *ret)
{
    hb_lock();
    uint16_t site = hb_tracker_site(&hb_rt.tracker, op, ret);
    if (empty)
        hb_tracker_record_empty(&hb_rt.tracker, op, proc_null, site);
    else
        hb_tracker_record(&hb_rt.tracker, op, u, site);
    hb_unlock();
    return site;
}

int hb_use_compute(const void *buf, int count, MPI_Datatype type, int peer,
                   struct hb_use *u, int *proc_null)
{
    *proc_null = peer == MPI_PROC_NULL;
    return *proc_null || use_of(buf, count, type, u) != 0;
}

void hb_track_slow(unsigned op, const void *buf, int count, MPI_Datatype type,
                   int peer, void *ret)
{
    struct hb_use u;
    int proc_null;
    int empty = hb_use_compute(buf, count, type, peer, &u, &proc_null);
    track_here(op, &u, empty, proc_null, ret);
}

uint16_t hb_track_allgather(const void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, void *ret)
{
    int n = 1, inter = 0;
    struct hb_use u;
    /* On an intercommunicator the receive buffer holds the remote group's blocks. */
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &n);
    else
        PMPI_Comm_size(comm, &n);
    int64_t total = (int64_t)recvcount * n;
    int empty =
        total > 0x7fffffff || use_of(recvbuf, (int)total, recvtype, &u) != 0;
    return track_here(HB_OP_ALLGATHER, &u, empty, 0, ret);
}

struct hb_entry *hb_track_entry(unsigned op, const void *buf, int count,
                                MPI_Datatype type, int peer, void *ret,
                                uint16_t *site)
{
    const struct hb_dt_slot *d = &hb_dt_cache[hb_dt_slot_of(type)];
    if (d->type == type && d->size && hb_rt.tracking == HB_TRACK_FAST &&
        count > 0 && peer != MPI_PROC_NULL) { /* as hb_track's inline path */
        uint64_t bytes = (uint64_t)count * d->size;
        struct hb_use u = {buf, bytes, bytes};
        *site = hb_tracker_site(&hb_rt.tracker, op, ret);
        return hb_tracker_record(&hb_rt.tracker, op, &u, *site);
    }
    struct hb_use u;
    int proc_null;
    int empty = hb_use_compute(buf, count, type, peer, &u, &proc_null);
    struct hb_entry *e = NULL;
    hb_lock();
    *site = hb_tracker_site(&hb_rt.tracker, op, ret);
    if (empty)
        hb_tracker_record_empty(&hb_rt.tracker, op, proc_null, *site);
    else
        e = hb_tracker_record(&hb_rt.tracker, op, &u, *site);
    hb_unlock();
    return e;
}

/* Bytes of count elements of a predefined contiguous type; 0 otherwise.
 * (see track_mpi.h). */
uint64_t hb_dt_contiguous_bytes(int count, MPI_Datatype type)
{
    const struct hb_dt_slot *d = &hb_dt_cache[hb_dt_slot_of(type)];
    if (count <= 0)
        return 0;
    if (d->type == type && d->size)
        return (uint64_t)count * d->size;
    int ni, na, nd, combiner,
        size; /* not cached: a predefined type after all? */
    MPI_Aint lb, extent, tlb, textent;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS ||
        combiner != MPI_COMBINER_NAMED ||
        PMPI_Type_size(type, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS)
        return 0;
    return size > 0 && lb == 0 && tlb == 0 && extent == size && textent == size
               ? (uint64_t)count * (uint64_t)size
               : 0;
}
