/* The device side of hotbuf's transport: choosing the device, port and GID,
 * fork(), the memlock check, the registered control area, the completion
 * queue, RC queue-pair creation, and the memory accounting.
 *
 * Memory per connected peer (defaults; hb_transport_get_mem() gives the
 * numbers of the running instance, from the capacities the device actually
 * granted).  A model of what the verbs objects occupy, sized like mlx5 (the
 * common real NIC: 64-byte WQE basic blocks and CQEs), cf. the per-channel
 * tables of the ACP paper (Tables II-III):
 *
 *   RC send queue     64 WQEs x 128 B   8192 B  ctrl 16 + raddr 16 + max(2 sge x 16,
 *                                               4 + 64 inline) = 112 -> 2 basic blocks
 *   RC receive queue  16 WQEs x  16 B    256 B  zero-length receives (immediates only)
 *   CQ share          80 CQEs x  64 B   5120 B  each peer can produce sq + rq completions
 *   UD address handle                     96 B  to the peer's connection-management QP
 *   per-peer state                      328 B  struct hb_peer (264) + 1 B per send WQE
 *   -------------------------------------------
 *   total                             13992 B  = 13.7 KiB (budget: 64 KiB per peer, checked
 *                                               at open; hb_transport_charge() adds ring
 *                                               slots later, within the budget)
 *
 * No data slots: hot buffers move zero-copy from registered user memory.
 * An ACP channel with the smallest configuration of Table II (2 slots of
 * 4 KB) takes 8392 B on the sender and 8352 B on the receiver, both sides
 * together 16.7 KB per pair and direction; a hotbuf connection carries both
 * directions for 2 x 13.7 KiB per pair.
 *
 * Per rank of the job, connected or not: the 64-byte bootstrap block and an
 * 8-byte peer pointer = 72 B (ACP's basic layer: 176 B per process, Table I).
 *
 * Constant per process: the control area 24 KiB (registered: 128 UD receive
 * slots + 32 send slots of 128 B, one page with the fence scratch word), the
 * UD QP (32 x 128 B + 128 x 16 B = 6 KiB) and the CQ's base entries for it
 * (160 x 64 B = 10 KiB): 40 KiB.  On a real NIC queues and CQ are pinned
 * memory as well; the memlock check asks that these 40 KiB fit in the
 * transport's share of RLIMIT_MEMLOCK (util/memlock.h: the eighth the
 * registration cache and the MPI leave), i.e. a limit >= 320 KiB.
 * soft-RoCE keeps its queues in kernel memory (256-B send WQE slots), so
 * the model overstates nothing that matters there.
 *
 * fork(): with a kernel that copies pinned pages on fork (Linux >= 5.13,
 * ibv_is_fork_initialized() == IBV_FORK_UNNEEDED) nothing is needed, but
 * the transport calls ibv_fork_init() all the same unless fork mode is off:
 * the MPI's UCX calls it when it opens its device, which under hotbuf may
 * come after hotbuf's first registration (Open MPI's osc ucx opens at the
 * first window), and then fails with EINVAL, and UCX warns on stdout at
 * every fork() the application makes, as it would not without hotbuf
 * (tests/mpi/shared_pages.c).  The madvise it adds to each registration
 * is taken back on such kernels (regcache_verbs.c, undo_dontfork).
 * Otherwise a fork() in the application (system(), popen()) would make the
 * parent's next write to a registered page copy it, and the NIC would keep
 * using the old page: stale data, against invariant 2.  So, as rdma-core
 * advises and as UCX does by default, the transport calls ibv_fork_init()
 * (same as RDMAV_FORK_SAFE=1; its cost is one madvise per registration),
 * which must happen before the first registration in the process: the
 * runtime calls hb_transport_fork_prepare() before its ibv_reg_mr
 * calibration.  If memory was registered earlier (by the MPI library)
 * ibv_fork_init fails with EINVAL: the transport still opens and says so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "transport_int.h"
#include "util/ibdev.h"
#include "util/memlock.h"
#include "util/why.h"

#define EST_CQE 64
#define EST_AH 96
#define EST_RECV_WQE 16

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* mlx5-like send WQE: control + remote-address segments, then either the
 * data segments or the inline data, in 64-byte basic blocks. */
