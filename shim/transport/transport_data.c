/* The data path: RDMA WRITE / WRITE WITH IMMEDIATE / READ and SEND WITH
 * IMMEDIATE on the per-peer RC QPs, selective signaling, back-pressure, progress, waits, and failures.
 *
 * Send-queue bookkeeping per peer: WRs are numbered 1, 2, ... (seq).  Only
 * one in signal_every is signaled (plus any the caller flags, plus fences);
 * RC completes a QP's WRs in order, so a completed signaled WR completes
 * every WR before it: `completed` is the seq of the last one.  The queue
 * holds at most sq_depth WRs not known complete; a post beyond that returns
 * HB_TR_BUSY.  signal_every <= sq_depth / 2 guarantees a full queue always
 * contains a signaled WR, so it drains.  A wait on an unsignaled WR with
 * nothing signaled after it posts a signaled 8-byte "fence" RDMA WRITE to
 * the peer's scratch word first.
 *
 * Failures are per peer: a completion with an error status (remote access
 * error, retry exceeded, flush after the QP went to ERROR), a QP async
 * error event, an ibv_post_send error or a wait time-out fail that peer
 * only: its QP goes to ERROR (the NIC stops touching the caller's
 * buffers), a REJ datagram tells the other side, and every later call for
 * it returns HB_TR_FAILED.  Ops numbered up to the last completion seen
 * stay complete; the others report HB_TR_FAILED.  Receives the peer
 * completed before the failure are still delivered: the QP is destroyed
 * only once the CQ has been found empty after it (a provider may drop a
 * destroyed QP's completions from the CQ), so a caller that polls until
 * then has every write the peer saw acknowledged.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport_int.h"

#define HB_OP_FENCE 7 /* past enum hb_tr_opcode */

static const char *op_name(int op)
{
    switch (op) {
    case HB_TR_WRITE: return "RDMA WRITE";
    case HB_TR_WRITE_IMM: return "RDMA WRITE WITH IMMEDIATE";
    case HB_TR_READ: return "RDMA READ";
    case HB_TR_SEND: return "SEND WITH IMMEDIATE";
    case HB_OP_FENCE: return "fence RDMA WRITE";
    default: return "work request";
    }
}

/* ---- failure ------------------------------------------------------------------------- */
void hb_tr_peer_fail(struct hb_transport *t, struct hb_peer *pe, int notify,
                     const char *fmt, ...)
{
    if (pe->state == HB_PEER_FAILED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pe->reason, sizeof(pe->reason), fmt, ap);
    va_end(ap);
    if (pe->state == HB_PEER_CONNECTED)
        t->peers_connected--;
    hb_tr_cm_list_del(t, pe);
    pe->state = HB_PEER_FAILED;
    if (!pe->fail_seq)
        pe->fail_seq = pe->completed + 1;
    t->peers_failed++;
    t->st.peers_failed++;
    if (pe->qp) { /* in ERROR the NIC touches the caller's buffers no more */
        struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
        if (ibv_modify_qp(pe->qp, &a, IBV_QP_STATE)) {
            ibv_destroy_qp(pe->qp); /* the only way to stop it */
        } else {
            pe->dying = pe->qp;
            pe->dying_gen = ++t->fail_gen;
            t->ndying++;
        }
        pe->qp = NULL;
    }
    /* cq_need keeps the dead QP's share: its flushed completions may still
     * sit in the CQ */
    if (notify && pe->rank != t->rank)
        hb_tr_send_cm(t, pe, HB_CM_REJ, "failed");
}

void hb_transport_fail_peer(struct hb_transport *t, int peer,
                            const char *reason)
{
    struct hb_peer *pe = hb_tr_peer_get(t, peer);
    if (pe)
        hb_tr_peer_fail(t, pe, 1, "%s",
                        reason && reason[0] ? reason : "failed by the caller");
}

