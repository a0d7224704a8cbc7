/* Receive calls: on a pulled communicator hotbuf posts the receive in
 * its matcher; elsewhere PMPI, with the receive remembered where the
 * communicator may enter pull later (after:N) so it can be migrated. */
#include <limits.h>
#include <stdlib.h>

#include "core/track_mpi.h"
#include "rdma/rdma.h"
#include "p2p_int.h"

/* A hotbuf receive on pulled c, not yet posted.  NULL: out of memory. */
static struct p2p_req *new_recv(struct p2p_comm *c, void *buf, MPI_Count count,
                                MPI_Datatype type, int source, int tag)
{
    struct p2p_req *r = hb_p2p_req_new();
    if (r) {
        hb_p2p_req_set_args(r, buf, count, type, source, tag);
        r->comm = c->comm;
    }
    return r;
}

/* The hotbuf receive for a receive-side call on comm, or NULL: the call
 * goes to PMPI (MPI_PROC_NULL matches nothing; comm not pulled). */
static struct p2p_req *managed(MPI_Comm comm, void *buf, MPI_Count count,
                               MPI_Datatype type, int source, int tag,
                               struct p2p_comm **cp)
{
    *cp = source == MPI_PROC_NULL ? NULL : hb_p2p_comm_recv_call(comm, source);
    return *cp ? new_recv(*cp, buf, count, type, source, tag) : NULL;
}

/* A blocking receive-side call: post, wait, hand over the status. */
static int block_on(struct p2p_comm *c, struct p2p_req *r, MPI_Status *st)
{
    r->blocking = 1;
    hb_p2p_req_post(c, r);
    hb_p2p_req_block(r);
    return hb_p2p_req_complete(r, NULL, st);
}

static int recv_blocking(void *buf, MPI_Count count, MPI_Datatype type,
                         int source, int tag, MPI_Comm comm, MPI_Status *st)
{
    struct p2p_comm *c;
    struct p2p_req *r = managed(comm, buf, count, type, source, tag, &c);
    if (!r)
        return PMPI_C(PMPI_Recv)(buf, count, type, source, tag, comm, st);
    return block_on(c, r, st);
}

int hb_p2p_recv(void *buf, MPI_Count count, MPI_Datatype type, int source,
                int tag, MPI_Comm comm, MPI_Status *st)
{
    HB_P2P_ROUTE(recv);
    return recv_blocking(buf, count, type, source, tag, comm, st);
}

/* An MPI receive on a communicator that may enter pull later: its
 * record, or NULL when none is needed (or no memory). */
static struct p2p_req *track(MPI_Request h, void *buf, MPI_Count count,
                             MPI_Datatype type, int source, int tag,
                             MPI_Comm comm)
{
    struct p2p_comm *c;
    struct p2p_req *r;
    /* with the ring, a grant pulls comm at any later wrapper entry: MPI's
     * receive must be known then, or it takes the switched sender's
     * messages behind the merge's back (they are missing from its count
     * and the ring's messages wait for them forever) */
    if ((p2p.mode != P2P_MODE_AFTER && !p2p.ring) || source == MPI_PROC_NULL ||
        !(c = hb_p2p_comm_get(comm)) || c->state != COMM_NORMAL ||
        !(r = hb_p2p_req_new()))
        return NULL;
    hb_p2p_req_set_args(r, buf, count, type, source, tag);
    r->handle = h;
    r->comm = comm;
    r->c = c;
    r->state = RQ_PMPI;
    r->seq = ++p2p.seq;
    hb_p2p_req_insert(r);
    return r;
}

#if MPI_VERSION >= 4
/* MPI's Isendrecv on a communicator that may enter pull later.  Its
 * receive cannot be migrated (cancelling the request would cancel the
 * send too), so the communicator must not enter pull until it is done
 * (a grant meanwhile is refused): else the sender's ring records would
 * wait in hotbuf's matcher for a receive MPI holds (session 29's review:
 * a hang).  Without memory for the record it goes untracked, as an
 * Irecv's does. */
static void track_whole(MPI_Request h, void *buf, MPI_Count count,
                        MPI_Datatype type, int source, int tag, MPI_Comm comm)
{
    struct p2p_req *r = track(h, buf, count, type, source, tag, comm);
    if (r)
        r->whole = 1;
}
#endif

/* A nonblocking receive: hotbuf's when comm is pulled, else MPI's (known
 * to the migration). */
static int recv_nonblocking(void *buf, MPI_Count count, MPI_Datatype type,
                            int source, int tag, MPI_Comm comm,
                            MPI_Request *req)
{
    struct p2p_comm *c;
    struct p2p_req *r = managed(comm, buf, count, type, source, tag, &c);
    if (r && hb_p2p_req_pool_handle(r) != MPI_SUCCESS) {
        hb_p2p_req_release(r);
        r = NULL;
    }
    if (!r) {
        int rc = PMPI_C(PMPI_Irecv)(buf, count, type, source, tag, comm, req);
        if (rc == MPI_SUCCESS)
            track(*req, buf, count, type, source, tag, comm);
        return rc;
    }
    hb_p2p_req_insert(r);
    hb_p2p_req_post(c, r);
    *req = r->handle;
    return MPI_SUCCESS;
}

