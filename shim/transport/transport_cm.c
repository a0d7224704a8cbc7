/* Bootstrap and on-demand connections over a UD connection-management QP.
 *
 * Bootstrap: one allgather of a 64-byte block per rank (struct hb_boot: UD
 * QPN and qkey, GID or LID, MTU, READ depth, the address and rkey of the
 * control area's scratch word, a random instance id).  Nothing else is
 * exchanged collectively: RC QPs are created only for peers that are used.
 *
 * An RC QP cannot be reached before it is connected, and the peer may be
 * anywhere (computing, blocked in an MPI call) when we want it, so requests
 * travel as datagrams on each rank's UD QP, and neither side ever waits for
 * the other: the requester keeps answering HB_TR_AGAIN (the caller sends
 * that message with MPI) until the reply has arrived, and the target
 * handles requests whenever it runs hb_transport_progress().
 *
 * Messages (struct hb_cm_msg, 80 B + 40 B GRH in a 128-B slot):
 *   REQ(qpn, psn, rd_atomic, attempt)  requester -> target
 *   REP(qpn, psn, rd_atomic, attempt)  target -> requester (attempt echoed)
 *   RTU(attempt)                       requester -> target: "ready to use"
 *   REJ(text)                          "I have failed you": the receiver fails the peer
 * Each carries source/destination rank and both instance ids; anything else
 * (wrong instance, wrong QPN, unknown attempt) is dropped and counted.
 *
 * State machine, per peer (enum hb_peer_state):
 *
 *   IDLE --connect()--> REQ_SENT        create RC QP (INIT), post receives, send REQ
 *   IDLE --REQ--> ACCEPTED              create RC QP, INIT->RTR->RTS to the
 *                                       requester's QPN/PSN, send REP
 *   REQ_SENT --REP(our attempt)--> CONNECTED    RTR->RTS to the target's QPN/PSN, send RTU
 *   REQ_SENT --REQ from a HIGHER rank--> REQ_SENT     both asked at once: the lower
 *                                       rank wins, so we ignore it; the other side
 *                                       will answer ours
 *   REQ_SENT --REQ from a LOWER rank--> ACCEPTED      we lose: our QP (still INIT) is
 *                                       connected to the winner's, REP sent;
 *                                       our own request is abandoned
 *   REQ_SENT --timer--> REQ_SENT        resend REQ (same attempt, same QP): the
 *                                       datagram or the reply may be lost;
 *                                       interval retry_s doubling to 1 s
 *   ACCEPTED --RTU, or a first RDMA WRITE WITH IMMEDIATE from the peer--> CONNECTED
 *   ACCEPTED --REQ (same attempt, dup)--> ACCEPTED    resend REP (our REP was lost)
 *   ACCEPTED --timer--> ACCEPTED        resend REP (the RTU may be lost)
 *   CONNECTED --REP (dup)--> CONNECTED  resend RTU (our RTU was lost)
 *   REQ_SENT/ACCEPTED --connect_timeout_s without the answer--> FAILED
 *                                       ("rank N did not answer ..."), REJ sent;
 *                                       a target that never progresses ends here
 *   any --REJ--> FAILED                 the peer failed us
 *   any --failed completion, QP error event, wait time-out, QP creation
 *         failure, CQ cannot grow--> FAILED      REJ sent (best effort)
 *   FAILED --REQ/REP/RTU--> FAILED      answer REJ, so the peer fails too
 *   FAILED is final: the caller uses PMPI for that peer forever.
 *
 * Why RTU: the target's QP is in RTS at ACCEPTED, but it posts nothing
 * until CONNECTED, because the requester's QP may still be in INIT (packets
 * to it are dropped, and the retries could run out).  The requester is
 * CONNECTED only after its QP is in RTR/RTS, and the target's QP was
 * already in RTS when the REP left, so the requester's first RDMA operation
 * always finds the target ready.  A collision needs no extra rule: the
 * loser's QP, created for its own request, serves the winner's.
 * A target that handles a request only after the requester gave up sends
 * its REP to a FAILED peer and gets a REJ back: both sides agree on FAILED.  Before declaring a time-out the CQ is
 * drained, so a reply that arrived while the caller was away counts.
 *
 * Connecting to oneself needs no datagram: the QP is connected to itself.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport_int.h"

_Static_assert(sizeof(struct hb_boot) == HB_TRANSPORT_BOOT_BYTES,
               "boot block is the wire size");

/* ---- bootstrap ----------------------------------------------------------------------- */
int hb_transport_bootstrap(struct hb_transport *t, hb_allgather_fn allgather,
                           void *ctx, char *why, size_t len)
{
    char scratch[8];
    if (!why || !len)
        why = scratch, len = sizeof(scratch);
    if (!t) { /* a failed open calls hb_transport_bootstrap_absent instead */
        snprintf(
            why, len,
            "no transport: after a failed open call hb_transport_bootstrap_absent");
        return -1;
    }
    if (t->bootstrapped) {
        snprintf(why, len, "the transport is bootstrapped already");
        return -1;
    }
    struct hb_boot mine;
    memset(&mine, 0, sizeof(mine));
    mine.magic = HB_BOOT_MAGIC;
    mine.link_layer_ib = t->port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND;
    mine.mtu = (uint8_t)t->port_attr.active_mtu;
    mine.rd_atomic = (uint8_t)t->rd_atomic;
    mine.lid = t->port_attr.lid;
    mine.ud_qpn = t->ud->qp_num;
    mine.ud_qkey = HB_UD_QKEY;
    memcpy(mine.gid, t->gid.raw, 16);
    mine.scratch_addr = (uint64_t)(uintptr_t)(t->ctrl + HB_CTRL_SCRATCH_OFF);
    mine.scratch_rkey = t->ctrl_mr->rkey;
    mine.recv_bytes = t->p.recv_bytes;
    mine.instance = t->instance;
    struct hb_boot *all = calloc((size_t)t->size, sizeof(*all));
    if (!all) {
        /* still take part in the collective, then give up */
        unsigned char *tmp = calloc((size_t)t->size, HB_TRANSPORT_BOOT_BYTES);
        if (tmp)
            allgather(&mine, tmp, HB_TRANSPORT_BOOT_BYTES, ctx);
        free(tmp);
        snprintf(why, len, "out of memory for %d bootstrap blocks", t->size);
        return -1;
    }
    if (allgather(&mine, all, HB_TRANSPORT_BOOT_BYTES, ctx)) {
        free(all);
        snprintf(why, len, "the bootstrap allgather failed");
        return -1;
    }
    if (memcmp(&all[t->rank], &mine, sizeof(mine))) {
        free(all);
        snprintf(
            why, len,
            "the bootstrap allgather returned a wrong block for this rank");
        return -1;
    }
    if (!(t->peers = calloc((size_t)t->size, sizeof(*t->peers)))) {
        free(all);
        snprintf(why, len, "out of memory for %d peers", t->size);
        return -1;
    }
    t->boot = all;
    t->bootstrapped = 1;
    return 0;
}

