/* The receive side of the RC QPs: the receive WRs that RDMA WRITE WITH
 * IMMEDIATE and SEND WITH IMMEDIATE consume, their buffers, reposting, and
 * the receive completions.
 *
 * With recv_bytes > 0 each peer's QP gets rq_depth buffers of recv_bytes
 * (one allocation, one registration, made with the QP): receive WR number
 * i (its wr_id's low bits) always scatters into buffer i.  A WRITE WITH
 * IMMEDIATE consumes a receive WR too but leaves its buffer untouched.
 * A SEND is handed to on_recv straight from the buffer, inside progress,
 * and the WR is posted again on return: the buffer is the message's only
 * copy until then, so nothing can overwrite it early, and the receiver
 * copies out only what it keeps (small messages: one cheap copy against
 * a slower operation on the wire, which is the point of SEND here).
 *
 * Why SEND at all when RDMA WRITE WITH IMMEDIATE exists: on soft-RoCE
 * (rxe) a WRITE WITH IMMEDIATE costs markedly more than a SEND of the same
 * size (tools/bench/rdma_lat.c measures both; README).  A SEND needs a
 * posted receive at the responder or it draws a receiver-not-ready NAK
 * (then the requester retries after min_rnr_timer: never an error here,
 * rnr_retry is infinite, but slow): callers bound their messages in flight
 * per peer under rq_depth (hb_transport_send_max in transport.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport_int.h"

/* Buffers for pe's receive WRs, before its QP posts any.  0, or -1 (errno). */
int hb_tr_rx_create(struct hb_transport *t, struct hb_peer *pe)
{
    size_t len = (size_t)t->rq_depth * t->p.recv_bytes;
    if (!len)
        return 0;
    if (posix_memalign((void **)&pe->rx, 4096, len)) {
        pe->rx = NULL;
        errno = ENOMEM;
        return -1;
    }
    pe->rx_mr = ibv_reg_mr(t->pd, pe->rx, len, IBV_ACCESS_LOCAL_WRITE);
    if (!pe->rx_mr) {
        int e = errno;
        free(pe->rx);
        pe->rx = NULL;
        errno = e;
        return -1;
    }
    return 0;
}

/* After the QP is destroyed (the NIC no longer writes there).  *rc gets
 * ibv_dereg_mr's error, if any. */
void hb_tr_rx_destroy(struct hb_peer *pe, int *rc)
{
    if (pe->rx_mr) {
        int e = ibv_dereg_mr(pe->rx_mr);
        if (e && rc && !*rc)
            *rc = e;
    }
    free(pe->rx);
    pe->rx_mr = NULL;
    pe->rx = NULL;
}

static int post_slot(struct hb_transport *t, struct hb_peer *pe, uint32_t slot)
{
    struct ibv_sge sge = {0};
    struct ibv_recv_wr wr = {.wr_id = HB_WRID(HB_WR_RC_RECV, pe->rank, slot),
                             .sg_list = &sge,
                             .num_sge = 0},
                       *bad;
    if (pe->rx) {
        sge.addr = (uintptr_t)(pe->rx + (size_t)slot * t->p.recv_bytes);
        sge.length = t->p.recv_bytes;
        sge.lkey = pe->rx_mr->lkey;
        wr.num_sge = 1;
    }
    if (ibv_post_recv(pe->qp, &wr, &bad))
        return -1;
    pe->rq_posted++;
    return 0;
}

/* Every receive WR of a new QP, slot i for WR i. */
int hb_tr_post_recvs(struct hb_transport *t, struct hb_peer *pe)
{
    for (uint32_t i = pe->rq_posted; i < t->rq_depth; i++)
        if (post_slot(t, pe, i))
            return -1;
    return 0;
}

/* A message that arrived intact: its immediate (and data) to the layer
 * above.  Also for a peer failed meanwhile: what was placed before the
 * failure is final, and the layer above counts on seeing it (point-to-
 * point drops its resent copy). */
static void deliver(struct hb_transport *t, struct hb_peer *pe,
                    const struct ibv_wc *wc)
{
    uint32_t imm = ntohl(wc->imm_data);
    if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        t->st.imm_received++;
        if (t->p.on_imm)
            t->p.on_imm(t->p.on_imm_ctx, pe->rank, imm, wc->byte_len);
        return;
    }
    if (wc->opcode != IBV_WC_RECV || !(wc->wc_flags & IBV_WC_WITH_IMM))
        return;
    uint32_t slot = (uint32_t)HB_WRID_LOW(wc->wr_id);
    t->st.sends_received++;
    if (t->p.on_recv && pe->rx && slot < t->rq_depth)
        t->p.on_recv(t->p.on_imm_ctx, pe->rank, imm,
                     pe->rx + (size_t)slot * t->p.recv_bytes, wc->byte_len);
}

void hb_tr_rc_recv_done(struct hb_transport *t, const struct ibv_wc *wc)
{
    int peer = HB_WRID_PEER(wc->wr_id);
    struct hb_peer *pe = peer < t->size && t->peers ? t->peers[peer] : NULL;
    if (!pe)
        return;
    if (pe->state == HB_PEER_FAILED) {
        if (wc->status == IBV_WC_SUCCESS)
            deliver(t, pe, wc);
        return;
    }
    pe->rq_posted--;
    if (wc->status != IBV_WC_SUCCESS) {
        hb_tr_peer_fail(
            t, pe, 1, "the connection to rank %d broke: receive %s (status %d)",
            peer, ibv_wc_status_str(wc->status), (int)wc->status);
        return;
    }
    if (pe->state == HB_PEER_ACCEPTED) {
        /* data from the requester: its QP is ready, whatever became of its RTU */
        hb_tr_cm_list_del(t, pe);
        pe->state = HB_PEER_CONNECTED;
        t->peers_connected++;
        t->st.connects_done++;
    }
    deliver(t, pe, wc);
    /* after on_recv returned: the buffer may be written again only now */
    if (pe->state != HB_PEER_FAILED && pe->qp &&
        post_slot(t, pe, (uint32_t)HB_WRID_LOW(wc->wr_id)))
        hb_tr_peer_fail(t, pe, 1, "cannot repost a receive for rank %d", peer);
}