int hb_p2p_irecv(void *buf, MPI_Count count, MPI_Datatype type, int source,
                 int tag, MPI_Comm comm, MPI_Request *req)
{
    HB_P2P_ROUTE(irecv);
    return recv_nonblocking(buf, count, type, source, tag, comm, req);
}

/* A persistent receive's buffer registered at init when a rendezvous
 * may read into it (issue 14 item 2: the request promises reuse), held
 * until Request_free: every read into it is a cache hit, the first too. */
static void recv_pin(struct p2p_req *r)
{
    struct hb_rdma *rdma = p2p.ctx->rdma;
    uint64_t bytes = r->count <= INT_MAX
                         ? hb_dt_contiguous_bytes((int)r->count, r->type)
                         : 0;
    if (!p2p.ring || !p2p.rndv || bytes <= p2p.ctx->cfg->eager_limit ||
        bytes < p2p.rndv_min || !rdma->cache ||
        hb_rdma_register(rdma, r->buf, bytes, &r->pin))
        return;
    p2p.stats.precv_pinned++;
}

/* Persistent receives keep MPI's handle; each Start decides where the
 * receive goes. */
int hb_p2p_recv_init(void *buf, MPI_Count count, MPI_Datatype type, int source,
                     int tag, MPI_Comm comm, MPI_Request *req)
{
    HB_P2P_ROUTE(recv_init);
    struct p2p_comm *c;
    struct p2p_req *r;
    int rc = PMPI_C(PMPI_Recv_init)(buf, count, type, source, tag, comm, req);
    if (rc != MPI_SUCCESS || source == MPI_PROC_NULL ||
        !(c = hb_p2p_comm_get(comm)) || c->state == COMM_OFF ||
        !(r = hb_p2p_req_new()))
        return rc;
    hb_p2p_req_set_args(r, buf, count, type, source, tag);
    r->handle = *req;
    r->comm = comm;
    r->c = c;
    r->persistent = 1;
    r->holds_comm = 1;
    c->persistent++;
    r->state = RQ_INACTIVE;
    recv_pin(r);
    hb_p2p_req_insert(r);
    return rc;
}

int hb_p2p_start(MPI_Request *req)
{
    HB_P2P_ROUTE(start);
    struct p2p_req *r = hb_p2p_req_find(*req);
    struct p2p_comm *c;
    if (!r && hb_p2p_psend_start(*req)) /* a persistent send's, by ring */
        return MPI_SUCCESS;
    if (!r || !r->persistent || r->state != RQ_INACTIVE)
        return PMPI_Start(req); /* MPI raises what must be raised */
    if (!r->c || r->c->state == COMM_OFF) {
        /* Its communicator was disconnected or finalized (asking about
         * the handle now would touch a freed communicator) or will never
         * be pulled: MPI's alone from here, else Wait would find it
         * inactive and return at once. */
        hb_p2p_req_release(r);
        return PMPI_Start(req);
    }
    c = hb_p2p_comm_recv_call(r->comm, r->source);
    if (c) {
        r->seq = 0;
        hb_p2p_req_post(c, r);
        return MPI_SUCCESS;
    }
    int rc = PMPI_Start(req);
    if (rc == MPI_SUCCESS) { /* tracked: c may enter pull while it waits */
        r->state = RQ_PMPI;
        r->cancelled = 0;
        r->seq = ++p2p.seq;
    }
    return rc;
}

/* Startall is Start on each, in order (MPI-4.0 §3.9). */
int hb_p2p_startall(int n, MPI_Request reqs[])
{
    HB_P2P_ROUTE(startall);
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = hb_p2p_start(&reqs[i]);
    return rc;
}

int hb_p2p_sendrecv(const void *sbuf, MPI_Count scount, MPI_Datatype stype,
                    int dest, int stag, void *rbuf, MPI_Count rcount,
                    MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                    MPI_Status *st)
{
    HB_P2P_ROUTE(sendrecv);
    /* by ring, the send is complete before the receive is posted, which
     * MPI allows: the record needs nothing from the receiving process */
    if (hb_p2p_send_half_ring(sbuf, scount, stype, dest, stag, comm))
        return recv_blocking(rbuf, rcount, rtype, source, rtag, comm, st);
    struct p2p_comm *c;
    struct p2p_req *r = managed(comm, rbuf, rcount, rtype, source, rtag, &c);
    int rc;
    if (!r)
        return PMPI_C(PMPI_Sendrecv)(sbuf, scount, stype, dest, stag, rbuf,
                                     rcount, rtype, source, rtag, comm, st);
    rc = PMPI_C(PMPI_Isend)(sbuf, scount, stype, dest, stag, comm, &r->sreq);
    if (rc != MPI_SUCCESS) {
        hb_p2p_req_release(r);
        return rc;
    }
    return block_on(c, r, st);
}

