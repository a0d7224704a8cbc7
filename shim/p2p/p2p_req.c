/* Receives hotbuf knows about, and the handles the application holds for
 * them (P2P-DESIGN.md §5.9).
 *
 * A receive hotbuf matches gets a real MPI request as its handle: an
 * inactive persistent send to MPI_PROC_NULL from a pool, never started.
 * It is valid in every PMPI call and Fortran conversion; the Wait/Test
 * wrappers find it in the table and complete it themselves.  A persistent
 * receive keeps MPI's own handle; a receive moved into pull keeps its
 * cancelled MPI request until the application completes it. */
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "rdma/rdma.h"
#include "regcache/regcache.h"
#include "p2p_int.h"

#define POOL_CHUNK 32

uint64_t hb_p2p_req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof(r) < sizeof(k) ? sizeof(r) : sizeof(k));
    return k;
}

int hb_p2p_translate_source(int source)
{
    return source == MPI_ANY_SOURCE ? HB_PM_ANY : source;
}

struct p2p_req *hb_p2p_req_find(MPI_Request h)
{
    uint64_t key;
    struct p2p_req *r;
    if (!p2p.reqs || h == MPI_REQUEST_NULL)
        return NULL;
    key = hb_p2p_req_key(h);
    HASH_FIND(hh, p2p.reqs, &key, sizeof(key), r);
    return r;
}

struct p2p_req *hb_p2p_req_new(void)
{
    struct p2p_req *r = calloc(1, sizeof(*r));
    if (r) {
        r->handle = r->inner = r->sreq = MPI_REQUEST_NULL;
        r->type = MPI_DATATYPE_NULL;
        hb_list_init(&r->orphan);
    }
    return r;
}

/* The application may free a derived datatype right after posting: keep
 * a duplicate while the receive can still use it. */
int hb_p2p_req_set_args(struct p2p_req *r, void *buf, MPI_Count count,
                        MPI_Datatype type, int source, int tag)
{
    int ni, na, nd, comb = MPI_COMBINER_NAMED, rc = MPI_SUCCESS;
    r->buf = buf;
    r->count = count;
    r->source = source;
    r->tag = tag;
    r->type = type;
    PMPI_Type_get_envelope(type, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED) {
        rc = PMPI_Type_dup(type, &r->type);
        r->type_dup = rc == MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            r->type = type;
    }
    return rc;
}

/* The pool's array must hold every handle ever made, not just the idle
 * ones: they all come back (hb_p2p_req_release).  Sized by the idle count,
 * it overflowed once more than 96 were out at once (heap corruption with
 * 300 receives pending, tests/mpi/p2p_pending.c). */
static int pool_fill(void)
{
    if (p2p.madepool + POOL_CHUNK > p2p.cappool) {
        int cap = p2p.cappool ? 2 * p2p.cappool : 2 * POOL_CHUNK;
        while (cap < p2p.madepool + POOL_CHUNK)
            cap *= 2;
        MPI_Request *v = realloc(p2p.pool, (size_t)cap * sizeof(*v));
        if (!v)
            return MPI_ERR_NO_MEM;
        p2p.pool = v;
        p2p.cappool = cap;
    }
    for (int i = 0; i < POOL_CHUNK; i++) {
        MPI_Request h;
        int rc = PMPI_Send_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0,
                                MPI_COMM_SELF, &h);
        if (rc != MPI_SUCCESS)
            return rc;
        p2p.pool[p2p.npool++] = h;
        p2p.madepool++;
    }
    return MPI_SUCCESS;
}

int hb_p2p_req_pool_handle(struct p2p_req *r)
{
    int rc = p2p.npool ? MPI_SUCCESS : pool_fill();
    if (rc != MPI_SUCCESS)
        return rc;
    r->handle = p2p.pool[--p2p.npool];
    r->pool = 1;
    return MPI_SUCCESS;
}

void hb_p2p_req_pool_free(void)
{
    for (int i = 0; i < p2p.npool; i++)
        PMPI_Request_free(&p2p.pool[i]);
    free(p2p.pool);
    p2p.pool = NULL;
    p2p.npool = p2p.cappool = p2p.madepool = 0;
}

void hb_p2p_req_insert(struct p2p_req *r)
{
    r->key = hb_p2p_req_key(r->handle);
    HASH_ADD(hh, p2p.reqs, key, sizeof(r->key), r);
    r->in_table = 1;
    hb_p2p_update_engaged();
}