static size_t est_send_wqe(uint32_t max_sge, uint32_t max_inline)
{
    size_t data = 16 * (size_t)max_sge,
           inl = max_inline ? round_up(4 + max_inline, 16) : 0;
    return round_up(16 + 16 + (data > inl ? data : inl), 64);
}

static size_t est_ud_send_wqe(void)
{
    return round_up(16 + 48 + 16,
                    64); /* control + datagram + one data segment */
}

void hb_transport_params_default(struct hb_transport_params *p)
{
    memset(p, 0, sizeof(*p));
    p->device = "";
    p->port = 1;
    p->gid_index = -1;
    p->sq_depth = 64;
    p->rq_depth = 16;
    p->signal_every = 16;
    p->max_inline = 64;
    p->max_sge = 2;
    p->connect_timeout_s = 10;
    p->retry_s = 0.05;
    p->op_timeout_s = 30;
    p->peer_budget = 64 * 1024;
    p->fork_mode = HB_FORK_AUTO;
    p->memlock_check = 1;
}

uint32_t hb_tr_random(struct hb_transport *t)
{
    /* xorshift64*: PSNs and attempt ids only need to differ between tries */
    uint64_t x = t->seed;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    t->seed = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

/* ---- fork ----------------------------------------------------------------------------- */
int hb_transport_fork_prepare(int mode, char *msg, size_t len)
{
    switch (ibv_is_fork_initialized()) {
    case IBV_FORK_UNNEEDED:
        if (mode != HB_FORK_OFF)
            (void)ibv_fork_init(); /* for the MPI's own call (above) */
        hb_why(msg, len, "not needed: the kernel copies pinned pages on fork");
        return 0;
    case IBV_FORK_ENABLED:
        hb_why(msg, len,
               "ibv_fork_init in effect (RDMAV_FORK_SAFE or the MPI library)");
        return 0;
    default: break;
    }
    if (mode == HB_FORK_OFF) {
        hb_why(
            msg, len,
            "not protected (fork mode off): fork() may corrupt registered buffers");
        return -1;
    }
    int rc = ibv_fork_init();
    if (rc == 0) {
        hb_why(
            msg, len,
            "ibv_fork_init called: registered pages are not inherited by children");
        return 0;
    }
    if (rc == EINVAL)
        hb_why(
            msg, len,
            "not protected: memory was registered before ibv_fork_init (set RDMAV_FORK_SAFE=1)");
    else
        hb_why(msg, len, "not protected: ibv_fork_init failed: %s",
               strerror(rc));
    return -1;
}

/* ---- device and port -------------------------------------------------------------------- */
static int open_device(struct hb_transport *t, char *why, size_t len)
{
    struct hb_ibdev d;

    if (hb_ibdev_open(t->p.device, t->p.port, &d, why, len))
        return -1;
    t->ctx = d.ctx;
    t->dev_attr = d.dev_attr;
    t->port_attr = d.port_attr;
    snprintf(t->dev_name, sizeof(t->dev_name), "%s", d.name);
    return 0;
}

/* ---- GID ----------------------------------------------------------------------------------- */
static int gid_is_zero(const union ibv_gid *g)
{
    static const uint8_t z[16];
    return !memcmp(g->raw, z, 16);
}

static int gid_is_v4mapped(const union ibv_gid *g)
{
    static const uint8_t pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(g->raw, pre, 12);
}

/* Type from sysfs when ibv_query_gid_ex cannot tell: "RoCE v2", "IB/RoCE v1". */
static int sysfs_gid_type(struct hb_transport *t, int idx)
{
    char path[IBV_SYSFS_PATH_MAX + 64], buf[32] = "";
    snprintf(path, sizeof(path), "%s/ports/%d/gid_attrs/types/%d",
             t->ctx->device->ibdev_path, t->p.port, idx);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t k = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (k <= 0)
        return -1;
    buf[k] = 0;
    if (strstr(buf, "v2"))
        return IBV_GID_TYPE_ROCE_V2;
    if (strstr(buf, "v1"))
        return IBV_GID_TYPE_ROCE_V1;
    return -1;
}

static int query_gid(struct hb_transport *t, int idx, union ibv_gid *gid,
                     int *type)
{
    struct ibv_gid_entry e;
    int rc =
        ibv_query_gid_ex(t->ctx, (uint32_t)t->p.port, (uint32_t)idx, &e, 0);
    if (rc == 0) {
        *gid = e.gid;
        *type = (int)e.gid_type;
        return 0;
    }
    if (rc == ENODATA)
        return -1;
    /* older kernel: the plain query plus the sysfs attribute */
    if (ibv_query_gid(t->ctx, (uint8_t)t->p.port, idx, gid))
        return -1;
    *type = sysfs_gid_type(t, idx);
    return 0;
}

static int gid_score(const union ibv_gid *g, int type)
{
    if (gid_is_zero(g))
        return -1;
    int ll = g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
    if (type == IBV_GID_TYPE_ROCE_V2)
        return gid_is_v4mapped(g) ? 5 : ll ? 3 : 4;
    if (type == IBV_GID_TYPE_ROCE_V1)
        return gid_is_v4mapped(g) ? 2 : 1;
    return 0; /* unknown type */
}

static const char *gid_type_name(int type)
{
    switch (type) {
    case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
    case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
    case IBV_GID_TYPE_IB: return "IB";
    default: return "unknown";
    }
}

static int choose_gid(struct hb_transport *t, char *why, size_t len)
{
    if (t->port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND) {
        if (t->port_attr.lid == 0) {
            hb_why(why, len, "port %d of %s has no LID (no subnet manager?)",
                   t->p.port, t->dev_name);
            return -1;
        }
        t->gid_index = -1;
        ibv_query_gid(t->ctx, (uint8_t)t->p.port, 0, &t->gid);
        snprintf(t->gid_type, sizeof(t->gid_type), "IB");
        return 0;
    }
    int best = -1, best_score = -1, best_type = -1;
    union ibv_gid g;
    int type;
    if (t->p.gid_index >= 0) {
        if (query_gid(t, t->p.gid_index, &g, &type) || gid_is_zero(&g)) {
            hb_why(why, len, "GID index %d of %s port %d is empty",
                   t->p.gid_index, t->dev_name, t->p.port);
            return -1;
        }
        best = t->p.gid_index, best_type = type, t->gid = g;
    } else {
        /* the whole table in one call when the kernel can; else entry by entry */
        int n = t->dev_attr.phys_port_cnt * t->port_attr.gid_tbl_len;
        struct ibv_gid_entry *tab =
            n > 0 ? calloc((size_t)n, sizeof(*tab)) : NULL;
        ssize_t got = tab ? ibv_query_gid_table(t->ctx, tab, (size_t)n, 0) : -1;
        for (ssize_t k = 0; k < got; k++) {
            if (tab[k].port_num != (uint32_t)t->p.port)
                continue;
            int s = gid_score(&tab[k].gid, (int)tab[k].gid_type);
            if (s > best_score ||
                (s == best_score && (int)tab[k].gid_index < best)) {
                best_score = s, best = (int)tab[k].gid_index,
                best_type = (int)tab[k].gid_type;
                t->gid = tab[k].gid;
            }
        }
        free(tab);
        for (int i = 0; got < 0 && i < t->port_attr.gid_tbl_len; i++) {
            if (query_gid(t, i, &g, &type))
                continue;
            int s = gid_score(&g, type);
            if (s > best_score) {
                best_score = s, best = i, best_type = type, t->gid = g;
            }
        }
        if (best < 0) {
            hb_why(
                why, len,
                "no usable GID on %s port %d (no IP address on its network device?)",
                t->dev_name, t->p.port);
            return -1;
        }
    }
    t->gid_index = best;
    snprintf(t->gid_type, sizeof(t->gid_type), "%s", gid_type_name(best_type));
    return 0;
}

/* ---- CQ ------------------------------------------------------------------------------------ */
int hb_tr_ensure_cq(struct hb_transport *t, int extra, char *why, size_t len)
{
    int need = t->cq_need + extra;
    if (need <= t->cq_size)
        return 0;
    if (need > t->dev_attr.max_cqe) {
        hb_why(why, len, "the CQ would need %d entries, the device allows %d",
               need, t->dev_attr.max_cqe);
        return -1;
    }
    int want = t->cq_size * 2 > need ? t->cq_size * 2 : need;
    if (want > t->dev_attr.max_cqe)
        want = t->dev_attr.max_cqe;
    if (ibv_resize_cq(t->cq, want)) {
        hb_why(why, len, "cannot grow the CQ to %d entries: %s", want,
               strerror(errno));
        return -1;
    }
    t->cq_size = t->cq->cqe;
    t->st.cq_resizes++;
    return 0;
}

/* ---- QPs ----------------------------------------------------------------------------------- */
static struct ibv_qp *create_rc(struct hb_transport *t, uint32_t inl,
                                struct ibv_qp_cap *got, void *qp_ctx)
{
    struct ibv_qp_init_attr a = {
        .qp_context = qp_ctx,
        .send_cq = t->cq,
        .recv_cq = t->cq,
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 0,
        .cap = {.max_send_wr = t->p.sq_depth,
                .max_recv_wr = t->p.rq_depth,
                .max_send_sge = t->p.max_sge,
                .max_recv_sge = 1,
                .max_inline_data = inl},
    };
    struct ibv_qp *qp = ibv_create_qp(t->pd, &a);
    if (qp && got)
        *got = a.cap;
    return qp;
}

/* RC QP for peer, in INIT. */
struct ibv_qp *hb_tr_create_rc_qp(struct hb_transport *t, int peer, char *why,
                                  size_t len)
{
    struct ibv_qp *qp =
        create_rc(t, t->max_inline, NULL, (void *)(intptr_t)(peer + 1));
    if (!qp) {
        hb_why(why, len, "cannot create an RC QP: %s", strerror(errno));
        return NULL;
    }
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = (uint8_t)t->p.port,
        .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ,
    };
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                          IBV_QP_ACCESS_FLAGS)) {
        hb_why(why, len, "cannot move an RC QP to INIT: %s", strerror(errno));
        ibv_destroy_qp(qp);
        return NULL;
    }
    return qp;
}

