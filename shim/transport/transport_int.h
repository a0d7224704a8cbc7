/* Internals shared by transport_dev.c (device, control area, accounting),
 * transport_cm.c (bootstrap, UD connection management),
 * transport_data.c (RDMA posts, progress, failures) and transport_recv.c
 * (the receive queue: its buffers, reposting, receive completions). */
#ifndef HOTBUF_TRANSPORT_INT_H
#define HOTBUF_TRANSPORT_INT_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "transport.h"
#include "util/clock.h"

#define HB_TR_REASON_LEN 128
#define HB_TR_POLL_BATCH 16

/* ---- wire formats ------------------------------------------------------------------- */
#define HB_BOOT_MAGIC 0x48425431u /* "HBT1" */
#define HB_CM_MAGIC 0x4842434du   /* "HBCM" */
#define HB_UD_QKEY 0x1b0fbe75u    /* < 2^31: not a controlled qkey */

/* The bootstrap block: all a peer needs to reach this rank later. */
struct hb_boot {
    uint32_t magic;        /* HB_BOOT_MAGIC, or 0: this rank has no transport */
    uint8_t link_layer_ib; /* addressing: 1 LID, 0 GID (RoCE) */
    uint8_t mtu;           /* enum ibv_mtu of the active port */
    uint8_t rd_atomic;     /* RDMA READs this rank accepts in flight per QP */
    uint8_t pad0;
    uint16_t lid;
    uint16_t pad1;
    uint32_t ud_qpn;
    uint32_t ud_qkey;
    uint8_t gid[16];
    uint64_t scratch_addr; /* control area word a fence write may hit */
    uint32_t scratch_rkey;
    uint32_t
        recv_bytes; /* each receive it posts holds this much: SENDs up to it */
    uint64_t
        instance; /* random per process: datagrams for another incarnation are dropped */
};
_Static_assert(sizeof(struct hb_boot) <= HB_TRANSPORT_BOOT_BYTES,
               "boot block too big");

enum hb_cm_type { HB_CM_REQ = 1, HB_CM_REP, HB_CM_RTU, HB_CM_REJ };

/* A connection-management datagram (fits one UD slot after the 40-B GRH). */
struct hb_cm_msg {
    uint32_t magic;
    uint8_t type;      /* enum hb_cm_type */
    uint8_t rd_atomic; /* REQ/REP: READs the sender accepts in flight */
    uint16_t pad;
    uint32_t src, dst; /* ranks */
    uint64_t src_instance, dst_instance;
    uint32_t qpn;     /* REQ/REP: the sender's RC QP for this pair */
    uint32_t psn;     /* REQ/REP: its first packet sequence number */
    uint32_t attempt; /* REQ: the requester's attempt; REP/RTU/REJ: echoed */
    char text[36];    /* REJ: short reason */
};
#define HB_CM_MSG_BYTES ((uint32_t)sizeof(struct hb_cm_msg))

/* ---- control area layout ----------------------------------------------------------------- */
#define HB_UD_GRH 40
#define HB_UD_SLOT 128       /* GRH + message, rounded */
#define HB_UD_RECV_SLOTS 128 /* absorbs a burst of requests from 128 ranks */
#define HB_UD_SEND_SLOTS 32
#define HB_CTRL_SCRATCH_OFF                                                    \
    ((size_t)(HB_UD_RECV_SLOTS + HB_UD_SEND_SLOTS) * HB_UD_SLOT)
#define HB_CTRL_FENCE_SRC_OFF (HB_CTRL_SCRATCH_OFF + 64)
#define HB_CTRL_BYTES                                                          \
    (HB_CTRL_SCRATCH_OFF + 4096) /* 24 KiB: 20 KiB UD slots + one page */
_Static_assert(sizeof(struct hb_cm_msg) + HB_UD_GRH <= HB_UD_SLOT,
               "cm msg too big");

/* ---- work request ids -------------------------------------------------------------------- */
/* kind (3 bits) | peer (21 bits) | seq or slot (40 bits) */
enum hb_wr_kind {
    HB_WR_RC_SEND = 1,
    HB_WR_RC_RECV,
    HB_WR_UD_SEND,
    HB_WR_UD_RECV
};
#define HB_WRID(kind, peer, low)                                               \
    (((uint64_t)(kind) << 61) | ((uint64_t)(uint32_t)(peer) << 40) |           \
     ((uint64_t)(low) & ((1ull << 40) - 1)))
#define HB_WRID_KIND(w) ((int)((w) >> 61))
#define HB_WRID_PEER(w) ((int)(((w) >> 40) & ((1u << 21) - 1)))
#define HB_WRID_LOW(w) ((w) & ((1ull << 40) - 1))
#define HB_TR_MAX_RANKS (1 << 21)