void hb_p2p_req_release(struct p2p_req *r)
{
    if (r->in_table) {
        HASH_DEL(p2p.reqs, r);
        hb_p2p_update_engaged();
    }
    hb_list_del(&r->orphan);
    if (r->holds_comm && r->c)
        r->c->persistent--; /* its free may be due (hb_p2p_flush_frees) */
    if (r->pool)
        p2p.pool[p2p.npool++] = r->handle; /* room: it came from there */
    if (r->type_dup)
        PMPI_Type_free(&r->type);
    if (r->pin)
        hb_regcache_put(p2p.ctx->rdma->cache, r->pin);
    hb_p2p_sync_free(r->sync);
    free(r->tmp);
    free(r);
}

void hb_p2p_req_post(struct p2p_comm *c, struct p2p_req *r)
{
    struct hb_pm_msg *pm;
    r->c = c;
    if (!r->seq)
        r->seq = ++p2p.seq;
    r->n.source = hb_p2p_translate_source(r->source);
    r->n.tag = r->tag == MPI_ANY_TAG ? HB_PM_ANY : r->tag;
    c->pending++;
    pm = hb_pm_post(&c->m, &r->n);
    if (pm) {
        p2p.n_unexp--;
        hb_p2p_req_deliver(r, hb_container_of(pm, struct p2p_msg, n));
        return;
    }
    r->state = RQ_POSTED;
    p2p.n_posted++;
}

static void finish(struct p2p_req *r, int rc);

/* A ring message: unpacked from its slot (or its copy) into the receive,
 * the status made as MPI makes it.  A truncation fills what fits and
 * raises MPI_ERR_TRUNCATE through the communicator's handler when the
 * application completes the receive, as MPI does. */
/* The last, partial element of a message that is not a whole number of
 * the receive's datatype: MPI receives its bytes and leaves the rest of
 * the element alone (MPI-4.0 §3.2.4: only what the message covers is
 * modified).  MPI_Unpack takes whole elements, so the element as the
 * buffer holds it now is packed, its first rem bytes replaced by the
 * message's, and unpacked back. */
static void unpack_partial(struct p2p_req *r, const char *in, MPI_Count k,
                           int rem)
{
    MPI_Count lb, extent, size;
    int pos = 0;
    char *tmp;
    PMPI_Type_size_x(r->type, &size);
    PMPI_Type_get_extent_x(r->type, &lb, &extent);
    if (!(tmp = malloc((size_t)size)))
        return;
    char *elt = (char *)r->buf + k * extent;
    PMPI_Pack(elt, 1, r->type, tmp, (int)size, &pos, r->c->comm);
    memcpy(tmp, in, (size_t)rem);
    pos = 0;
    PMPI_Unpack(tmp, (int)size, &pos, elt, 1, r->type, r->c->comm);
    free(tmp);
}

void hb_p2p_req_deliver_ring(struct p2p_req *r, struct p2p_msg *m, int in_place)
{
    MPI_Count size = 0, cap, n = m->bytes;
    int pos = 0, rc = MPI_SUCCESS;
    PMPI_Type_size_x(r->type, &size);
    cap = size * r->count;
    r->st = m->st;
    if (n > cap) {
        n = cap;
        rc = MPI_ERR_TRUNCATE;
        r->raise = 1;
    }
    if (!in_place && n >= size && size)
        PMPI_Unpack(m->data, (int)n, &pos, r->buf, (int)(n / size), r->type,
                    r->c->comm);
    if (!in_place && size && n % size)
        unpack_partial(r, (const char *)m->data + pos, n / size,
                       (int)(n % size));
    PMPI_Status_set_elements_x(&r->st, MPI_BYTE, n);
    hb_p2p_sync_matched(m);
    hb_p2p_msg_free(m);
    finish(r, rc);
}

/* Straight into the receive's buffer; MPI itself checks the size and
 * reports a truncation when the request completes, through the
 * communicator's error handler, as for its own receives. */
void hb_p2p_req_deliver(struct p2p_req *r, struct p2p_msg *m)
{
    if (m->kind == MSG_RING && m->rndv) { /* read first (p2p_rndv.c) */
        hb_p2p_rndv_deliver(r, m);
        return;
    }
    if (m->kind == MSG_RING) {
        hb_p2p_req_deliver_ring(r, m, 0);
        return;
    }
    r->state = RQ_MATCHED;
    if (r->blocking) { /* hb_p2p_req_block receives it */
        r->msg = m->msg;
        PMPI_Get_elements_x(&m->st, MPI_BYTE, &r->msg_bytes);
        free(m);
        return;
    }
#if MPI_VERSION >= 4
    r->err = PMPI_Imrecv_c(r->buf, r->count, r->type, &m->msg, &r->inner);
#else
    r->err = PMPI_Imrecv(r->buf, (int)r->count, r->type, &m->msg, &r->inner);
#endif
    free(m);
}

static void finish(struct p2p_req *r, int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS && PMPI_Error_class(rc, &cls) == MPI_SUCCESS &&
        cls == MPI_ERR_TRUNCATE)
        p2p.stats.truncated++;
    r->err = rc;
    r->state = RQ_DONE;
    hb_p2p_comm_release_pending(r->c);
}