int hb_transport_debug_qp_error(struct hb_transport *t, int peer)
{
    struct hb_peer *pe = hb_tr_peer_get(t, peer);
    if (!pe || !pe->qp)
        return -1;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
    return ibv_modify_qp(pe->qp, &a, IBV_QP_STATE) ? -1 : 0;
}

/* ---- completions ---------------------------------------------------------------------------- */
static void rc_send_done(struct hb_transport *t, const struct ibv_wc *wc)
{
    int peer = HB_WRID_PEER(wc->wr_id);
    struct hb_peer *pe = peer < t->size && t->peers ? t->peers[peer] : NULL;
    uint64_t seq = HB_WRID_LOW(wc->wr_id);
    if (!pe)
        return;
    if (wc->status == IBV_WC_SUCCESS) {
        if (seq > pe->completed) /* also after a failure: it did complete */
            pe->completed = seq;
        return;
    }
    if (pe->state == HB_PEER_FAILED)
        return;
    /* in-order completion: everything before the failed WR completed */
    if (seq > 0 && seq - 1 > pe->completed)
        pe->completed = seq - 1;
    pe->fail_seq = seq;
    hb_tr_peer_fail(
        t, pe, 1, "%s to rank %d failed: %s (status %d, vendor error 0x%x)",
        op_name(pe->ops[seq % t->sq_depth]), peer,
        ibv_wc_status_str(wc->status), (int)wc->status, wc->vendor_err);
}

/* The QPs of peers that failed before gen: the CQ was found dry since, so
 * every completion they had made was delivered (successful ones too: a
 * write placed before the failure is still reported, see
 * hb_tr_rc_recv_done). */
static void reap_dying(struct hb_transport *t, uint64_t gen)
{
    for (int i = 0; i < t->size && t->ndying > 0; i++) {
        struct hb_peer *pe = t->peers[i];
        if (pe && pe->dying && pe->dying_gen <= gen) {
            ibv_destroy_qp(pe->dying);
            pe->dying = NULL;
            t->ndying--;
        }
    }
}

/* One ibv_poll_cq of up to HB_TR_POLL_BATCH completions; their number. */
int hb_tr_poll(struct hb_transport *t)
{
    struct ibv_wc wc[HB_TR_POLL_BATCH];
    uint64_t gen = t->fail_gen; /* failures before this look at the CQ */
    int n = ibv_poll_cq(t->cq, HB_TR_POLL_BATCH, wc);
    t->st.polls++;
    if (n >= 0 && n < HB_TR_POLL_BATCH && t->ndying > 0)
        reap_dying(t, gen); /* after the completions below, which are
                               delivered without the QP */
    if (n <= 0)
        return 0;
    t->st.completions += (uint64_t)n;
    for (int i = 0; i < n; i++) {
        switch (HB_WRID_KIND(wc[i].wr_id)) {
        case HB_WR_RC_SEND: rc_send_done(t, &wc[i]); break;
        case HB_WR_RC_RECV: hb_tr_rc_recv_done(t, &wc[i]); break;
        case HB_WR_UD_RECV: hb_tr_cm_recv(t, &wc[i]); break;
        case HB_WR_UD_SEND: hb_tr_ud_send_done(t, &wc[i]); break;
        default: break;
        }
    }
    return n;
}

static void fail_all(struct hb_transport *t, const char *why)
{
    for (int i = 0; i < t->size; i++) {
        struct hb_peer *pe = hb_tr_peer_get(t, i);
        if (pe && pe->state != HB_PEER_FAILED)
            hb_tr_peer_fail(t, pe, 1, "%s", why);
    }
}

