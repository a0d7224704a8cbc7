/* Persistent send requests: the buffer is named once at MPI_Send_init (and
 * friends) and used at every MPI_Start.  The use (address, extent, bytes)
 * is computed at the init call, when the datatype is certainly alive (the
 * user may free it right after), so a Start costs one hash lookup. */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "core/runtime.h"
#include "core/subsys.h"
#include "core/track_mpi.h"

struct persist_req {
    uint64_t key; /* the MPI_Request handle's bits */
    unsigned op;
    struct hb_use use;
    int empty, proc_null;
    uint16_t site; /* call site of the *_init call */
    UT_hash_handle hh;
};

/* Module state.  Static: the wrappers that reach it have no context. */
static struct {
    struct persist_req *requests; /* uthash head; touched under hb_lock */
} persist;

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof(r) < sizeof(k) ? sizeof(r) : sizeof(k));
    return k;
}

void hb_persist_add(MPI_Request req, unsigned op, const void *buf, int count,
                    MPI_Datatype type, int peer, void *ret)
{
    struct persist_req *p = calloc(1, sizeof(*p)), *old;
    if (!p)
        return; /* the request just goes uncounted */
    p->key = req_key(req);
    p->op = op;
    p->site = hb_track_site(op, ret); /* here, while ret is on the stack */
    hb_track_site_persistent(p->site);
    p->empty = hb_use_compute(buf, count, type, peer, &p->use, &p->proc_null);
    hb_lock();
    HASH_REPLACE(hh, persist.requests, key, sizeof(uint64_t), p, old);
    hb_unlock();
    free(
        old); /* a handle the MPI library reused without a Request_free we saw */
}

void hb_persist_start(MPI_Request req)
{
    uint64_t key = req_key(req);
    struct persist_req *p, copy;
    hb_lock();
    HASH_FIND(hh, persist.requests, &key, sizeof(key), p);
    if (p)
        copy = *p; /* another thread may free p once the lock is released */
    hb_unlock();
    if (p)
        hb_track_use(copy.op, &copy.use, copy.empty, copy.proc_null, copy.site);
}

void hb_persist_remove(MPI_Request req)
{
    uint64_t key = req_key(req);
    struct persist_req *p;
    hb_lock();
    HASH_FIND(hh, persist.requests, &key, sizeof(key), p);
    if (p)
        HASH_DEL(persist.requests, p);
    hb_unlock();
    free(p);
}

/* Requests the application never freed. */
static void stop(const struct hb_ctx *ctx)
{
    (void)ctx;
    while (persist.requests) {
        struct persist_req *p = persist.requests;
        HASH_DEL(persist.requests, p);
        free(p);
    }
}

/* clang-format off */
const struct hb_subsys hb_persist_subsys = {
    .name = "persist", .stop = stop,
};
/* clang-format on */