/* ---- per-peer state ------------------------------------------------------------------------ */
struct hb_peer {
    int rank;
    enum hb_peer_state state;
    struct ibv_qp *qp;
    /* FAILED: the QP, in ERROR, until the CQ has been polled dry after the
     * failure (destroying it at once would let a provider drop the
     * successful completions still in the CQ: libmlx5 cleans them) */
    struct ibv_qp *dying;
    uint64_t dying_gen; /* t->fail_gen when it failed */
    struct ibv_ah *ah;  /* to the peer's UD QP */
    uint32_t my_psn;
    uint32_t remote_qpn, remote_psn;
    uint32_t
        attempt; /* REQ_SENT: ours; ACCEPTED/CONNECTED: the one we answered */
    uint8_t remote_rd_atomic;
    uint8_t
        qp_counted; /* QP's queues counted in cq_need (kept after a failure) */
    double t_start, t_next, backoff;
    int sends; /* datagrams sent for this attempt */
    /* send queue bookkeeping: WRs are numbered 1, 2, ...  RC completes in
     * order, so a completed signaled WR completes everything before it. */
    uint64_t posted;        /* seq of the last WR posted */
    uint64_t last_signaled; /* seq of the last signaled WR posted */
    uint64_t completed;     /* every WR <= completed is done */
    uint64_t
        fail_seq; /* FAILED: first seq that did not complete (0: none known) */
    uint32_t unsignaled;  /* WRs posted since the last signaled one */
    uint32_t rq_posted;   /* receive WRs on the QP */
    struct ibv_mr *rx_mr; /* the receive buffers (transport_recv.c), or NULL */
    unsigned char *rx;    /* rq_depth x recv_bytes: slot i is receive WR i's */
    long extra_bytes;     /* charged by upper layers */
    int cm_slot; /* index in the transport's cm_list, -1 if not there */
    char reason[HB_TR_REASON_LEN];
    uint8_t
        ops[]; /* opcode of WR seq, at seq % sq_depth (for failure reasons) */
};

struct hb_transport {
    struct hb_transport_params p;
    int rank, size;
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *ud;
    struct ibv_mr *ctrl_mr;
    unsigned char *ctrl; /* HB_CTRL_BYTES, page aligned */
    struct ibv_port_attr port_attr;
    struct ibv_device_attr dev_attr;
    int gid_index;
    union ibv_gid gid;
    char gid_type[16];
    char dev_name[64];
    char fork_msg[96];
    uint32_t max_inline; /* RC QPs (probed at open) */
    uint32_t ud_max_inline;
    uint32_t rd_atomic;          /* our max_rd_atomic / max_dest_rd_atomic */
    uint32_t sq_depth, rq_depth; /* actual capacities (probed) */
    uint64_t instance;
    int bootstrapped;
    struct hb_boot *boot;   /* size entries */
    struct hb_peer **peers; /* size entries, NULL until first used */
    /* UD send slots */
    uint32_t ud_free_mask; /* bit i: send slot i free */
    int ud_recv_posted;
    /* CQ capacity management */
    int cq_size; /* entries the CQ holds */
    int cq_need; /* entries the live QPs can produce at most */
    int *
        cm_list; /* ranks in REQ_SENT or ACCEPTED: their timers run in progress */
    int cm_active, cm_cap;
    int async_broken; /* the async fd failed: stop reading it */
    uint64_t progress_calls;
    double next_async;    /* next look at the async event queue */
    uint64_t cm_rx_count; /* datagrams received (debug_cm_drop_every) */
    uint64_t seed;
    struct hb_transport_stats st;
    size_t peers_connected, peers_failed;
    uint64_t fail_gen; /* peer failures so far: dying QPs are numbered */
    int ndying;        /* peers with a dying QP */
};

/* ---- shared helpers ------------------------------------------------------------------------ */
uint32_t hb_tr_random(struct hb_transport *t);

/* transport_dev.c */
struct ibv_qp *hb_tr_create_rc_qp(struct hb_transport *t, int peer, char *why,
                                  size_t len);
int hb_tr_ensure_cq(struct hb_transport *t, int extra, char *why, size_t len);
void hb_tr_get_mem_peer(const struct hb_transport *t,
                        struct hb_transport_mem *m);

/* transport_cm.c */
void hb_tr_cm_list_del(struct hb_transport *t, struct hb_peer *pe);
int hb_tr_send_cm(struct hb_transport *t, struct hb_peer *pe, int type,
                  const char *text);
struct hb_peer *hb_tr_peer_get(struct hb_transport *t, int peer);
void hb_tr_cm_recv(struct hb_transport *t, const struct ibv_wc *wc);
void hb_tr_cm_timers(struct hb_transport *t);
int hb_tr_ud_post_recv(struct hb_transport *t, int slot);
void hb_tr_ud_send_done(struct hb_transport *t, const struct ibv_wc *wc);

/* transport_recv.c */
int hb_tr_rx_create(struct hb_transport *t, struct hb_peer *pe);
void hb_tr_rx_destroy(struct hb_peer *pe, int *rc);
int hb_tr_post_recvs(struct hb_transport *t, struct hb_peer *pe);
void hb_tr_rc_recv_done(struct hb_transport *t, const struct ibv_wc *wc);

/* transport_data.c */
int hb_tr_poll(struct hb_transport *t);
void hb_tr_peer_fail(struct hb_transport *t, struct hb_peer *pe, int notify,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void hb_tr_check_async(struct hb_transport *t);

#endif