/* Async events: QP errors fail their peer; a device or CQ error fails all. */
void hb_tr_check_async(struct hb_transport *t)
{
    if (t->async_broken)
        return;
    struct ibv_async_event ev;
    for (int k = 0; k < 16; k++) {
        if (ibv_get_async_event(t->ctx, &ev)) {
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                t->async_broken = 1;
            return;
        }
        enum ibv_event_type type = ev.event_type;
        struct ibv_qp *qp = NULL;
        switch (type) {
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_PATH_MIG_ERR: qp = ev.element.qp; break;
        default: break;
        }
        intptr_t peer = qp ? (intptr_t)qp->qp_context - 1 : -1;
        ibv_ack_async_event(
            &ev); /* before any destroy: ibv_destroy_qp waits for the ack */
        if (qp && peer >= 0 && peer < t->size && t->peers && t->peers[peer]) {
            hb_tr_peer_fail(t, t->peers[peer], 1,
                            "the QP to rank %d is in error state (%s)",
                            (int)peer, ibv_event_type_str(type));
        } else if (qp && qp == t->ud) {
            fail_all(t, "the connection-management QP failed");
        } else if (type == IBV_EVENT_DEVICE_FATAL) {
            fail_all(t, "the verbs device reported a fatal error");
        } else if (type == IBV_EVENT_CQ_ERR) {
            fail_all(t, "the completion queue overran");
        }
    }
}

/* Async events cost a system call each look: at most one look per 10 ms
 * (by the coarse clock, which costs none). */
static void maybe_check_async(struct hb_transport *t, double now)
{
    if (now >= t->next_async) {
        t->next_async = now + 0.01;
        hb_tr_check_async(t);
    }
}

int hb_transport_progress(struct hb_transport *t)
{
    if (!t || !t->bootstrapped)
        return 0; /* datagrams wait in the queue until the peers are known */
    int n = hb_tr_poll(t);
    if (t->cm_active)
        hb_tr_cm_timers(t);
    if ((++t->progress_calls & 31) == 0)
        maybe_check_async(t, hb_clock_coarse_s());
    return n;
}

/* ---- posting --------------------------------------------------------------------------------- */
static int post_wr(struct hb_transport *t, struct hb_peer *pe, int op,
                   const struct ibv_sge *sg, int nsge, uint64_t raddr,
                   uint32_t rkey, uint32_t imm, unsigned flags, uint32_t total,
                   struct hb_tr_op *out)
{
    if (pe->posted - pe->completed >= t->sq_depth) {
        hb_tr_poll(t); /* maybe completions are waiting */
        if (pe->state == HB_PEER_FAILED)
            return HB_TR_FAILED;
        if (pe->posted - pe->completed >= t->sq_depth) {
            t->st.busy++;
            return HB_TR_BUSY;
        }
    }
    uint64_t seq = pe->posted + 1;
    int sig =
        (flags & HB_TR_F_SIGNAL) || pe->unsignaled + 1 >= t->p.signal_every;
    struct ibv_send_wr wr =
                           {
                               .wr_id = HB_WRID(HB_WR_RC_SEND, pe->rank, seq),
                               .sg_list = (struct ibv_sge *)sg,
                               .num_sge = nsge,
                               .send_flags =
                                   (sig ? IBV_SEND_SIGNALED : 0) |
                                   ((flags & HB_TR_F_INLINE) ? IBV_SEND_INLINE
                                                             : 0),
                               .wr.rdma = {.remote_addr = raddr, .rkey = rkey},
                           },
                       *bad;
    switch (op) {
    case HB_TR_WRITE_IMM:
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = htonl(imm);
        break;
    case HB_TR_READ: wr.opcode = IBV_WR_RDMA_READ; break;
    case HB_TR_SEND:
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.imm_data = htonl(imm);
        break;
    default: wr.opcode = IBV_WR_RDMA_WRITE; break;
    }
    int rc = ibv_post_send(pe->qp, &wr, &bad);
    if (rc) {
        if (rc ==
            ENOMEM) { /* the provider counts its queue differently: back off */
            t->st.busy++;
            return HB_TR_BUSY;
        }
        hb_tr_peer_fail(t, pe, 1, "cannot post a %s to rank %d: %s",
                        op_name(op), pe->rank, strerror(rc));
        return HB_TR_FAILED;
    }
    pe->posted = seq;
    pe->ops[seq % t->sq_depth] = (uint8_t)op;
    if (sig) {
        pe->last_signaled = seq;
        pe->unsignaled = 0;
        t->st.signaled++;
    } else {
        pe->unsignaled++;
    }
    switch (op) {
    case HB_TR_WRITE: t->st.writes++; break;
    case HB_TR_WRITE_IMM: t->st.write_imms++; break;
    case HB_TR_READ: t->st.reads++; break;
    case HB_TR_SEND: t->st.sends++; break;
    default: t->st.fences++; break;
    }
    if (flags & HB_TR_F_INLINE)
        t->st.inline_posts++;
    t->st.bytes_posted += total;
    if (out) {
        out->peer = pe->rank;
        out->seq = seq;
    }
    return HB_TR_OK;
}