/* The send half of a _replace call: packed first, as MPI does, since the
 * receive overwrites the buffer. */
static int isend_packed(struct p2p_req *r, const void *buf, MPI_Count count,
                        MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    int size = 0, pos = 0, rc = PMPI_Pack_size((int)count, type, comm, &size);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!(r->tmp = malloc(size ? (size_t)size : 1)))
        return MPI_ERR_NO_MEM;
    rc = PMPI_Pack(buf, (int)count, type, r->tmp, size, &pos, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    return PMPI_Isend(r->tmp, pos, MPI_PACKED, dest, tag, comm, &r->sreq);
}

int hb_p2p_sendrecv_replace(void *buf, MPI_Count count, MPI_Datatype type,
                            int dest, int stag, int source, int rtag,
                            MPI_Comm comm, MPI_Status *st)
{
    HB_P2P_ROUTE(sendrecv_replace);
    if (hb_p2p_send_half_ring(buf, count, type, dest, stag, comm))
        return recv_blocking(buf, count, type, source, rtag, comm, st);
    struct p2p_comm *c;
    struct p2p_req *r = managed(comm, buf, count, type, source, rtag, &c);
    int rc;
    if (!r)
        return PMPI_C(PMPI_Sendrecv_replace)(buf, count, type, dest, stag,
                                             source, rtag, comm, st);
    rc = isend_packed(r, buf, count, type, dest, stag, comm);
    if (rc != MPI_SUCCESS) {
        hb_p2p_req_release(r);
        return rc;
    }
    return block_on(c, r, st);
}

/* Nonblocking forms: one hotbuf request for both halves. */
static int isendrecv_post(struct p2p_comm *c, struct p2p_req *r,
                          MPI_Request *req)
{
    int rc = hb_p2p_req_pool_handle(r);
    if (rc != MPI_SUCCESS) {
        if (r->sreq != MPI_REQUEST_NULL)
            PMPI_Wait(&r->sreq, MPI_STATUS_IGNORE);
        hb_p2p_req_release(r);
        return rc;
    }
    hb_p2p_req_insert(r);
    hb_p2p_req_post(c, r);
    *req = r->handle;
    return MPI_SUCCESS;
}

int hb_p2p_isendrecv(const void *sbuf, MPI_Count scount, MPI_Datatype stype,
                     int dest, int stag, void *rbuf, MPI_Count rcount,
                     MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                     MPI_Request *req)
{
    HB_P2P_ROUTE(isendrecv);
    /* by ring the send half is complete at once, and the request is the
     * receive's (its status is the one Isendrecv gives) */
    if (hb_p2p_send_half_ring(sbuf, scount, stype, dest, stag, comm))
        return recv_nonblocking(rbuf, rcount, rtype, source, rtag, comm, req);
    struct p2p_comm *c;
    struct p2p_req *r = managed(comm, rbuf, rcount, rtype, source, rtag, &c);
    int rc;
    if (!r) {
#if MPI_VERSION >= 4
        rc = PMPI_C(PMPI_Isendrecv)(sbuf, scount, stype, dest, stag, rbuf,
                                    rcount, rtype, source, rtag, comm, req);
        if (rc == MPI_SUCCESS)
            track_whole(*req, rbuf, rcount, rtype, source, rtag, comm);
        return rc;
#else
        return MPI_ERR_INTERN; /* not bound: MPI-3 has no Isendrecv */
#endif
    }
    rc = PMPI_C(PMPI_Isend)(sbuf, scount, stype, dest, stag, comm, &r->sreq);
    if (rc != MPI_SUCCESS) {
        hb_p2p_req_release(r);
        return rc;
    }
    return isendrecv_post(c, r, req);
}

int hb_p2p_isendrecv_replace(void *buf, MPI_Count count, MPI_Datatype type,
                             int dest, int stag, int source, int rtag,
                             MPI_Comm comm, MPI_Request *req)
{
    HB_P2P_ROUTE(isendrecv_replace);
    /* by ring the data is out of buf before the receive is posted */
    if (hb_p2p_send_half_ring(buf, count, type, dest, stag, comm))
        return recv_nonblocking(buf, count, type, source, rtag, comm, req);
    struct p2p_comm *c;
    struct p2p_req *r = managed(comm, buf, count, type, source, rtag, &c);
    int rc;
    if (!r) {
#if MPI_VERSION >= 4
        rc = PMPI_C(PMPI_Isendrecv_replace)(buf, count, type, dest, stag,
                                            source, rtag, comm, req);
        if (rc == MPI_SUCCESS)
            track_whole(*req, buf, count, type, source, rtag, comm);
        return rc;
#else
        return MPI_ERR_INTERN;
#endif
    }
    rc = isend_packed(r, buf, count, type, dest, stag, comm);
    if (rc != MPI_SUCCESS) {
        hb_p2p_req_release(r);
        return rc;
    }
    return isendrecv_post(c, r, req);
}