int hb_transport_bootstrap_absent(int size, hb_allgather_fn allgather,
                                  void *ctx)
{
    unsigned char mine[HB_TRANSPORT_BOOT_BYTES] = {0};
    unsigned char *all =
        calloc((size_t)(size > 0 ? size : 1), HB_TRANSPORT_BOOT_BYTES);
    if (!all)
        return -1;
    int rc = allgather(mine, all, HB_TRANSPORT_BOOT_BYTES, ctx);
    free(all);
    return rc ? -1 : 0;
}

/* ---- peers ------------------------------------------------------------------------------ */
struct hb_peer *hb_tr_peer_get(struct hb_transport *t, int peer)
{
    if (!t || !t->bootstrapped || peer < 0 || peer >= t->size)
        return NULL;
    struct hb_peer *pe = t->peers[peer];
    if (pe)
        return pe;
    pe = calloc(1, sizeof(*pe) + t->sq_depth);
    if (!pe)
        return NULL;
    pe->rank = peer;
    pe->state = HB_PEER_IDLE;
    pe->cm_slot = -1;
    t->peers[peer] = pe;
    const struct hb_boot *b = &t->boot[peer];
    int ib = t->port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND;
    if (b->magic != HB_BOOT_MAGIC)
        hb_tr_peer_fail(
            t, pe, 0, "rank %d has no transport (its hb_transport_open failed)",
            peer);
    else if (b->link_layer_ib != ib)
        hb_tr_peer_fail(t, pe, 0, "rank %d is on %s, this rank on %s", peer,
                        b->link_layer_ib ? "InfiniBand" : "RoCE",
                        ib ? "InfiniBand" : "RoCE");
    return pe;
}

