/* Multicast on unreliable datagram QPs: one sender's packets reach every
 * receiver attached to its group, and the fabric (or, on soft-RoCE, the
 * kernel) replicates them.  What a caller gets is UD's contract, nothing
 * more: a packet is at most one MTU, may be lost (no receive posted, a
 * full queue anywhere on the way) and, across a real fabric, may arrive
 * late; receives complete in the order their packets arrive, not in the
 * order of the addresses they were posted with.  Callers name their
 * packets in the immediate and repair losses themselves (the Allgather:
 * shim/coll/allgather_mcast.c).
 *
 * Why multicast at all: an Allgather sends every block to p-1 ranks.  Over
 * RC a sender pays for each copy (on rxe: the payload copied into a packet
 * and checksummed once per destination); a multicast packet is built once
 * and the network makes the copies.  Measured on rxe (README, "Nor does
 * multicast"): one 64 KiB block to 3 receivers 0.78 of three RC writes, to
 * 7 receivers 0.55.
 *
 * Joining.  A RoCE v2 group is an IP multicast address (the GID
 * ::ffff:239.x.y.z).  ibv_attach_mcast only tells the device which QPs
 * take the group's packets; the host must also be a member at the IP
 * level, or the kernel (rxe: its loopback of local multicast) and the
 * switches (IGMP snooping) drop them.  rdma_cm's rdma_join_multicast does
 * that join inside the kernel; here a UDP socket does it
 * (IP_ADD_MEMBERSHIP on the device's address), which needs no rdma_cm
 * context of its own.  A socket holds at most igmp_max_memberships
 * groups (20 by default): a new socket is opened when one is full.
 * InfiniBand needs the subnet manager to create the group (an SA join):
 * not done, so multicast is refused there (hb_tr_mcast_supported).
 *
 * Addresses and keys.  Each sender draws its group at random in
 * 239.192.0.0/14 (organisation-local scope) and a random Q_Key; a
 * receiving QP takes only packets with its group's Q_Key, so another job's
 * group that happens to have the same address does not get in (and the
 * caller's immediates name call and packet besides).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport_int.h"
#include "util/why.h"

#define MC_GRH 40 /* bytes of the global route header a UD receive gets first */
#define MC_SOCK_GROUPS 20 /* IP memberships per socket (igmp_max_memberships) */
#define MC_WRID_Q_SHIFT                                                        \
    48 /* a receive's wr_id: queue index above, caller's below */

struct hb_tr_mcast {
    struct hb_transport *t;
    struct ibv_cq *rcq;     /* receives of every QP here */
    struct ibv_cq *scq;     /* the send QP's, polled apart: a caller may
                               leave packets queued in rcq */
    struct ibv_qp *send_qp; /* to the own group */
    struct ibv_ah *ah;      /* the own group's address */
    uint32_t send_qkey;
    uint32_t send_depth, send_free;
    struct ibv_qp **recv_qp; /* nrecv: one per group listened to */
    union ibv_gid *recv_gid;
    int nrecv;
    int *sock, nsock; /* the IP memberships */
    char *grh;        /* every receive's header lands here: never read */
    struct ibv_mr *grh_mr;
    uint32_t mtu;
    unsigned debug_drop_every; /* tests: packets not posted (as if lost) */
    struct hb_tr_mcast_stats st;
};

int hb_tr_mcast_supported(const struct hb_transport *t, char *why, size_t len)
{
    if (t->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
        hb_why(
            why, len,
            "InfiniBand (multicast needs the subnet manager's groups: not done)");
        return -1;
    }
    if (strcmp(t->gid_type, "RoCE v2")) {
        hb_why(why, len, "the GID in use is %s, not RoCE v2", t->gid_type);
        return -1;
    }
    static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(t->gid.raw, v4, sizeof v4)) {
        hb_why(why, len, "the GID in use is not an IPv4 address");
        return -1;
    }
    return 0;
}

void hb_tr_mcast_group_new(struct hb_transport *t, struct hb_tr_mgroup *g)
{
    uint32_t r = hb_tr_random(t);
    memset(g, 0, sizeof *g);
    g->gid[10] = g->gid[11] = 0xff;
    g->gid[12] = 239;
    g->gid[13] = (uint8_t)(192 | ((r >> 16) & 3));
    g->gid[14] = (uint8_t)(r >> 8);
    g->gid[15] = (uint8_t)r;
    /* bit 31 set would be a controlled Q_Key (privileged); 0 is avoided */
    g->qkey = (hb_tr_random(t) & 0x7fffffffu) | 1u;
}

