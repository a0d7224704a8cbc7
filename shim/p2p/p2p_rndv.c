/* Rendezvous: large messages straight from the sender's buffer into the
 * matched receive buffer (issue 14 item 1; the SCI-MPICH zero-copy paper).
 *
 * A send too large for a slot goes, on a live pair, as a DATA_RNDV record:
 * the ring header and a descriptor (address, rkey) of the user's buffer,
 * registered through the cache (p2p_chan.c).  The sender keeps the record
 * as a synchronous one (p2p_sync.c) and holds the registration until its
 * SYNC_ACK: its buffer is read, not copied, so the send completes only
 * when the receiver has read it.  Here, on the receiver, the record is
 * matched like any other (merge, matcher, unexpected store holding only
 * the descriptor); at its match hotbuf posts one RDMA READ into the
 * receive's buffer, registered through the cache as well (a reused
 * receive buffer is a cache hit: the paper's point), and when the read
 * completes the receive is done and the SYNC_ACK goes.
 *
 * Why the receiver reads rather than answering with its buffer for the
 * sender to write: the read needs nothing from the sending process after
 * its record (a sender computing, or blocked elsewhere, does not delay
 * the transfer), it takes one RDMA operation and one acknowledgement
 * where the write needs a ready-to-receive message, the write and its
 * notification, and the receiver, who knows when and where the data must
 * land, places it itself.  The cost: a blocking send of a large message
 * waits for the receiver's match, as both MPIs' own rendezvous protocols
 * make it wait (MPI allows it: a standard send may be synchronous).
 *
 * The receive's buffer is read into directly when its datatype is
 * contiguous; else, or when it cannot be registered, into a bounce buffer
 * unpacked at completion.  A truncated receive reads only what fits.  A
 * matched probe's hand-out reads the message into memory of its own first
 * (hb_p2p_rndv_fetch), then hands it out like any ring message.
 *
 * Faults (§5.11).  A read that fails (QP error, a remote access error) or
 * cannot be posted fails the peer; the sender learns it (REJ) while it
 * waits for the SYNC_ACK and sends every kept record again by MPI, a
 * rendezvous record with its message (p2p_sync.c).  The receiver hands
 * that payload to the read's target (hb_p2p_rndv_resent): the receive
 * completes once the read has settled too (no DMA may follow the
 * completion), and its SYNC_ACK goes by MPI.  A record not yet matched
 * when its RESEND comes takes the payload along and becomes an ordinary
 * message.  So nothing is lost, and a message is delivered once. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "core/progress.h"
#include "core/track_mpi.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "track/costmodel.h"
#include "transport/transport.h"
#include "util/copy.h"
#include "p2p_int.h"

/* A read under way: into r's buffer (or a bounce buffer), or, for a
 * probe's hand-out (r NULL), into memory the message keeps. */
struct p2p_rndv {
    struct hb_list link; /* on p2p.rndv_reads */
    struct p2p_req *r;
    struct p2p_msg *m;
    struct hb_region *reg; /* the target's registration */
    char *target;
    char *bounce; /* target when it is not r's buffer (freed here) */
    uint32_t len; /* bytes read: the message, or what fits */
    struct hb_tr_op op;
    int posted;  /* op is valid */
    int settled; /* the read is over: completed, or failed */
    int failed;  /* ... failed: the payload comes as a RESEND */
    int resent;  /* the RESEND's payload is in target */
};

static int reading; /* hb_p2p_rndv_progress running: never re-entered */

/* Test switch: the read number HOTBUF_TEST_P2P_READ_FAULT fails (its QP
 * put in error before it is posted), as a broken link would. */
static uint64_t read_fault_at, reads;

void hb_p2p_rndv_start(void)
{
    const char *f = getenv("HOTBUF_TEST_P2P_READ_FAULT");
    read_fault_at = f ? strtoull(f, NULL, 10) : 0;
    reads = 0;
    hb_list_init(&p2p.rndv_reads);
}

static struct hb_transport *tr(void)
{
    return p2p.ctx->rdma->tr;
}

static void rv_free(struct p2p_rndv *v)
{
    if (v->reg)
        hb_regcache_put(p2p.ctx->rdma->cache, v->reg);
    hb_list_del(&v->link);
    free(v->bounce);
    free(v);
}