enum hb_peer_state hb_transport_peer_state(const struct hb_transport *t,
                                           int peer)
{
    if (!t || !t->bootstrapped || peer < 0 || peer >= t->size)
        return HB_PEER_FAILED;
    if (t->boot[peer].magic != HB_BOOT_MAGIC)
        return HB_PEER_FAILED;
    const struct hb_peer *pe = t->peers[peer];
    return pe ? pe->state : HB_PEER_IDLE;
}

const char *hb_transport_peer_reason(const struct hb_transport *t, int peer)
{
    if (!t || !t->bootstrapped || peer < 0 || peer >= t->size)
        return "no transport";
    const struct hb_peer *pe = t->peers[peer];
    if (!pe && t->boot[peer].magic != HB_BOOT_MAGIC)
        return "that rank has no transport (its hb_transport_open failed)";
    return pe && pe->state == HB_PEER_FAILED ? pe->reason : "";
}

const char *hb_transport_state_name(enum hb_peer_state s)
{
    static const char *n[] = {"idle", "req-sent", "accepted", "connected",
                              "failed"};
    return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

void hb_transport_foreach_failed(const struct hb_transport *t,
                                 void (*fn)(void *ctx, int peer,
                                            const char *reason),
                                 void *ctx)
{
    for (int i = 0; t && t->peers && i < t->size; i++)
        if (hb_transport_peer_state(t, i) == HB_PEER_FAILED)
            fn(ctx, i, hb_transport_peer_reason(t, i));
}

static void cm_list_add(struct hb_transport *t, struct hb_peer *pe)
{
    if (pe->cm_slot >= 0)
        return;
    if (t->cm_active == t->cm_cap) {
        int cap = t->cm_cap ? t->cm_cap * 2 : 16;
        int *l = realloc(t->cm_list, (size_t)cap * sizeof(int));
        if (!l)
            return; /* no timers for it: it still connects when the datagrams arrive */
        t->cm_list = l, t->cm_cap = cap;
    }
    pe->cm_slot = t->cm_active;
    t->cm_list[t->cm_active++] = pe->rank;
}

void hb_tr_cm_list_del(struct hb_transport *t, struct hb_peer *pe)
{
    if (pe->cm_slot < 0)
        return;
    int last = t->cm_list[--t->cm_active];
    t->cm_list[pe->cm_slot] = last;
    t->peers[last]->cm_slot = pe->cm_slot;
    pe->cm_slot = -1;
}

static void start_timer(struct hb_transport *t, struct hb_peer *pe)
{
    double now = hb_clock_s();
    pe->t_start = now;
    pe->backoff = t->p.retry_s;
    pe->t_next = now + pe->backoff;
    pe->sends = 1;
    cm_list_add(t, pe);
}

/* ---- UD datagrams --------------------------------------------------------------------------- */
int hb_tr_ud_post_recv(struct hb_transport *t, int slot)
{
    struct ibv_sge sge = {(uintptr_t)(t->ctrl + (size_t)slot * HB_UD_SLOT),
                          HB_UD_SLOT, t->ctrl_mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = HB_WRID(HB_WR_UD_RECV, 0, slot),
                             .sg_list = &sge,
                             .num_sge = 1},
                       *bad;
    if (ibv_post_recv(t->ud, &wr, &bad))
        return -1;
    t->ud_recv_posted++;
    return 0;
}

void hb_tr_ud_send_done(struct hb_transport *t, const struct ibv_wc *wc)
{
    int slot = (int)HB_WRID_LOW(wc->wr_id);
    if (slot >= 0 && slot < HB_UD_SEND_SLOTS)
        t->ud_free_mask |= 1u << slot;
    if (wc->status != IBV_WC_SUCCESS)
        t->st.cm_dropped++;
}

static struct ibv_ah *peer_ah(struct hb_transport *t, struct hb_peer *pe)
{
    if (pe->ah)
        return pe->ah;
    const struct hb_boot *b = &t->boot[pe->rank];
    struct ibv_ah_attr a = {.port_num = (uint8_t)t->p.port, .sl = 0};
    if (b->link_layer_ib) {
        a.dlid = b->lid;
    } else {
        a.is_global = 1;
        memcpy(a.grh.dgid.raw, b->gid, 16);
        a.grh.sgid_index = (uint8_t)t->gid_index;
        a.grh.hop_limit = 64;
    }
    pe->ah = ibv_create_ah(t->pd, &a);
    return pe->ah;
}

/* Sends one datagram to pe; -1 when it could not go (no free slot, no AH):
 * the timers resend, and a lost datagram is allowed anyway. */
int hb_tr_send_cm(struct hb_transport *t, struct hb_peer *pe, int type,
                  const char *text)
{
    struct ibv_ah *ah = peer_ah(t, pe);
    if (!ah || !t->ud_free_mask) {
        t->st.cm_dropped++;
        return -1;
    }
    int slot = __builtin_ctz(t->ud_free_mask);
    unsigned char *buf =
        t->ctrl + (size_t)(HB_UD_RECV_SLOTS + slot) * HB_UD_SLOT;
    struct hb_cm_msg m;
    memset(&m, 0, sizeof(m));
    m.magic = HB_CM_MAGIC;
    m.type = (uint8_t)type;
    m.rd_atomic = (uint8_t)t->rd_atomic;
    m.src = (uint32_t)t->rank;
    m.dst = (uint32_t)pe->rank;
    m.src_instance = t->instance;
    m.dst_instance = t->boot[pe->rank].instance;
    m.qpn = pe->qp ? pe->qp->qp_num : 0;
    m.psn = pe->my_psn;
    m.attempt = pe->attempt;
    if (text)
        snprintf(m.text, sizeof(m.text), "%s", text);
    memcpy(buf, &m, sizeof(m));
    struct ibv_sge sge = {(uintptr_t)buf, HB_CM_MSG_BYTES, t->ctrl_mr->lkey};
    struct ibv_send_wr wr =
                           {
                               .wr_id = HB_WRID(HB_WR_UD_SEND, pe->rank, slot),
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = IBV_WR_SEND,
                               .send_flags = IBV_SEND_SIGNALED,
                               .wr.ud = {.ah = ah,
                                         .remote_qpn = t->boot[pe->rank].ud_qpn,
                                         .remote_qkey =
                                             t->boot[pe->rank].ud_qkey},
                           },
                       *bad;
    if (ibv_post_send(t->ud, &wr, &bad)) {
        t->st.cm_dropped++;
        return -1;
    }
    t->ud_free_mask &= ~(1u << slot);
    t->st.cm_sent++;
    return 0;
}

/* ---- RC QP bring-up ---------------------------------------------------------------------------- */
static int qp_create(struct hb_transport *t, struct hb_peer *pe)
{
    char why[HB_TR_REASON_LEN];
    int need = (int)(t->sq_depth + t->rq_depth);
    if (hb_tr_ensure_cq(t, need, why, sizeof(why))) {
        hb_tr_peer_fail(t, pe, 1, "cannot connect to rank %d: %s", pe->rank,
                        why);
        return -1;
    }
    if (!(pe->qp = hb_tr_create_rc_qp(t, pe->rank, why, sizeof(why)))) {
        hb_tr_peer_fail(t, pe, 1, "cannot connect to rank %d: %s", pe->rank,
                        why);
        return -1;
    }
    t->cq_need += need;
    pe->qp_counted = 1;
    pe->my_psn = hb_tr_random(t) & 0xffffff;
    if ((!pe->rx && hb_tr_rx_create(t, pe)) || hb_tr_post_recvs(t, pe)) {
        hb_tr_peer_fail(t, pe, 1, "cannot post receives for rank %d: %s",
                        pe->rank, strerror(errno));
        return -1;
    }
    return 0;
}

/* INIT -> RTR -> RTS towards the peer's RC QP. */
static int qp_connect(struct hb_transport *t, struct hb_peer *pe, uint32_t qpn,
                      uint32_t psn, uint32_t rd_atomic)
{
    const struct hb_boot *b = &t->boot[pe->rank];
    enum ibv_mtu mtu = t->port_attr.active_mtu < (enum ibv_mtu)b->mtu
                           ? t->port_attr.active_mtu
                           : (enum ibv_mtu)b->mtu;
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = mtu,
        .dest_qp_num = qpn,
        .rq_psn = psn,
        .max_dest_rd_atomic = (uint8_t)t->rd_atomic,
        .min_rnr_timer = 12,
        .ah_attr = {.port_num = (uint8_t)t->p.port, .sl = 0},
    };
    if (b->link_layer_ib) {
        a.ah_attr.dlid = b->lid;
    } else {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, b->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)t->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    int rc = ibv_modify_qp(
        pe->qp, &a,
        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc) {
        hb_tr_peer_fail(t, pe, 1, "cannot move the QP for rank %d to RTR: %s",
                        pe->rank, strerror(rc > 0 ? rc : errno));
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    /* 4.096 us x 2^18 = 1.07 s per try, as UCX's default: a time-out fires
     * on a lost acknowledgement only.  rxe (6.1) leaves its retransmit
     * timer running after the acknowledgement, and when it fires with
     * another message in flight resends that one: at 67 ms (14) that was
     * 0.4 spurious go-back-N retries per 64 KiB Allgather call on 4 ranks,
     * 13 duplicate packets, none lost (README).  Failures are not found
     * this way: a failing side tells the other on the control channel,
     * and hb_transport_wait gives up after op_timeout_s (30 s). */
    a.timeout = 18;
    a.retry_cnt = 7; /* transport errors: ~8 s, then a failed completion */
    a.rnr_retry =
        7; /* receiver not ready (no receive for an immediate): retry forever;
                         hb_transport_wait's time-out bounds the caller */
    a.sq_psn = pe->my_psn;
    a.max_rd_atomic =
        (uint8_t)(rd_atomic < t->rd_atomic ? rd_atomic : t->rd_atomic);
    if (!a.max_rd_atomic)
        a.max_rd_atomic = 1;
    rc = ibv_modify_qp(pe->qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                           IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc) {
        hb_tr_peer_fail(t, pe, 1, "cannot move the QP for rank %d to RTS: %s",
                        pe->rank, strerror(rc > 0 ? rc : errno));
        return -1;
    }
    pe->remote_qpn = qpn;
    pe->remote_psn = psn;
    pe->remote_rd_atomic = (uint8_t)rd_atomic;
    return 0;
}

static void set_connected(struct hb_transport *t, struct hb_peer *pe)
{
    hb_tr_cm_list_del(t, pe);
    pe->state = HB_PEER_CONNECTED;
    t->peers_connected++;
    t->st.connects_done++;
}

/* Answer a request (from IDLE, or REQ_SENT when the requester outranks us). */
static void accept_req(struct hb_transport *t, struct hb_peer *pe,
                       const struct hb_cm_msg *m)
{
    if (!pe->qp && qp_create(t, pe))
        return;
    pe->attempt = m->attempt;
    if (qp_connect(t, pe, m->qpn, m->psn, m->rd_atomic))
        return;
    pe->state = HB_PEER_ACCEPTED;
    t->st.connects_accepted++;
    start_timer(t, pe);
    hb_tr_send_cm(t, pe, HB_CM_REP, NULL);
}

static int connect_self(struct hb_transport *t, struct hb_peer *pe)
{
    if (qp_create(t, pe))
        return HB_TR_FAILED;
    pe->attempt = 1;
    if (qp_connect(t, pe, pe->qp->qp_num, pe->my_psn, t->rd_atomic))
        return HB_TR_FAILED;
    set_connected(t, pe);
    return HB_TR_OK;
}

int hb_transport_connect(struct hb_transport *t, int peer)
{
    struct hb_peer *pe = hb_tr_peer_get(t, peer);
    if (!pe)
        return HB_TR_FAILED;
    switch (pe->state) {
    case HB_PEER_CONNECTED: return HB_TR_OK;
    case HB_PEER_FAILED: return HB_TR_FAILED;
    case HB_PEER_REQ_SENT:
    case HB_PEER_ACCEPTED:
        /* the reply is handled by progress: run one pass so that a caller
         * that only ever asks still gets connected */
        hb_transport_progress(t);
        return pe->state == HB_PEER_CONNECTED ? HB_TR_OK
               : pe->state == HB_PEER_FAILED  ? HB_TR_FAILED
                                              : HB_TR_AGAIN;
    case HB_PEER_IDLE: break;
    }
    if (peer == t->rank)
        return connect_self(t, pe);
    if (qp_create(t, pe))
        return HB_TR_FAILED;
    do
        pe->attempt = hb_tr_random(t);
    while (!pe->attempt);
    pe->state = HB_PEER_REQ_SENT;
    t->st.connects_requested++;
    start_timer(t, pe);
    hb_tr_send_cm(t, pe, HB_CM_REQ, NULL);
    return HB_TR_AGAIN;
}

/* ---- incoming datagrams ------------------------------------------------------------------------- */
static void on_req(struct hb_transport *t, struct hb_peer *pe,
                   const struct hb_cm_msg *m)
{
    switch (pe->state) {
    case HB_PEER_IDLE: accept_req(t, pe, m); break;
    case HB_PEER_REQ_SENT:
        if (t->rank < pe->rank)
            break; /* both asked, we win: they will answer ours */
        t->st
            .collisions++; /* both asked, we lose: counted here, once per pair */
        hb_tr_cm_list_del(t, pe);
        accept_req(t, pe, m);
        break;
    case HB_PEER_ACCEPTED:
        if (m->qpn == pe->remote_qpn && m->attempt == pe->attempt) {
            t->st.cm_resends++;
            hb_tr_send_cm(t, pe, HB_CM_REP, NULL);
        }
        break;
    case HB_PEER_CONNECTED:
        break; /* a delayed duplicate, or the loser's abandoned request */
    case HB_PEER_FAILED: hb_tr_send_cm(t, pe, HB_CM_REJ, "failed"); break;
    }
}

static void on_rep(struct hb_transport *t, struct hb_peer *pe,
                   const struct hb_cm_msg *m)
{
    switch (pe->state) {
    case HB_PEER_REQ_SENT:
        if (m->attempt != pe->attempt)
            break;
        if (qp_connect(t, pe, m->qpn, m->psn, m->rd_atomic))
            break;
        set_connected(t, pe);
        hb_tr_send_cm(t, pe, HB_CM_RTU, NULL);
        break;
    case HB_PEER_CONNECTED:
        if (m->attempt == pe->attempt && m->qpn == pe->remote_qpn) {
            t->st.cm_resends++;
            hb_tr_send_cm(t, pe, HB_CM_RTU, NULL); /* our RTU was lost */
        }
        break;
    case HB_PEER_FAILED: hb_tr_send_cm(t, pe, HB_CM_REJ, "failed"); break;
    default: t->st.cm_dropped++; break;
    }
}

static void on_rtu(struct hb_transport *t, struct hb_peer *pe,
                   const struct hb_cm_msg *m)
{
    if (pe->state == HB_PEER_ACCEPTED && m->attempt == pe->attempt &&
        m->qpn == pe->remote_qpn)
        set_connected(t, pe);
    else if (pe->state == HB_PEER_FAILED)
        hb_tr_send_cm(t, pe, HB_CM_REJ, "failed");
}

static void on_rej(struct hb_transport *t, struct hb_peer *pe,
                   const struct hb_cm_msg *m)
{
    if (pe->state == HB_PEER_FAILED)
        return;
    char text[sizeof(m->text) + 1];
    memcpy(text, m->text, sizeof(m->text));
    text[sizeof(m->text)] = 0;
    hb_tr_peer_fail(t, pe, 0, "rank %d dropped the connection (its side: %s)",
                    pe->rank, text[0] ? text : "failed");
}

void hb_tr_cm_recv(struct hb_transport *t, const struct ibv_wc *wc)
{
    int slot = (int)HB_WRID_LOW(wc->wr_id);
    t->ud_recv_posted--;
    if (wc->status != IBV_WC_SUCCESS) {
        if (wc->status != IBV_WC_WR_FLUSH_ERR)
            hb_tr_ud_post_recv(t, slot);
        t->st.cm_dropped++;
        return;
    }
    struct hb_cm_msg m;
    int ok = wc->byte_len >= HB_UD_GRH + HB_CM_MSG_BYTES;
    /* tests: lose datagrams, as a congested fabric would */
    if (ok && t->p.debug_cm_drop_every >= 2 &&
        t->cm_rx_count++ % t->p.debug_cm_drop_every == 0) {
        hb_tr_ud_post_recv(t, slot);
        t->st.cm_dropped++;
        return;
    }
    if (ok)
        memcpy(&m, t->ctrl + (size_t)slot * HB_UD_SLOT + HB_UD_GRH, sizeof(m));
    hb_tr_ud_post_recv(t, slot);
    if (!ok || m.magic != HB_CM_MAGIC || m.dst != (uint32_t)t->rank ||
        m.src >= (uint32_t)t->size || m.src == (uint32_t)t->rank ||
        m.dst_instance != t->instance ||
        m.src_instance != t->boot[m.src].instance ||
        wc->src_qp != t->boot[m.src].ud_qpn) {
        t->st.cm_dropped++;
        return;
    }
    struct hb_peer *pe = hb_tr_peer_get(t, (int)m.src);
    if (!pe) {
        t->st.cm_dropped++;
        return;
    }
    t->st.cm_received++;
    switch (m.type) {
    case HB_CM_REQ: on_req(t, pe, &m); break;
    case HB_CM_REP: on_rep(t, pe, &m); break;
    case HB_CM_RTU: on_rtu(t, pe, &m); break;
    case HB_CM_REJ: on_rej(t, pe, &m); break;
    default: t->st.cm_dropped++; break;
    }
}

/* ---- timers ---------------------------------------------------------------------------------------- */
static void drain_cq(struct hb_transport *t)
{
    for (int i = 0; i < 64 && hb_tr_poll(t) > 0; i++)
        ;
}

void hb_tr_cm_timers(struct hb_transport *t)
{
    double now = hb_clock_s();
    for (int i = 0; i < t->cm_active; i++) {
        struct hb_peer *pe = t->peers[t->cm_list[i]];
        if (now >= pe->t_start + t->p.connect_timeout_s) {
            drain_cq(
                t); /* a reply that came while the caller was away still counts */
            if (pe->state != HB_PEER_REQ_SENT &&
                pe->state != HB_PEER_ACCEPTED) {
                i = -1; /* the list changed under us: start over */
                continue;
            }
            int req = pe->state == HB_PEER_REQ_SENT;
            hb_tr_peer_fail(
                t, pe, 1,
                "rank %d did not %s within %.1f s (%d datagrams sent)",
                pe->rank,
                req ? "answer the connection request"
                    : "confirm the connection",
                t->p.connect_timeout_s, pe->sends);
            i = -1;
            continue;
        }
        if (now >= pe->t_next) {
            if (hb_tr_send_cm(t, pe,
                              pe->state == HB_PEER_REQ_SENT ? HB_CM_REQ
                                                            : HB_CM_REP,
                              NULL) == 0) {
                pe->sends++;
                t->st.cm_resends++;
            }
            pe->backoff = pe->backoff * 2 > 1.0 ? 1.0 : pe->backoff * 2;
            pe->t_next = now + pe->backoff;
        }
    }
}