/* INIT -> RTR -> RTS for a UD QP taking qkey. */
static int ud_up(struct hb_tr_mcast *m, struct ibv_qp *qp, uint32_t qkey)
{
    struct ibv_qp_attr q = {.qp_state = IBV_QPS_INIT,
                            .pkey_index = 0,
                            .port_num = (uint8_t)m->t->p.port,
                            .qkey = qkey};
    int rc = ibv_modify_qp(
        qp, &q, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
    if (!rc) {
        memset(&q, 0, sizeof q);
        q.qp_state = IBV_QPS_RTR;
        rc = ibv_modify_qp(qp, &q, IBV_QP_STATE);
    }
    if (!rc) {
        memset(&q, 0, sizeof q);
        q.qp_state = IBV_QPS_RTS;
        q.sq_psn = hb_tr_random(m->t) & 0xffffff;
        rc = ibv_modify_qp(qp, &q, IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
    return rc ? (rc > 0 ? rc : errno) : 0;
}

static struct ibv_qp *ud_create(struct hb_tr_mcast *m, uint32_t send_wr,
                                uint32_t recv_wr)
{
    struct ibv_qp_init_attr a = {
        .send_cq = m->scq,
        .recv_cq = m->rcq,
        .qp_type = IBV_QPT_UD,
        .cap = {.max_send_wr = send_wr ? send_wr : 1,
                .max_recv_wr = recv_wr ? recv_wr : 1,
                .max_send_sge = 1,
                .max_recv_sge = 2},
    };
    return ibv_create_qp(m->t->pd, &a);
}

/* The host joins group gid at the IP level, on the device's address. */
static int ip_join(struct hb_tr_mcast *m, const union ibv_gid *gid)
{
    struct ip_mreqn q;
    memset(&q, 0, sizeof q);
    memcpy(&q.imr_multiaddr.s_addr, gid->raw + 12, 4);
    memcpy(&q.imr_address.s_addr, m->t->gid.raw + 12, 4);
    for (int tries = 0; tries < 2; tries++) {
        if (m->nsock && !setsockopt(m->sock[m->nsock - 1], IPPROTO_IP,
                                    IP_ADD_MEMBERSHIP, &q, sizeof q))
            return 0;
        if (m->nsock && errno != ENOBUFS)
            return errno;
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
            return errno;
        m->sock[m->nsock++] = s;
    }
    return ENOBUFS;
}

static int open_recv(struct hb_tr_mcast *m, const struct hb_tr_mgroup *g, int i,
                     uint32_t depth, char *why, size_t len)
{
    memcpy(m->recv_gid[i].raw, g->gid, 16);
    if (!(m->recv_qp[i] = ud_create(m, 0, depth))) {
        hb_why(why, len, "cannot create a multicast receive QP: %s",
               strerror(errno));
        return -1;
    }
    int e = ud_up(m, m->recv_qp[i], g->qkey);
    if (!e)
        e = ibv_attach_mcast(m->recv_qp[i], &m->recv_gid[i], 0);
    if (!e)
        e = ip_join(m, &m->recv_gid[i]);
    if (e) {
        hb_why(why, len, "cannot join multicast group %u.%u.%u.%u: %s",
               g->gid[12], g->gid[13], g->gid[14], g->gid[15], strerror(e));
        return -1;
    }
    return 0;
}

static int open_send(struct hb_tr_mcast *m, const struct hb_tr_mgroup *own,
                     uint32_t depth, char *why, size_t len)
{
    m->send_depth = m->send_free = depth;
    m->send_qkey = own->qkey;
    int e = 0;
    if (!(m->send_qp = ud_create(m, depth, 0)) ||
        (e = ud_up(m, m->send_qp, own->qkey))) {
        hb_why(why, len, "cannot set up the multicast send QP: %s",
               strerror(e ? e : errno));
        return -1;
    }
    struct ibv_ah_attr a = {.is_global = 1, .port_num = (uint8_t)m->t->p.port};
    memcpy(a.grh.dgid.raw, own->gid, 16);
    a.grh.sgid_index = (uint8_t)m->t->gid_index;
    a.grh.hop_limit = 64;
    if (!(m->ah = ibv_create_ah(m->t->pd, &a))) {
        hb_why(why, len, "cannot create the multicast address handle: %s",
               strerror(errno));
        return -1;
    }
    return 0;
}

int hb_tr_mcast_open(struct hb_transport *t, const struct hb_tr_mgroup *own,
                     const struct hb_tr_mgroup *groups, int nrecv,
                     uint32_t depth, struct hb_tr_mcast **out, char *why,
                     size_t len)
{
    *out = NULL;
    if (hb_tr_mcast_supported(t, why, len))
        return -1;
    struct hb_tr_mcast *m = calloc(1, sizeof *m);
    if (!m) {
        hb_why(why, len, "out of memory");
        return -1;
    }
    m->t = t;
    m->nrecv = nrecv;
    m->mtu = 128u << t->port_attr.active_mtu;
    m->recv_qp = calloc((size_t)nrecv + 1, sizeof *m->recv_qp);
    m->recv_gid = calloc((size_t)nrecv + 1, sizeof *m->recv_gid);
    m->sock = calloc((size_t)nrecv / MC_SOCK_GROUPS + 2, sizeof *m->sock);
    m->grh = calloc(1, 64);
    int cqe = (int)(depth * (uint32_t)(nrecv ? nrecv : 1));
    if (!m->recv_qp || !m->recv_gid || !m->sock || !m->grh) {
        hb_why(why, len, "out of memory");
        goto fail;
    }
    if (!(m->grh_mr = ibv_reg_mr(t->pd, m->grh, 64, IBV_ACCESS_LOCAL_WRITE)) ||
        !(m->rcq = ibv_create_cq(t->ctx, cqe, NULL, NULL, 0)) ||
        !(m->scq = ibv_create_cq(t->ctx, (int)depth, NULL, NULL, 0))) {
        hb_why(why, len,
               "cannot register or create the multicast CQ (%d entries): %s",
               cqe, strerror(errno));
        goto fail;
    }
    if (open_send(m, own, depth, why, len))
        goto fail;
    for (int i = 0; i < nrecv; i++)
        if (open_recv(m, &groups[i], i, depth, why, len))
            goto fail;
    *out = m;
    return 0;
fail:
    hb_tr_mcast_close(m);
    return -1;
}

uint32_t hb_tr_mcast_mtu(const struct hb_tr_mcast *m)
{
    return m->mtu;
}

int hb_tr_mcast_post_recv(struct hb_tr_mcast *m, int q, uint64_t wr_id,
                          void *addr, uint32_t len, uint32_t lkey)
{
    if (q < 0 || q >= m->nrecv || len > m->mtu || wr_id >> MC_WRID_Q_SHIFT)
        return HB_TR_EINVAL;
    struct ibv_sge sg[2] = {{(uintptr_t)m->grh, MC_GRH, m->grh_mr->lkey},
                            {(uintptr_t)addr, len, lkey}};
    struct ibv_recv_wr wr = {.wr_id = (uint64_t)q << MC_WRID_Q_SHIFT | wr_id,
                             .sg_list = sg,
                             .num_sge = 2},
                       *bad;
    if (ibv_post_recv(m->recv_qp[q], &wr, &bad))
        return HB_TR_FAILED;
    m->st.recvs_posted++;
    return HB_TR_OK;
}

static int poll_sends(struct hb_tr_mcast *m);

/* Packets posted are numbered since open: debug_drop_every N skips
 * numbers N-1, 2N-1, ... (the caller sees a loss, never an error). */
static int dropped(struct hb_tr_mcast *m)
{
    return m->debug_drop_every && (m->st.packets_sent + m->st.packets_dropped +
                                   1) % m->debug_drop_every ==
                                      0;
}

/* Posts packets first..end-1 of (addr, len) as one chain of at most
 * MC_BATCH work requests, the last one signaled: its completion frees them
 * all (a UD send queue completes in order). */
#define MC_BATCH 64
static int send_batch(struct hb_tr_mcast *m, const char *addr, size_t len,
                      uint32_t lkey, uint32_t imm_base, size_t first,
                      size_t end)
{
    struct ibv_sge sg[MC_BATCH];
    struct ibv_send_wr wr[MC_BATCH], *bad;
    int n = 0;
    for (size_t k = first; k < end; k++) {
        if (dropped(m)) {
            m->st.packets_dropped++;
            continue;
        }
        size_t off = k * m->mtu, l = len - off < m->mtu ? len - off : m->mtu;
        sg[n] = (struct ibv_sge){(uintptr_t)addr + off, (uint32_t)l, lkey};
        wr[n] = (struct ibv_send_wr){.sg_list = &sg[n],
                                     .num_sge = l ? 1 : 0,
                                     .opcode = IBV_WR_SEND_WITH_IMM,
                                     .imm_data = htonl(imm_base + (uint32_t)k),
                                     .wr.ud = {.ah = m->ah,
                                               .remote_qpn = 0xffffff,
                                               .remote_qkey = m->send_qkey}};
        if (n)
            wr[n - 1].next = &wr[n];
        n++;
        m->st.packets_sent++;
    }
    if (!n)
        return HB_TR_OK;
    wr[n - 1].send_flags = IBV_SEND_SIGNALED;
    wr[n - 1].wr_id = (uint64_t)n;
    if (ibv_post_send(m->send_qp, wr, &bad))
        return HB_TR_FAILED;
    m->send_free -= (uint32_t)n;
    m->st.sends++;
    return HB_TR_OK;
}

int hb_tr_mcast_send(struct hb_tr_mcast *m, const void *addr, size_t len,
                     uint32_t lkey, uint32_t imm_base)
{
    size_t npk = len ? (len + m->mtu - 1) / m->mtu : 1;
    if (npk > m->send_depth)
        return HB_TR_EINVAL;
    if (npk > m->send_free && poll_sends(m) < 0)
        return HB_TR_FAILED;
    if (npk > m->send_free)
        return HB_TR_BUSY;
    for (size_t k = 0; k < npk; k += MC_BATCH) {
        int rc = send_batch(m, addr, len, lkey, imm_base, k,
                            npk - k < MC_BATCH ? npk : k + MC_BATCH);
        if (rc)
            return rc;
    }
    return HB_TR_OK;
}

int hb_tr_mcast_poll(struct hb_tr_mcast *m, struct hb_tr_mcast_event *ev,
                     int max)
{
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(m->rcq, max < 16 ? max : 16, wc);
    if (n < 0)
        return HB_TR_FAILED;
    for (int i = 0; i < n; i++) {
        const struct ibv_wc *w = &wc[i];
        int ok = w->status == IBV_WC_SUCCESS;
        int imm = !!(w->wc_flags & IBV_WC_WITH_IMM);
        ev[i] = (struct hb_tr_mcast_event){
            .q = (int)(w->wr_id >> MC_WRID_Q_SHIFT),
            .wr_id = w->wr_id & ((1ull << MC_WRID_Q_SHIFT) - 1),
            .imm = imm ? ntohl(w->imm_data) : 0,
            .has_imm = imm,
            .len = w->byte_len >= MC_GRH ? w->byte_len - MC_GRH : 0,
            .ok = ok};
        m->st.packets_received += (uint64_t)ok;
    }
    return n;
}

/* Send completions: each one frees its batch (wr_id: its length). */
static int poll_sends(struct hb_tr_mcast *m)
{
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(m->scq, 16, wc), failed = n < 0;
    for (int i = 0; i < n; i++) {
        m->send_free += (uint32_t)wc[i].wr_id;
        failed |= wc[i].status != IBV_WC_SUCCESS;
    }
    return failed ? HB_TR_FAILED : n;
}

int hb_tr_mcast_send_idle(struct hb_tr_mcast *m)
{
    if (m->send_free < m->send_depth && poll_sends(m) < 0)
        return HB_TR_FAILED;
    return m->send_free == m->send_depth;
}

void hb_tr_mcast_get_stats(const struct hb_tr_mcast *m,
                           struct hb_tr_mcast_stats *s)
{
    *s = m->st;
}

void hb_tr_mcast_debug_drop(struct hb_tr_mcast *m, unsigned every)
{
    m->debug_drop_every = every;
}

void hb_tr_mcast_close(struct hb_tr_mcast *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nrecv; i++)
        if (m->recv_qp && m->recv_qp[i]) {
            ibv_detach_mcast(m->recv_qp[i], &m->recv_gid[i], 0);
            ibv_destroy_qp(m->recv_qp[i]);
        }
    if (m->send_qp)
        ibv_destroy_qp(m->send_qp);
    if (m->ah)
        ibv_destroy_ah(m->ah);
    if (m->rcq)
        ibv_destroy_cq(m->rcq);
    if (m->scq)
        ibv_destroy_cq(m->scq);
    if (m->grh_mr)
        ibv_dereg_mr(m->grh_mr);
    for (int i = 0; i < m->nsock; i++)
        close(m->sock[i]); /* leaves its groups */
    free(m->sock);
    free(m->grh);
    free(m->recv_qp);
    free(m->recv_gid);
    free(m);
}