int hb_transport_post(struct hb_transport *t, int peer,
                      const struct hb_tr_wr *w, struct hb_tr_op *op)
{
    if (!t || !t->bootstrapped || peer < 0 || peer >= t->size || !w)
        return HB_TR_EINVAL;
    if (w->nsge < 0 || (uint32_t)w->nsge > t->p.max_sge ||
        (w->nsge && !w->sg) ||
        (w->opcode != HB_TR_WRITE && w->opcode != HB_TR_WRITE_IMM &&
         w->opcode != HB_TR_READ && w->opcode != HB_TR_SEND))
        return HB_TR_EINVAL;
    struct ibv_sge sg[HB_TR_MAX_SGE];
    uint64_t total = 0;
    for (int i = 0; i < w->nsge; i++) {
        sg[i].addr = w->sg[i].addr;
        sg[i].length = w->sg[i].length;
        sg[i].lkey = w->sg[i].lkey;
        total += w->sg[i].length;
    }
    if (total > t->port_attr.max_msg_sz ||
        (w->opcode == HB_TR_SEND && total > t->boot[peer].recv_bytes))
        return HB_TR_EINVAL;
    if ((w->flags & HB_TR_F_INLINE) &&
        (w->opcode == HB_TR_READ || total > t->max_inline))
        return HB_TR_EINVAL;
    struct hb_peer *pe = t->peers[peer];
    if (!pe || pe->state != HB_PEER_CONNECTED) {
        int rc = hb_transport_connect(t, peer);
        if (rc != HB_TR_OK)
            return rc;
        pe = t->peers[peer];
    }
    return post_wr(t, pe, w->opcode, sg, w->nsge, w->remote_addr, w->rkey,
                   w->imm, w->flags, (uint32_t)total, op);
}

static int post_one(struct hb_transport *t, int peer, int opcode, void *buf,
                    size_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                    uint32_t imm, unsigned flags, struct hb_tr_op *op)
{
    if (len > UINT32_MAX)
        return HB_TR_EINVAL;
    struct hb_tr_sge sge = {(uint64_t)(uintptr_t)buf, (uint32_t)len, lkey};
    struct hb_tr_wr w = {.opcode = opcode,
                         .sg = &sge,
                         .nsge = len ? 1 : 0,
                         .remote_addr = raddr,
                         .rkey = rkey,
                         .imm = imm,
                         .flags = flags};
    return hb_transport_post(t, peer, &w, op);
}

int hb_transport_write(struct hb_transport *t, int peer, const void *buf,
                       size_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                       unsigned flags, struct hb_tr_op *op)
{
    return post_one(t, peer, HB_TR_WRITE, (void *)buf, len, lkey, raddr, rkey,
                    0, flags, op);
}

int hb_transport_write_imm(struct hb_transport *t, int peer, const void *buf,
                           size_t len, uint32_t lkey, uint64_t raddr,
                           uint32_t rkey, uint32_t imm, unsigned flags,
                           struct hb_tr_op *op)
{
    return post_one(t, peer, HB_TR_WRITE_IMM, (void *)buf, len, lkey, raddr,
                    rkey, imm, flags, op);
}