/* At MPI_Finalize, after the barrier: reads still under way belong to
 * receives the application never completed. */
void hb_p2p_rndv_stop(void)
{
    while (p2p.rndv_reads.next && !hb_list_empty(&p2p.rndv_reads))
        rv_free(hb_container_of(p2p.rndv_reads.next, struct p2p_rndv, link));
}

/* Whether to read straight into buf rather than through a bounce
 * buffer: yes unless buf's registrations do not last (memory mapped anew
 * between receives, regcache_churn.h) and the copy out of a bounce
 * buffer costs less than registering buf again.  A registration that
 * does not last costs R and then as much again or more: its
 * deregistration and the memory monitor's round trip at the unmap, which
 * the cost model's R leaves out; so the copy is weighed against 2R (at
 * 16 KiB a copy is a few us on a real CPU, a registration tens). */
static int rv_direct(const void *buf, uint32_t len)
{
    const struct hb_costmodel *cm = p2p.ctx->cost;
    if (hb_cost_copy_ns(cm, len) >= 2 * hb_cost_reg_ns(cm, len) ||
        hb_churn_try(&p2p.churn, buf))
        return 1;
    p2p.stats.rndv_churned_rx++;
    return 0;
}

/* The target registered: r's buffer when its datatype is contiguous
 * (and registrable, and worth registering: rv_direct), else a bounce
 * buffer.  -1: out of memory. */
static int rv_target(struct p2p_rndv *v, struct p2p_req *r)
{
    struct hb_rdma *rdma = p2p.ctx->rdma;
    if (r && r->count <= INT_MAX &&
        hb_dt_contiguous_bytes((int)r->count, r->type) >= v->len &&
        rdma->cache && rv_direct(r->buf, v->len) &&
        hb_rdma_register(rdma, r->buf, v->len, &v->reg) == 0) {
        hb_churn_note(&p2p.churn, r->buf, hb_region_serial(v->reg),
                      hb_region_len(v->reg));
        v->target = r->buf;
        p2p.stats.pinned_first += r->pin && !r->pin_used;
        r->pin_used = 1;
        return 0;
    }
    v->reg = NULL;
    if (!(v->bounce = malloc(v->len ? v->len : 1)))
        return -1;
    v->target = v->bounce;
    p2p.stats.rndv_bounced += r != NULL;
    if (rdma->cache && hb_rdma_register(rdma, v->bounce, v->len, &v->reg))
        v->reg = NULL; /* the read cannot be posted: it fails */
    return 0;
}

/* Posts the read; 1 posted, 0 send queue full (again later), -1 failed
 * (the peer fails: the message comes as a RESEND). */
static int rv_post(struct p2p_rndv *v)
{
    int w = v->m->sync_world;
    struct hb_tr_sge sg = {(uint64_t)(uintptr_t)v->target, v->len,
                           v->reg ? hb_region_mr(v->reg)->lkey : 0};
    struct hb_tr_wr wr = {.opcode = HB_TR_READ,
                          .sg = &sg,
                          .nsge = 1,
                          .remote_addr = v->m->rd.addr,
                          .rkey = v->m->rd.rkey,
                          .flags = HB_TR_F_SIGNAL};
    if (!v->reg)
        return -1;
    if (++reads == read_fault_at)
        hb_transport_debug_qp_error(tr(), w);
    int rc = hb_transport_post(tr(), w, &wr, &v->op);
    if (rc == HB_TR_BUSY)
        return 0;
    return rc == HB_TR_OK ? 1 : -1;
}

static struct p2p_rndv *rv_new(struct p2p_req *r, struct p2p_msg *m,
                               uint32_t len)
{
    struct p2p_rndv *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->len = len;
    v->r = r;
    v->m = m;
    if (!len) /* a receive of nothing: no read, the send completes */
        v->settled = 1;
    else if (rv_target(v, r)) {
        free(v);
        return NULL;
    }
    m->rv = v;
    hb_list_add_head(&p2p.rndv_reads, &v->link);
    return v;
}

/* The read is over and the data in target (read or resent): the receive
 * completes, the sender gets its SYNC_ACK (by MPI once the peer failed). */
