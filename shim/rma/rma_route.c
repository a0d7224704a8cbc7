/* Per operation: track the origin buffer; if it is hot and everything
 * about the operation is simple enough, move it with hotbuf's own RDMA
 * write (Put) or read (Get); otherwise call PMPI (see rma.h). */
#include <string.h>

#include <infiniband/verbs.h>

#include "core/progress.h"
#include "core/runtime.h"
#include "core/track_mpi.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "rma.h"
#include "rma_int.h"

/* One operation as the wrappers pass it. */
struct rma_call {
    int is_get;
    void *obuf;
    int ocount, tcount, target;
    MPI_Datatype otype, ttype;
    MPI_Aint tdisp;
    MPI_Win win;
    MPI_Request *req; /* Rput/Rget, else NULL */
};

static int pmpi_call(const struct rma_call *c)
{
    if (c->is_get)
        return c->req ? PMPI_Rget(c->obuf, c->ocount, c->otype, c->target,
                                  c->tdisp, c->tcount, c->ttype, c->win, c->req)
                      : PMPI_Get(c->obuf, c->ocount, c->otype, c->target,
                                 c->tdisp, c->tcount, c->ttype, c->win);
    return c->req ? PMPI_Rput(c->obuf, c->ocount, c->otype, c->target, c->tdisp,
                              c->tcount, c->ttype, c->win, c->req)
                  : PMPI_Put(c->obuf, c->ocount, c->otype, c->target, c->tdisp,
                             c->tcount, c->ttype, c->win);
}

/* 0 and *raddr when the operation fits the target's registered window;
 * else why not. */
static int check_target(struct hb_win *w, const struct rma_call *c,
                        uint64_t bytes, uint64_t *raddr)
{
    if (c->target == w->rank)
        return HB_RMA_SELF;
    if (c->target < 0 || c->target >= w->size)
        return HB_RMA_WINDOW; /* MPI_PROC_NULL or bad rank: MPI's business */
    uint64_t tbytes = hb_dt_contiguous_bytes(c->tcount, c->ttype);
    if (!tbytes || tbytes != bytes)
        return HB_RMA_DATATYPE;
    if (w->nstart) /* a token in may bring a renewed registration */
        hb_rma_pscw_token_in(w, c->target);
    const struct hb_rma_target *t = &w->targets[c->target];
    if (!t->ok)
        return HB_RMA_WINDOW;
    if (t->node == hb_rma.node && !hb_rma.ctx->cfg->intranode)
        return HB_RMA_INTRANODE;
    if (c->tdisp < 0)
        return HB_RMA_BOUNDS;
    uint64_t off = (uint64_t)c->tdisp * (uint64_t)t->disp_unit;
    if (off > t->size || bytes > t->size - off)
        return HB_RMA_BOUNDS;
    *raddr = t->base + off;
    return 0;
}

static int connection(const struct hb_win *w, int target)
{
    struct hb_transport *t = hb_rma_transport(&hb_rma);
    hb_progress();
    switch (hb_transport_connect(t, w->targets[target].world)) {
    case HB_TR_OK: return 0;
    case HB_TR_AGAIN: return HB_RMA_CONNECTING;
    default: return HB_RMA_PEER_FAILED;
    }
}

/* The test-only fault (HOTBUF_TEST_RMA_FAIL, see rma_win.c): is this
 * operation the one to report failed without posting it? */
static int inject_fault(void)
{
    hb_rma.nposted++;
    return hb_rma.fail_every && hb_rma.nposted % hb_rma.fail_every == 0;
}

static int post(struct hb_win *w, const struct rma_call *c,
                struct hb_region *reg, uint64_t bytes, uint64_t raddr,
                struct hb_tr_op *op)
{
    struct hb_transport *t = hb_rma_transport(&hb_rma);
    struct ibv_mr *mr = hb_region_mr(reg);
    int peer = w->targets[c->target].world;
    uint32_t rkey = w->targets[c->target].rkey;
    for (int attempt = 0;; attempt++) {
        /* signaled: every operation is waited for at the next synchronization,
         * and its own completion is cheaper to wait for than a fence write */
        int rc = c->is_get
                     ? hb_transport_read(t, peer, c->obuf, bytes, mr->lkey,
                                         raddr, rkey, HB_TR_F_SIGNAL, op)
                     : hb_transport_write(t, peer, c->obuf, bytes, mr->lkey,
                                          raddr, rkey, HB_TR_F_SIGNAL, op);
        if (rc != HB_TR_BUSY || attempt == 1)
            return rc == HB_TR_OK     ? 0
                   : rc == HB_TR_BUSY ? HB_RMA_BUSY
                                      : HB_RMA_PEER_FAILED;
        hb_rma_complete(
            &hb_rma, w,
            c->target); /* send queue full: drain this target, retry once */
    }
}

static int remember(struct hb_win *w, const struct rma_call *c,
                    struct hb_region *reg, const struct hb_tr_op *op,
                    int failed)
{
    struct hb_rma_pending p = {.target = c->target,
                               .is_get = c->is_get,
                               .failed = failed,
                               .op = *op,
                               .region = reg,
                               .obuf = c->obuf,
                               .ocount = c->ocount,
                               .tcount = c->tcount,
                               .otype = c->otype,
                               .ttype = c->ttype,
                               .tdisp = c->tdisp};
    return hb_rma_remember(w, &p);
}

/* Rput/Rget whose RDMA completed: the request handed back is a
 * generalized request, complete already. */