int hb_p2p_req_poll(struct p2p_req *r)
{
    int flag = 0;
    if (r->sreq != MPI_REQUEST_NULL)
        PMPI_Test(&r->sreq, &flag, MPI_STATUS_IGNORE);
    if (r->rv) /* a rendezvous read: done by its own progress */
        hb_p2p_rndv_progress();
    else if (r->state == RQ_MATCHED) {
        int rc = r->inner == MPI_REQUEST_NULL
                     ? r->err
                     : PMPI_Test(&r->inner, &flag, &r->st);
        if (flag || rc != MPI_SUCCESS)
            finish(r, rc);
    }
    return r->state == RQ_DONE && r->sreq == MPI_REQUEST_NULL &&
           (!r->sync || hb_p2p_sync_done(r->sync));
}

static int mrecv(struct p2p_req *r)
{
#if MPI_VERSION >= 4
    return PMPI_Mrecv_c(r->buf, r->count, r->type, &r->msg, &r->st);
#else
    return PMPI_Mrecv(r->buf, (int)r->count, r->type, &r->msg, &r->st);
#endif
}

/* A truncated message.  MPI_Recv raises MPI_ERR_TRUNCATE through the
 * communicator's error handler, but MPICH raises Mrecv's on
 * MPI_COMM_WORLD's: both return here while MPI receives it (buffer and
 * status as its own Recv leaves them), then the communicator's handler
 * runs once. */
static int mrecv_truncated(struct p2p_req *r)
{
    MPI_Errhandler world, own;
    MPI_Comm comm = r->c ? r->c->comm : r->comm;
    PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &world);
    PMPI_Comm_get_errhandler(comm, &own);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rc = mrecv(r);
    PMPI_Comm_set_errhandler(comm, own);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, world);
    PMPI_Errhandler_free(&own);
    PMPI_Errhandler_free(&world);
    if (rc != MPI_SUCCESS) /* returns MPI_SUCCESS for MPI_ERRORS_RETURN */
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

static int truncates(const struct p2p_req *r)
{
    MPI_Count size = 0;
    PMPI_Type_size_x(r->type, &size);
    return r->msg_bytes > size * r->count;
}

/* A blocking call receives its match with PMPI_Mrecv, as MPI_Recv would
 * (MPICH leaves the buffer of a truncated receive as it was). */
void hb_p2p_req_block(struct p2p_req *r)
{
    while (r->state == RQ_POSTED || r->rv) {
        hb_progress_yield(NULL);
        hb_p2p_rndv_progress();
        if ((r->state == RQ_POSTED || r->rv) && r->c)
            hb_p2p_claim(r->c); /* also when progress is busy above us */
    }
    if (r->state == RQ_MATCHED)
        finish(r, truncates(r) ? mrecv_truncated(r) : mrecv(r));
    while (r->sreq != MPI_REQUEST_NULL)
        if (!hb_p2p_req_poll(r))
            hb_progress_yield(NULL);
}

int hb_p2p_req_complete(struct p2p_req *r, MPI_Request *handle, MPI_Status *st)
{
    int rc = r->err;
    if (r->raise && rc != MPI_SUCCESS) {
        r->raise = 0;
        PMPI_Comm_call_errhandler(r->comm, rc);
    }
    if (st != MPI_STATUS_IGNORE)
        *st = r->st;
    if (r->hijacked) { /* consume MPI's cancelled receive */
        MPI_Request h = r->handle;
        PMPI_Wait(&h, MPI_STATUS_IGNORE);
        r->hijacked = 0;
    }
    if (r->psend) { /* MPI's handle stays, inactive */
        hb_p2p_req_release(r);
        return rc;
    }
    if (r->persistent) {
        r->state = RQ_INACTIVE;
        r->err = MPI_SUCCESS;
        return rc;
    }
    hb_p2p_req_release(r);
    if (handle)
        *handle = MPI_REQUEST_NULL;
    return rc;
}

/* Requests the application freed while they were pending: they complete
 * unseen. */
void hb_p2p_poll_orphans(void)
{
    struct hb_list *l, *next;
    for (l = p2p.orphans.next; l != &p2p.orphans; l = next) {
        struct p2p_req *r = hb_container_of(l, struct p2p_req, orphan);
        next = l->next;
        if (!hb_p2p_req_poll(r))
            continue;
        MPI_Request h = r->handle;
        int persistent = r->persistent;
        r->persistent = 0;
        hb_p2p_req_complete(r, NULL, MPI_STATUS_IGNORE);
        if (persistent)
            PMPI_Request_free(&h);
    }
}

void hb_p2p_status_empty(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    memset(st, 0, sizeof(*st));
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(st, 0);
}