static void rv_done(struct p2p_rndv *v)
{
    struct p2p_req *r = v->r;
    struct p2p_msg *m = v->m;
    p2p.stats.rndv_reads += !v->failed;
    p2p.stats.rndv_read_bytes += v->failed ? 0 : v->len;
    m->rv = NULL;
    m->rndv = 0;
    if (!r) { /* a probe's: the message keeps the payload */
        m->heap = v->bounce;
        m->data = v->bounce;
        v->bounce = NULL;
        rv_free(v);
        return;
    }
    r->rv = NULL;
    m->data = v->bounce;
    int in_place = !v->bounce;
    hb_p2p_req_deliver_ring(r, m, in_place); /* before the bounce goes */
    rv_free(v);
}

/* One look at v: posted, settled, done.  1 when done (v is gone). */
static int rv_poll(struct p2p_rndv *v)
{
    if (!v->posted && !v->settled) {
        int rc = rv_post(v);
        if (rc < 0) {
            v->failed = v->settled = 1;
            p2p.stats.rndv_read_failed++;
            hb_p2p_chan_rx_failed(v->m->sync_world,
                                  "point-to-point: rendezvous read not posted");
        }
        v->posted = rc > 0;
    }
    if (v->posted && !v->settled) {
        int st = hb_transport_test(tr(), &v->op);
        if (st == HB_TR_FAILED) {
            v->failed = 1;
            p2p.stats.rndv_read_failed++;
            hb_p2p_chan_rx_failed(v->m->sync_world,
                                  "point-to-point: rendezvous read failed");
        }
        v->settled = st != HB_TR_AGAIN;
    }
    if (v->settled && (!v->failed || v->resent)) {
        rv_done(v);
        return 1;
    }
    return 0;
}

void hb_p2p_rndv_progress(void)
{
    struct hb_list *l, *next;
    if (reading || hb_list_empty(&p2p.rndv_reads))
        return;
    reading = 1;
    hb_transport_progress(tr());
    for (l = p2p.rndv_reads.next; l != &p2p.rndv_reads; l = next) {
        next = l->next;
        rv_poll(hb_container_of(l, struct p2p_rndv, link));
    }
    reading = 0;
}

/* What of m fits r (a truncated receive reads only that). */
static uint32_t fitting(const struct p2p_req *r, const struct p2p_msg *m)
{
    MPI_Count size = 0;
    PMPI_Type_size_x(r->type, &size);
    MPI_Count cap = size * r->count;
    return cap < (MPI_Count)m->bytes ? (uint32_t)cap : m->bytes;
}

void hb_p2p_rndv_deliver(struct p2p_req *r, struct p2p_msg *m)
{
    struct p2p_rndv *v;
    r->state = RQ_MATCHED;
    if (!(v = rv_new(r, m, fitting(r, m))))
        abort(); /* a matched message cannot be put back */
    r->rv = v;
    if (!reading)
        rv_poll(v);
}

int hb_p2p_rndv_fetch(struct p2p_comm *c, struct p2p_msg *m)
{
    struct p2p_rndv *v;
    if (!m->rndv)
        return MPI_SUCCESS;
    if (!(v = rv_new(NULL, m, m->bytes)))
        return MPI_ERR_NO_MEM;
    p2p.stats.rndv_fetched++;
    /* m->rv, not v: the progress below may complete it too */
    while (m->rv && !rv_poll(m->rv)) {
        hb_transport_progress(tr());
        hb_progress_yield(NULL);
        hb_p2p_claim(c); /* a RESEND comes on c */
    }
    return MPI_SUCCESS;
}

/* The payload by MPI: into the target, the read settled or not (the same
 * bytes either way: the sender's buffer is untouched until the SYNC_ACK).
 * A record still unmatched takes it along and is an ordinary message
 * from now. */
void hb_p2p_rndv_resent(struct p2p_msg *m, const void *data)
{
    struct p2p_rndv *v = m->rv;
    p2p.stats.rndv_resent_in++;
    if (v) {
        if (!v->resent)
            hb_copy(v->target, data, v->len);
        v->resent = 1;
        if (!reading)
            rv_poll(v);
        return;
    }
    if (!(m->heap = malloc(m->bytes ? m->bytes : 1)))
        abort(); /* the message exists only here now */
    hb_copy(m->heap, data, m->bytes);
    m->data = m->heap;
    m->rndv = 0;
}