/* One RC QP made and destroyed at open: the device must accept our queue
 * sizes, and tells how much inline data it grants. */
static int probe_rc(struct hb_transport *t, char *why, size_t len)
{
    struct ibv_qp_cap cap;
    uint32_t inl = t->p.max_inline;
    struct ibv_qp *qp = create_rc(t, inl, &cap, NULL);
    if (!qp && inl) {
        inl = 0;
        qp = create_rc(t, 0, &cap, NULL);
    }
    if (!qp) {
        hb_why(why, len,
               "cannot create an RC QP on %s (send %u x %u sge, recv %u): %s",
               t->dev_name, t->p.sq_depth, t->p.max_sge, t->p.rq_depth,
               strerror(errno));
        return -1;
    }
    t->max_inline = inl ? cap.max_inline_data : 0;
    t->sq_depth =
        cap.max_send_wr < t->p.sq_depth ? cap.max_send_wr : t->p.sq_depth;
    t->rq_depth =
        cap.max_recv_wr < t->p.rq_depth ? cap.max_recv_wr : t->p.rq_depth;
    ibv_destroy_qp(qp);
    return 0;
}

static int create_ud(struct hb_transport *t, char *why, size_t len)
{
    struct ibv_qp_init_attr a = {
        .send_cq = t->cq,
        .recv_cq = t->cq,
        .qp_type = IBV_QPT_UD,
        .sq_sig_all = 1,
        .cap = {.max_send_wr = HB_UD_SEND_SLOTS,
                .max_recv_wr = HB_UD_RECV_SLOTS,
                .max_send_sge = 1,
                .max_recv_sge = 1},
    };
    if (!(t->ud = ibv_create_qp(t->pd, &a))) {
        hb_why(why, len, "cannot create the UD QP on %s: %s", t->dev_name,
               strerror(errno));
        return -1;
    }
    struct ibv_qp_attr q = {.qp_state = IBV_QPS_INIT,
                            .pkey_index = 0,
                            .port_num = (uint8_t)t->p.port,
                            .qkey = HB_UD_QKEY};
    int rc = ibv_modify_qp(t->ud, &q,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                               IBV_QP_QKEY);
    if (!rc) {
        memset(&q, 0, sizeof(q));
        q.qp_state = IBV_QPS_RTR;
        rc = ibv_modify_qp(t->ud, &q, IBV_QP_STATE);
    }
    if (!rc) {
        memset(&q, 0, sizeof(q));
        q.qp_state = IBV_QPS_RTS;
        q.sq_psn = hb_tr_random(t) & 0xffffff;
        rc = ibv_modify_qp(t->ud, &q, IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
    if (rc) {
        hb_why(why, len, "cannot bring the UD QP to RTS: %s",
               strerror(rc > 0 ? rc : errno));
        return -1;
    }
    for (int i = 0; i < HB_UD_RECV_SLOTS; i++)
        if (hb_tr_ud_post_recv(t, i)) {
            hb_why(why, len, "cannot post UD receives: %s", strerror(errno));
            return -1;
        }
    t->ud_free_mask =
        HB_UD_SEND_SLOTS >= 32 ? 0xffffffffu : (1u << HB_UD_SEND_SLOTS) - 1;
    return 0;
}

/* ---- memory model -------------------------------------------------------------------------- */
static size_t constant_pinned(void)
{
    return HB_CTRL_BYTES + HB_UD_SEND_SLOTS * est_ud_send_wqe() +
           HB_UD_RECV_SLOTS * EST_RECV_WQE +
           (HB_UD_SEND_SLOTS + HB_UD_RECV_SLOTS) * EST_CQE;
}

static void mem_model(const struct hb_transport_params *p, uint32_t sq,
                      uint32_t rq, uint32_t inl, struct hb_transport_mem *m)
{
    m->sq_entries = sq;
    m->sq_wqe_bytes = est_send_wqe(p->max_sge, inl);
    m->rq_entries = rq;
    m->rq_wqe_bytes = EST_RECV_WQE;
    m->rx_bytes = (size_t)rq * p->recv_bytes;
    m->cq_entries = sq + rq;
    m->cqe_bytes = EST_CQE;
    m->ah_bytes = EST_AH;
    m->peer_struct_bytes =
        sizeof(struct hb_peer) + sq; /* + one opcode byte per send WQE */
    m->per_peer_bytes = m->sq_entries * m->sq_wqe_bytes +
                        m->rq_entries * m->rq_wqe_bytes + m->rx_bytes +
                        m->cq_entries * m->cqe_bytes + m->ah_bytes +
                        m->peer_struct_bytes;
    m->budget_per_peer = p->peer_budget;
    m->per_rank_bytes = HB_TRANSPORT_BOOT_BYTES + sizeof(struct hb_peer *);
    m->control_area_bytes = HB_CTRL_BYTES;
    m->ud_qp_bytes =
        HB_UD_SEND_SLOTS * est_ud_send_wqe() + HB_UD_RECV_SLOTS * EST_RECV_WQE;
    m->cq_base_bytes = (HB_UD_SEND_SLOTS + HB_UD_RECV_SLOTS) * EST_CQE;
    m->constant_bytes =
        m->control_area_bytes + m->ud_qp_bytes + m->cq_base_bytes;
}

void hb_transport_get_mem(const struct hb_transport *t,
                          struct hb_transport_mem *m)
{
    memset(m, 0, sizeof(*m));
    mem_model(&t->p, t->sq_depth, t->rq_depth, t->max_inline, m);
    size_t live = 0, connecting = 0;
    long extra = 0;
    for (int i = 0; t->peers && i < t->size; i++) {
        const struct hb_peer *pe = t->peers[i];
        if (!pe)
            continue;
        if (pe->qp)
            live++;
        if (pe->state == HB_PEER_REQ_SENT || pe->state == HB_PEER_ACCEPTED)
            connecting++;
        extra += pe->extra_bytes;
    }
    m->peers_connected = t->peers_connected;
    m->peers_failed = t->peers_failed;
    m->peers_connecting = connecting;
    m->peer_extra_bytes = extra > 0 ? (size_t)extra : 0;
    m->total_bytes = m->constant_bytes + (size_t)t->size * m->per_rank_bytes +
                     live * m->per_peer_bytes + m->peer_extra_bytes;
    m->cq_entries_now = (size_t)t->cq_size;
}

int hb_transport_charge(struct hb_transport *t, int peer, long delta)
{
    struct hb_peer *pe = hb_tr_peer_get(t, peer);
    if (!pe)
        return -1;
    struct hb_transport_mem m;
    mem_model(&t->p, t->sq_depth, t->rq_depth, t->max_inline, &m);
    long next = pe->extra_bytes + delta;
    if (next < 0 || m.per_peer_bytes + (size_t)next > t->p.peer_budget)
        return -1;
    pe->extra_bytes = next;
    return 0;
}

/* ---- open / close ---------------------------------------------------------------------------- */
static int check_params(const struct hb_transport_params *p, int rank, int size,
                        char *why, size_t len)
{
    if (size < 1 || size > HB_TR_MAX_RANKS || rank < 0 || rank >= size) {
        hb_why(why, len,
               "rank %d of %d out of the transport's range (at most %d ranks)",
               rank, size, HB_TR_MAX_RANKS);
        return -1;
    }
    if (p->port < 1 || p->port > 255 || p->sq_depth < 2 || p->rq_depth < 1 ||
        p->signal_every < 1 || p->signal_every > p->sq_depth / 2 ||
        p->max_sge < 1 || p->max_sge > HB_TR_MAX_SGE ||
        p->connect_timeout_s <= 0 || p->retry_s <= 0 || p->op_timeout_s <= 0) {
        hb_why(
            why, len,
            "invalid transport parameters (port %d, sq %u, rq %u, signal every %u, sge %u)",
            p->port, p->sq_depth, p->rq_depth, p->signal_every, p->max_sge);
        return -1;
    }
    struct hb_transport_mem m;
    mem_model(p, p->sq_depth, p->rq_depth, p->max_inline, &m);
    if (m.per_peer_bytes > p->peer_budget) {
        hb_why(
            why, len,
            "a connection would take %zu B, over the %zu B budget per peer (lower the queue depths)",
            m.per_peer_bytes, p->peer_budget);
        return -1;
    }
    return 0;
}

int hb_transport_open(const struct hb_transport_params *params, int rank,
                      int size, struct hb_transport **out, char *why,
                      size_t len)
{
    struct hb_transport_params defaults;
    if (!params) {
        hb_transport_params_default(&defaults);
        params = &defaults;
    }
    char scratch[8];
    if (!why || !len)
        why = scratch, len = sizeof(scratch);
    why[0] = 0;
    *out = NULL;
    if (check_params(params, rank, size, why, len))
        return -1;
    struct hb_transport *t = calloc(1, sizeof(*t));
    if (!t) {
        hb_why(why, len, "out of memory");
        return -1;
    }
    t->p = *params;
    t->rank = rank, t->size = size;
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (uint64_t)hb_clock_s() * 1000003u ^ (uint64_t)getpid() << 20;
    t->instance = r | 1;
    t->seed = r ^ ((uint64_t)rank << 32) ^ 0x9e3779b97f4a7c15ull;
    if (!t->seed)
        t->seed = 1;

    /* fork first: before anything of ours is registered */
    hb_transport_fork_prepare(t->p.fork_mode, t->fork_msg, sizeof(t->fork_msg));

    size_t limit = hb_memlock_limit();
    if (t->p.memlock_check && limit &&
        constant_pinned() > hb_memlock_transport_share(limit)) {
        hb_why(
            why, len,
            "RLIMIT_MEMLOCK is %zu KiB: the transport pins %zu KiB (control area, queues) and needs "
            "them in the eighth the registration cache and the MPI leave, so at least %zu KiB (ulimit -l)",
            limit / 1024, constant_pinned() / 1024,
            hb_memlock_limit_for_transport(constant_pinned()) / 1024);
        goto fail;
    }
    if (open_device(t, why, len))
        goto fail;
    if (choose_gid(t, why, len))
        goto fail;
    if (!(t->pd = ibv_alloc_pd(t->ctx))) {
        hb_why(why, len, "ibv_alloc_pd failed on %s: %s", t->dev_name,
               strerror(errno));
        goto fail;
    }
    if (posix_memalign((void **)&t->ctrl, 4096, HB_CTRL_BYTES)) {
        hb_why(why, len, "out of memory for the control area");
        goto fail;
    }
    memset(t->ctrl, 0, HB_CTRL_BYTES);
    t->ctrl_mr = ibv_reg_mr(t->pd, t->ctrl, HB_CTRL_BYTES,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!t->ctrl_mr) {
        int e = errno;
        if (limit)
            hb_why(
                why, len,
                "cannot register the %zu KiB control area on %s: %s (RLIMIT_MEMLOCK %zu KiB)",
                (size_t)HB_CTRL_BYTES / 1024, t->dev_name, strerror(e),
                limit / 1024);
        else
            hb_why(why, len,
                   "cannot register the %zu KiB control area on %s: %s",
                   (size_t)HB_CTRL_BYTES / 1024, t->dev_name, strerror(e));
        goto fail;
    }
    /* the CQ starts with room for the UD QP and one peer; it grows per peer */
    t->cq_need = HB_UD_SEND_SLOTS + HB_UD_RECV_SLOTS;
    int cqe = t->cq_need + (int)(t->p.sq_depth + t->p.rq_depth);
    if (cqe > t->dev_attr.max_cqe)
        cqe = t->dev_attr.max_cqe;
    if (!(t->cq = ibv_create_cq(t->ctx, cqe, NULL, NULL, 0))) {
        hb_why(why, len, "cannot create a CQ of %d entries on %s: %s", cqe,
               t->dev_name, strerror(errno));
        goto fail;
    }
    t->cq_size = t->cq->cqe;
    if (probe_rc(t, why, len) || create_ud(t, why, len))
        goto fail;
    t->rd_atomic = (uint32_t)t->dev_attr.max_qp_rd_atom;
    if ((uint32_t)t->dev_attr.max_qp_init_rd_atom < t->rd_atomic)
        t->rd_atomic = (uint32_t)t->dev_attr.max_qp_init_rd_atom;
    if (t->rd_atomic > 16)
        t->rd_atomic = 16;
    if (t->rd_atomic < 1)
        t->rd_atomic = 1;
    /* async events (QP fatal, device fatal) are read without blocking */
    int fl = fcntl(t->ctx->async_fd, F_GETFL);
    if (fl < 0 || fcntl(t->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        hb_why(why, len, "cannot make the async event fd of %s non-blocking",
               t->dev_name);
        goto fail;
    }
    *out = t;
    return 0;
fail:
    hb_transport_close(t, NULL, 0);
    return -1;
}

/* Keeps the first failure of a teardown step in why (rc: 0, or an errno
 * value as the ibv_destroy and ibv_dealloc calls return it). */
static int teardown_check(int rc, const char *what, const char *dev, char *why,
                          size_t len, int *failed)
{
    if (rc == 0)
        return 0;
    if (!*failed) {
        if (rc == EBUSY && !strcmp(what, "ibv_dealloc_pd"))
            hb_why(
                why, len,
                "ibv_dealloc_pd on %s: %s (a memory registration was left on "
                "the transport's protection domain)",
                dev, strerror(rc));
        else
            hb_why(why, len, "%s on %s: %s", what, dev,
                   strerror(rc > 0 ? rc : errno));
    }
    *failed = 1;
    return -1;
}

static void close_peers(struct hb_transport *t, char *why, size_t len,
                        int *failed)
{
    for (int i = 0; t->peers && i < t->size; i++) {
        struct hb_peer *pe = t->peers[i];
        if (!pe)
            continue;
        if (pe->qp)
            teardown_check(ibv_destroy_qp(pe->qp), "ibv_destroy_qp",
                           t->dev_name, why, len, failed);
        if (pe->dying) /* failed, its completions no longer wanted */
            teardown_check(ibv_destroy_qp(pe->dying), "ibv_destroy_qp",
                           t->dev_name, why, len, failed);
        if (pe->ah)
            teardown_check(ibv_destroy_ah(pe->ah), "ibv_destroy_ah",
                           t->dev_name, why, len, failed);
        int rc = 0;
        hb_tr_rx_destroy(pe, &rc); /* after the QP: no more DMA there */
        if (rc)
            teardown_check(rc, "ibv_dereg_mr (receive buffers)", t->dev_name,
                           why, len, failed);
        free(pe);
    }
    free(t->peers);
}

int hb_transport_close(struct hb_transport *t, char *why, size_t len)
{
    int failed = 0;
    const char *dev;

    if (!t)
        return 0;
    dev = t->dev_name;
    close_peers(t, why, len, &failed);
    free(t->boot);
    if (t->ud)
        teardown_check(ibv_destroy_qp(t->ud), "ibv_destroy_qp (UD)", dev, why,
                       len, &failed);
    if (t->cq)
        teardown_check(ibv_destroy_cq(t->cq), "ibv_destroy_cq", dev, why, len,
                       &failed);
    if (t->ctrl_mr)
        teardown_check(ibv_dereg_mr(t->ctrl_mr), "ibv_dereg_mr", dev, why, len,
                       &failed);
    free(t->ctrl);
    if (t->pd)
        teardown_check(ibv_dealloc_pd(t->pd), "ibv_dealloc_pd", dev, why, len,
                       &failed);
    if (t->ctx)
        teardown_check(ibv_close_device(t->ctx), "ibv_close_device", dev, why,
                       len, &failed);
    free(t);
    return failed ? -1 : 0;
}

/* ---- accessors ---------------------------------------------------------------------------------- */
struct ibv_pd *hb_transport_pd(struct hb_transport *t)
{
    return t->pd;
}

static int mtu_bytes(enum ibv_mtu m)
{
    return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

void hb_transport_get_info(const struct hb_transport *t,
                           struct hb_transport_info *in)
{
    memset(in, 0, sizeof(*in));
    snprintf(in->device, sizeof(in->device), "%s", t->dev_name);
    in->port = t->p.port;
    in->link_layer_ib = t->port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND;
    in->gid_index = t->gid_index;
    snprintf(in->gid_type, sizeof(in->gid_type), "%s", t->gid_type);
    const uint8_t *g = t->gid.raw;
    snprintf(
        in->gid, sizeof(in->gid),
        "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
        g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10],
        g[11], g[12], g[13], g[14], g[15]);
    in->lid = t->port_attr.lid;
    in->active_mtu = mtu_bytes(t->port_attr.active_mtu);
    in->max_inline = t->max_inline;
    in->max_msg = t->port_attr.max_msg_sz;
    in->sq_depth = t->sq_depth;
    in->rq_depth = t->rq_depth;
    in->recv_bytes = t->p.recv_bytes;
    in->signal_every = t->p.signal_every;
    in->max_sge = t->p.max_sge;
    in->max_rd_atomic = t->rd_atomic;
    snprintf(in->fork, sizeof(in->fork), "%s", t->fork_msg);
}

void hb_transport_get_stats(const struct hb_transport *t,
                            struct hb_transport_stats *s)
{
    *s = t->st;
}

uint64_t hb_transport_debug_scratch(struct hb_transport *t, uint32_t *rkey)
{
    *rkey = t->ctrl_mr->rkey;
    return (uint64_t)(uintptr_t)(t->ctrl + HB_CTRL_SCRATCH_OFF);
}