int hb_transport_read(struct hb_transport *t, int peer, void *buf, size_t len,
                      uint32_t lkey, uint64_t raddr, uint32_t rkey,
                      unsigned flags, struct hb_tr_op *op)
{
    return post_one(t, peer, HB_TR_READ, buf, len, lkey, raddr, rkey, 0, flags,
                    op);
}

int hb_transport_send(struct hb_transport *t, int peer, const void *buf,
                      size_t len, uint32_t lkey, uint32_t imm, unsigned flags,
                      struct hb_tr_op *op)
{
    return post_one(t, peer, HB_TR_SEND, (void *)buf, len, lkey, 0, 0, imm,
                    flags, op);
}

uint32_t hb_transport_send_max(const struct hb_transport *t, int peer)
{
    if (!t || !t->bootstrapped || peer < 0 || peer >= t->size ||
        t->boot[peer].magic != HB_BOOT_MAGIC)
        return 0;
    return t->boot[peer].recv_bytes;
}

/* ---- completion of one operation ------------------------------------------------------------ */
int hb_transport_test(struct hb_transport *t, const struct hb_tr_op *op)
{
    if (!t || !t->bootstrapped || !op || op->peer < 0 || op->peer >= t->size ||
        !t->peers[op->peer])
        return HB_TR_EINVAL;
    const struct hb_peer *pe = t->peers[op->peer];
    if (op->seq <= pe->completed)
        return HB_TR_OK;
    if (pe->state == HB_PEER_FAILED)
        return HB_TR_FAILED;
    return HB_TR_AGAIN;
}

/* A signaled 8-byte write to the peer's scratch word, so that the WRs
 * before it report completion. */
static int post_fence(struct hb_transport *t, struct hb_peer *pe)
{
    static const uint64_t token = 0x68627466656e6365ull; /* "hbtfence" */
    const struct hb_boot *b = &t->boot[pe->rank];
    struct ibv_sge sge;
    unsigned flags = HB_TR_F_SIGNAL;
    if (t->max_inline >= sizeof(token)) {
        sge = (struct ibv_sge){(uintptr_t)&token, sizeof(token), 0};
        flags |= HB_TR_F_INLINE;
    } else {
        memcpy(t->ctrl + HB_CTRL_FENCE_SRC_OFF, &token, sizeof(token));
        sge = (struct ibv_sge){(uintptr_t)(t->ctrl + HB_CTRL_FENCE_SRC_OFF),
                               sizeof(token), t->ctrl_mr->lkey};
    }
    return post_wr(t, pe, HB_OP_FENCE, &sge, 1, b->scratch_addr,
                   b->scratch_rkey, 0, flags, sizeof(token), NULL);
}

int hb_transport_wait(struct hb_transport *t, const struct hb_tr_op *op,
                      hb_tr_yield_fn yield, void *ctx)
{
    int rc = hb_transport_test(t, op);
    if (rc != HB_TR_AGAIN)
        return rc;
    struct hb_peer *pe = t->peers[op->peer];
    double deadline = hb_clock_coarse_s() + t->p.op_timeout_s;
    unsigned spins = 0;
    for (;;) {
        if (pe->state == HB_PEER_CONNECTED && pe->last_signaled < op->seq) {
            rc =
                post_fence(t, pe); /* BUSY: the queue drains first, try again */
            if (rc == HB_TR_FAILED)
                return HB_TR_FAILED;
        }
        int n = hb_transport_progress(t);
        rc = hb_transport_test(t, op);
        if (rc != HB_TR_AGAIN)
            return rc;
        spins++;
        if (n == 0 && yield && (spins & 7) == 0)
            yield(ctx);
        if ((spins & 63) == 0) {
            double now = hb_clock_coarse_s();
            maybe_check_async(t, now);
            if (now > deadline) {
                hb_tr_peer_fail(
                    t, pe, 1,
                    "an operation to rank %d did not complete within %.1f s",
                    pe->rank, t->p.op_timeout_s);
                return HB_TR_FAILED;
            }
        }
    }
}