static int greq_query(void *state, MPI_Status *st)
{
    (void)state;
    PMPI_Status_set_elements(st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int greq_free(void *state)
{
    (void)state;
    return MPI_SUCCESS;
}
static int greq_cancel(void *state, int complete)
{
    (void)state;
    (void)complete;
    return MPI_SUCCESS;
}

static int completed_request(MPI_Request *req)
{
    int rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, NULL, req);
    return rc == MPI_SUCCESS ? PMPI_Grequest_complete(*req) : rc;
}

/* Rput/Rget: this operation is waited for here, alone.  Done: a completed
 * request.  Failed: it is redone as PMPI_Rput/Rget and the application
 * gets MPI's own request, complete exactly when the redone operation is
 * (never before: the origin buffer is not yet read or written). */
static int finish_request(const struct rma_call *c, struct hb_region *reg,
                          struct hb_tr_op *op, int failed)
{
    struct hb_rdma *rdma = hb_rma.ctx->rdma;
    if (!failed)
        failed = hb_transport_wait(rdma->tr, op, hb_progress_yield, NULL) !=
                 HB_TR_OK;
    hb_regcache_put(rdma->cache, reg);
    if (!failed)
        return completed_request(c->req);
    hb_rma.stats.reissued++;
    return pmpi_call(c);
}

/* Posts the operation, or (test fault) pretends it failed: *failed. */
static int post_or_fail(struct hb_win *w, const struct rma_call *c,
                        struct hb_region *reg, uint64_t bytes, uint64_t raddr,
                        struct hb_tr_op *op, int *failed)
{
    memset(op, 0, sizeof(*op));
    *failed = inject_fault();
    return *failed ? 0 : post(w, c, reg, bytes, raddr, op);
}

/* Over either side's max_msg_sz.  The transport refuses one over its own
 * port's (counted peer_failed before this check); one over only the
 * target's would be posted and rejected there, failing the peer for good. */
static int too_large(const struct hb_win *w, int target, uint64_t bytes)
{
    return bytes > w->targets[target].max_msg ||
                   bytes > w->targets[w->rank].max_msg
               ? HB_RMA_TOO_LARGE
               : 0;
}

/* 0 if the operation went out on hotbuf's RDMA (*rc is the MPI result),
 * else the reason it did not. */
static int try_rdma(const struct rma_call *c, int *rc)
{
    struct hb_win *w = hb_rma_find(c->win);
    uint64_t bytes = hb_dt_contiguous_bytes(c->ocount, c->otype), raddr = 0;
    struct hb_region *reg = NULL;
    struct hb_rdma *rdma = hb_rma.ctx->rdma;
    struct hb_tr_op op;
    int why, failed;
    if (!w || !w->rdma)
        return HB_RMA_WINDOW;
    if (!bytes)
        return HB_RMA_DATATYPE;
    if ((why = check_target(w, c, bytes, &raddr)) ||
        (why = too_large(w, c->target, bytes)) ||
        (why = connection(w, c->target)) ||
        (why = hb_rma_epoch_allows(w, c->target)))
        return why;
    if (hb_rdma_register(rdma, c->obuf, bytes, &reg))
        return HB_RMA_REGISTRATION;
    if ((why = post_or_fail(w, c, reg, bytes, raddr, &op, &failed))) {
        hb_regcache_put(rdma->cache, reg);
        return why;
    }
    hb_rma.stats.ops_rdma++;
    hb_rma.stats.bytes_rdma += bytes;
    if (c->req) {
        *rc = finish_request(c, reg, &op, failed);
        return 0;
    }
    if (remember(w, c, reg, &op,
                 failed)) { /* no memory to track it: finish it now */
        if (!failed)
            hb_transport_wait(rdma->tr, &op, NULL, NULL);
        hb_regcache_put(rdma->cache, reg);
        hb_rma.stats.ops_rdma--;
        hb_rma.stats.bytes_rdma -= bytes;
        return HB_RMA_BUSY; /* may already be done; repeating it on PMPI is harmless */
    }
    *rc = MPI_SUCCESS;
    return 0;
}

static int route(unsigned op, const struct rma_call *c, void *ret)
{
    uint16_t site;
    struct hb_entry *e =
        hb_track_entry(op, c->obuf, c->ocount, c->otype, c->target, ret, &site);
    if (!hb_tracker_call_hot(e) || !hb_rma.on) /* this call, at its own size */
        return pmpi_call(c);
    int rc = MPI_SUCCESS, why;
    hb_nested++;
    why = try_rdma(c, &rc);
    hb_nested--;
    if (why) {
        hb_rma.stats.ops_pmpi[why]++;
        return pmpi_call(c);
    }
    hb_tracker_count_rerouted(hb_rma.ctx->tracker, op, site);
    return rc;
}

int hb_rma_put(const void *obuf, int ocount, MPI_Datatype otype, int target,
               MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win,
               MPI_Request *req, void *ret)
{
    struct rma_call c = {0,     (void *)obuf, ocount, tcount, target,
                         otype, ttype,        tdisp,  win,    req};
    return route(HB_OP_PUT, &c, ret);
}

int hb_rma_get(void *obuf, int ocount, MPI_Datatype otype, int target,
               MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win,
               MPI_Request *req, void *ret)
{
    struct rma_call c = {1,     obuf,  ocount, tcount, target,
                         otype, ttype, tdisp,  win,    req};
    return route(HB_OP_GET, &c, ret);
}
