/* hotbuf's own verbs transport: one device/port, one protection domain, one
 * completion queue, a small UD queue pair for connection management and
 * RC queue pairs created on demand, one per peer that is actually used.
 *
 * MPI-free.  The runtime provides the one collective the transport needs
 * (an allgather of a fixed-size block per rank, done once at start-up) as a
 * callback, and a "yield" callback for waits (MPI progress).
 *
 * Life cycle:
 *     hb_transport_params_default(&p); p.device = ...; p.port = ...;
 *     rc = hb_transport_open(&p, rank, size, &t, why, sizeof why);
 *     rc == 0 ? hb_transport_bootstrap(t, allgather, ctx, ...)           // every rank, once
 *             : hb_transport_bootstrap_absent(size, allgather, ctx);
 *     ... hb_transport_write(t, peer, ...) -> HB_TR_AGAIN while connecting
 *         (use MPI for that message), HB_TR_OK once posted, HB_TR_FAILED
 *         for a peer that cannot be reached (use PMPI for it forever) ...
 *     hb_transport_progress(t);    // often: between MPI calls, in waits
 *     hb_transport_close(t, why, sizeof why); // after a barrier: no peer still writes here
 *
 * Not thread-safe: the caller serializes every call (hotbuf's runtime lock
 * under MPI_THREAD_MULTIPLE).  Memory registration of user buffers is the
 * registration cache's business (on hb_transport_pd()); the transport only
 * registers its own control area.
 */
#ifndef HOTBUF_TRANSPORT_H
#define HOTBUF_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

struct hb_transport;
struct ibv_pd;

/* ---- return codes ------------------------------------------------------------ */
enum {
    HB_TR_OK = 0, /* done / posted / connected */
    HB_TR_AGAIN =
        1, /* connection under way (or operation pending): use MPI now, ask later */
    HB_TR_BUSY = 2,    /* send queue full: progress and retry (never blocks) */
    HB_TR_FAILED = -1, /* the peer is failed: use PMPI for it from now on */
    HB_TR_EINVAL =
        -2, /* bad argument (length, sge count, inline too long, peer out of range) */
};

/* Peer states (see the state machine in transport_cm.c). */
enum hb_peer_state {
    HB_PEER_IDLE,     /* never asked for: no QP, no memory */
    HB_PEER_REQ_SENT, /* we asked; our RC QP waits in INIT for the peer's reply */
    HB_PEER_ACCEPTED, /* the peer asked; our RC QP is in RTS, waiting for its "ready" */
    HB_PEER_CONNECTED, /* RC QP in RTS on both sides: RDMA allowed */
    HB_PEER_FAILED, /* final: PMPI for this peer; hb_transport_peer_reason() says why */
};

enum hb_fork_mode {
    HB_FORK_AUTO, /* call ibv_fork_init() unless the kernel makes it unneeded (default) */
    HB_FORK_OFF, /* leave fork handling to the application / RDMAV_FORK_SAFE */
};

/* ---- parameters ------------------------------------------------------------------- */
struct hb_transport_params {
    const char *
        device; /* verbs device name; NULL or "" = first one whose port is ACTIVE */
    int port; /* 1-based port number (default 1) */
    int gid_index; /* -1 = automatic (RoCE v2 IPv4-mapped first); ignored on InfiniBand */
    uint32_t
        sq_depth; /* send work requests per peer in flight at most (default 64) */
    uint32_t
        rq_depth; /* receive WRs per peer, for WRITE WITH IMMEDIATE and SEND (default 16) */
    uint32_t
        recv_bytes; /* buffer of each receive WR: peers SEND this rank up to this
                       much (default 0: receives take immediates only, no SEND) */
    uint32_t
        signal_every; /* selective signaling: one signaled send WR in N (default 16, <= sq_depth/2) */
    uint32_t
        max_inline; /* inline data asked for (default 64; the device may give more or 0) */
    uint32_t max_sge; /* gather entries per WR (default 2: header + payload) */
    double
        connect_timeout_s; /* a peer silent this long after our request is failed (default 10) */
    double
        retry_s; /* first resend of a lost connection datagram (default 0.05; doubles to 1 s) */
    double
        op_timeout_s; /* hb_transport_wait gives up (and fails the peer) after this (default 30) */
    size_t
        peer_budget; /* bytes of memory per connected peer at most (default 64 KiB) */
    int fork_mode; /* enum hb_fork_mode */
    int memlock_check; /* 1 (default): refuse to open when RLIMIT_MEMLOCK cannot hold the
                                 control area in the transport's share (util/memlock.h); 0 for tests */
    unsigned
        debug_cm_drop_every; /* tests only, N >= 2: lose received connection datagrams
                                     number 1, 1+N, 1+2N, ... (requests, replies, ready) */
    /* RDMA WRITE WITH IMMEDIATE arrived from peer (called inside hb_transport_progress;
     * may post, must not close).  NULL: immediates are counted and dropped. */
    void (*on_imm)(void *ctx, int peer, uint32_t imm, uint32_t byte_len);
    void *on_imm_ctx;
    /* SEND WITH IMMEDIATE arrived from peer: len bytes at data, valid only
     * during the call (the buffer is posted again right after; copy what
     * you keep).  Same rules as on_imm, same ctx; NULL: counted, dropped. */
    void (*on_recv)(void *ctx, int peer, uint32_t imm, const void *data,
                    uint32_t len);
};

void hb_transport_params_default(struct hb_transport_params *p);

/* Opens the device, port, PD, CQ, the UD connection-management QP and the
 * registered control area.  0 and *out on success; -1 and a one-line reason
 * in why (no device, named device missing, port not ACTIVE, open/PD failure,
 * memlock too low for the control area, ...) otherwise: stay in pass-through. */
int hb_transport_open(const struct hb_transport_params *p, int rank, int size,
                      struct hb_transport **out, char *why, size_t why_len);

/* ---- bootstrap: one allgather of HB_TRANSPORT_BOOT_BYTES per rank ------------------ */
#define HB_TRANSPORT_BOOT_BYTES 64

/* Must gather `bytes` from every rank into all[rank * bytes] (PMPI_Allgather
 * with MPI_BYTE on hotbuf's communicator); 0 on success. */
typedef int (*hb_allgather_fn)(const void *mine, void *all, size_t bytes,
                               void *ctx);

/* Every rank calls exactly one of these, once: bootstrap after a
 * successful open, bootstrap_absent after a failed one (it contributes an
 * "absent" block; the others then see this rank as failed).
 * Returns 0, or -1 with a reason (the allgather failed: close t, stay in
 * pass-through).  hb_transport_bootstrap(NULL, ...) is an error and takes
 * no part in the collective. */
int hb_transport_bootstrap(struct hb_transport *t, hb_allgather_fn allgather,
                           void *ctx, char *why, size_t why_len);
int hb_transport_bootstrap_absent(int size, hb_allgather_fn allgather,
                                  void *ctx);

/* ---- connections (on demand) ----------------------------------------------------------- */
/* Connected -> HB_TR_OK; starting or under way -> HB_TR_AGAIN (never blocks);
 * failed -> HB_TR_FAILED.  The data-path calls below do this implicitly. */
int hb_transport_connect(struct hb_transport *t, int peer);
enum hb_peer_state hb_transport_peer_state(const struct hb_transport *t,
                                           int peer);
const char *hb_transport_peer_reason(const struct hb_transport *t,
                                     int peer); /* "" unless failed */

/* ---- data path --------------------------------------------------------------------------- */
/* HB_TR_SEND: a SEND WITH IMMEDIATE into the peer's next posted receive
 * (remote_addr and rkey unused), at most hb_transport_send_max() bytes. */
enum hb_tr_opcode { HB_TR_WRITE, HB_TR_WRITE_IMM, HB_TR_READ, HB_TR_SEND };

enum {
    HB_TR_F_SIGNAL =
        1, /* signal this WR (set it on the one you will wait for: saves a fence) */
    HB_TR_F_INLINE =
        2, /* copy the data into the WR (length <= hb_transport_info.max_inline;
                           lkey ignored; the buffer is free again on return) */
};

#define HB_TR_MAX_SGE 4

struct hb_tr_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
};

struct hb_tr_wr {
    enum hb_tr_opcode opcode;
    const struct hb_tr_sge *sg; /* local gather (write) / scatter (read) list */
    int nsge; /* 0..max_sge (0: zero-length, e.g. an immediate alone) */
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t imm;   /* HB_TR_WRITE_IMM: delivered in host order to on_imm */
    unsigned flags; /* HB_TR_F_* */
};

/* An operation handle: complete once seq <= the peer's completed count. */
struct hb_tr_op {
    int peer;
    uint64_t seq;
};

/* Posts one WR to peer (connecting it on demand).  HB_TR_OK: posted, *op set;
 * HB_TR_AGAIN: not connected yet (nothing posted: use MPI for this one);
 * HB_TR_BUSY: send queue full (nothing posted); HB_TR_FAILED; HB_TR_EINVAL. */
int hb_transport_post(struct hb_transport *t, int peer,
                      const struct hb_tr_wr *wr, struct hb_tr_op *op);

int hb_transport_write(struct hb_transport *t, int peer, const void *buf,
                       size_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                       unsigned flags, struct hb_tr_op *op);
int hb_transport_write_imm(struct hb_transport *t, int peer, const void *buf,
                           size_t len, uint32_t lkey, uint64_t raddr,
                           uint32_t rkey, uint32_t imm, unsigned flags,
                           struct hb_tr_op *op);
int hb_transport_read(struct hb_transport *t, int peer, void *buf, size_t len,
                      uint32_t lkey, uint64_t raddr, uint32_t rkey,
                      unsigned flags, struct hb_tr_op *op);
int hb_transport_send(struct hb_transport *t, int peer, const void *buf,
                      size_t len, uint32_t lkey, uint32_t imm, unsigned flags,
                      struct hb_tr_op *op);

/* The most a SEND to peer may carry: its receive buffers' size, as it
 * announced at bootstrap (0: it takes no SEND).  The receiver must have a
 * receive posted when the SEND arrives, or the NIC retries it after a
 * receiver-not-ready delay: the caller bounds what it has in flight per
 * peer (each receive is posted again as soon as progress has handed its
 * message to on_recv) under hb_transport_info.rq_depth. */
uint32_t hb_transport_send_max(const struct hb_transport *t, int peer);

/* One pass: polls the CQ once (at most 16 completions), handles connection
 * datagrams and retry timers.  Returns the number of events handled; never
 * blocks.  Call it often (between MPI calls); peers connect only through it. */
int hb_transport_progress(struct hb_transport *t);

/* HB_TR_OK: the operation completed (the local buffer is free, the remote
 * data is in place); HB_TR_AGAIN: pending; HB_TR_FAILED: the peer is failed
 * and the operation is not known to have completed (the remote data may or
 * may not be there; the NIC no longer touches the local buffer). */
int hb_transport_test(struct hb_transport *t, const struct hb_tr_op *op);

/* Waits for op: progress, and every few empty polls yield(ctx) (the runtime
 * passes MPI progress).  If op was posted unsignaled with nothing signaled
 * after it, a signaled 8-byte fence write to the peer's control area is
 * posted first.  After op_timeout_s the peer is failed (QP to ERROR, so the
 * buffer is released) and HB_TR_FAILED returned: never hangs. */
typedef void (*hb_tr_yield_fn)(void *ctx);
int hb_transport_wait(struct hb_transport *t, const struct hb_tr_op *op,
                      hb_tr_yield_fn yield, void *ctx);

/* Marks peer failed (QP to ERROR; destroyed once the CQ has been polled
 * dry, so that the peer's writes completed before it are still
 * delivered) with reason; the other side learns it with a reject
 * datagram.  For callers that detect a protocol error above the
 * transport. */
void hb_transport_fail_peer(struct hb_transport *t, int peer,
                            const char *reason);

/* ---- resources, report ----------------------------------------------------------------- */
struct ibv_pd *
hb_transport_pd(struct hb_transport *t); /* for registrations (regcache) */

struct hb_transport_info {
    char device[64];
    int port;
    int link_layer_ib; /* 1 InfiniBand (LID addressing), 0 Ethernet (RoCE, GID) */
    int gid_index;     /* -1 on InfiniBand */
    char gid_type[16]; /* "RoCE v2", "RoCE v1", "IB" */
    char gid[48];      /* text form */
    uint16_t lid;
    int active_mtu;      /* bytes */
    uint32_t max_inline; /* what the RC QPs got */
    uint32_t max_msg;    /* the port's largest message (max_msg_sz) */
    uint32_t sq_depth, rq_depth, signal_every, max_sge;
    uint32_t recv_bytes; /* each posted receive's buffer (0: no SEND) */
    uint32_t max_rd_atomic;
    char fork[96]; /* what was done about fork() and why */
};
void hb_transport_get_info(const struct hb_transport *t,
                           struct hb_transport_info *info);

/* Memory per connected peer (a model of what the verbs objects occupy, see
 * transport_dev.c) and in total, cf. the ACP channel tables. */
struct hb_transport_mem {
    /* one connected peer, item by item */
    size_t sq_entries,
        sq_wqe_bytes; /* RC send queue (actual capacity x WQE estimate) */
    size_t rq_entries, rq_wqe_bytes; /* RC receive queue */
    size_t rx_bytes; /* its buffers (rq_entries x recv_bytes, registered) */
    size_t cq_entries, cqe_bytes; /* the share of the CQ each peer adds */
    size_t ah_bytes;              /* UD address handle to the peer's CM QP */
    size_t peer_struct_bytes;     /* hotbuf's own per-peer state */
    size_t per_peer_bytes;        /* sum of the above */
    size_t budget_per_peer;       /* params.peer_budget */
    /* per rank of the job (connected or not): bootstrap block + peer slot */
    size_t per_rank_bytes;
    /* constant: control area (registered) + UD QP + the CQ's base entries */
    size_t control_area_bytes, ud_qp_bytes, cq_base_bytes, constant_bytes;
    /* now */
    size_t peers_connected, peers_failed, peers_connecting;
    size_t
        peer_extra_bytes; /* charged by upper layers with hb_transport_charge */
    size_t
        total_bytes; /* constant + ranks x per_rank + live peers x per_peer + extra */
    size_t cq_entries_now; /* the CQ's actual size */
};
void hb_transport_get_mem(const struct hb_transport *t,
                          struct hb_transport_mem *m);

/* Upper layers (rings, slots) charge their per-peer memory here; a charge
 * that would take the peer over the budget is refused (-1). delta may be < 0. */
int hb_transport_charge(struct hb_transport *t, int peer, long delta);

struct hb_transport_stats {
    uint64_t connects_requested; /* we sent a first request */
    uint64_t connects_accepted;  /* we answered a peer's request */
    uint64_t connects_done;      /* peers that reached CONNECTED */
    uint64_t collisions;         /* both sides asked at once (tie-break used) */
    uint64_t
        cm_resends; /* connection datagrams sent again (loss or slow peer) */
    uint64_t cm_sent, cm_received, cm_dropped;
    uint64_t peers_failed;
    uint64_t writes, write_imms, reads, sends, inline_posts, bytes_posted;
    uint64_t signaled, fences, busy;
    uint64_t imm_received, sends_received;
    uint64_t polls, completions;
    uint64_t cq_resizes;
};
void hb_transport_get_stats(const struct hb_transport *t,
                            struct hb_transport_stats *s);

/* Calls fn for every failed peer with its reason (for the report). */
void hb_transport_foreach_failed(const struct hb_transport *t,
                                 void (*fn)(void *ctx, int peer,
                                            const char *reason),
                                 void *ctx);

const char *hb_transport_state_name(enum hb_peer_state s);

/* Releases everything (no MPI).  Call after a barrier so that no peer still
 * writes into memory registered here.  Every step runs even after one
 * failed; 0, or -1 with the first failure in why (may be NULL).  EBUSY from
 * ibv_dealloc_pd means a registration made on hb_transport_pd() was never
 * released: its owner leaked it.  t is freed either way. */
int hb_transport_close(struct hb_transport *t, char *why, size_t why_len);

/* ---- fork -------------------------------------------------------------------------------- */
/* What hb_transport_open does about fork(), callable earlier on its own:
 * ibv_fork_init() must run before the process registers any memory (the
 * runtime's ibv_reg_mr calibration included), or it fails with EINVAL.
 * Writes a one-line account into msg; 0 if fork() is safe afterwards. */
int hb_transport_fork_prepare(int mode, char *msg, size_t msg_len);

/* ---- multicast (UD), transport_mcast.c ---------------------------------------------------- */
/* One sender's packets to every QP attached to its group, replicated by the
 * network.  UD's contract: at most one MTU per packet, packets may be lost
 * or arrive late, receives complete in arrival order.  The caller names
 * its packets in the immediate and repairs losses.  RoCE v2 with an IPv4
 * GID only (the group is an IP multicast address the host joins). */
struct hb_tr_mcast;

/* A group as its sender chose it: address (GID ::ffff:239.x.y.z) and Q_Key. */
struct hb_tr_mgroup {
    uint8_t gid[16];
    uint32_t qkey;
};

/* 0 if this transport's port can do multicast; -1 and why otherwise. */
int hb_tr_mcast_supported(const struct hb_transport *t, char *why, size_t len);

/* A fresh random group for this rank to send to (239.192.0.0/14). */
void hb_tr_mcast_group_new(struct hb_transport *t, struct hb_tr_mgroup *g);

/* The sender side for group own and one receiving QP per entry of
 * groups[nrecv] (receive queue index i for groups[i]), each joined and
 * attached; depth: receives per QP and packets in flight on the send side
 * at most.  Nothing is posted: the caller posts the receives. */
int hb_tr_mcast_open(struct hb_transport *t, const struct hb_tr_mgroup *own,
                     const struct hb_tr_mgroup *groups, int nrecv,
                     uint32_t depth, struct hb_tr_mcast **out, char *why,
                     size_t len);

/* The most one packet carries (the port's active MTU). */
uint32_t hb_tr_mcast_mtu(const struct hb_tr_mcast *m);

/* One receive on queue q into (addr, len <= mtu, lkey); wr_id (48 bits)
 * comes back with its packet.  HB_TR_OK, HB_TR_EINVAL, HB_TR_FAILED. */
int hb_tr_mcast_post_recv(struct hb_tr_mcast *m, int q, uint64_t wr_id,
                          void *addr, uint32_t len, uint32_t lkey);

/* len bytes from (addr, lkey) to the own group in ceil(len / mtu) packets
 * (one for len 0), packet k with immediate imm_base + k.  HB_TR_OK;
 * HB_TR_BUSY: fewer free send entries than packets (retry; the send
 * completions are polled here); HB_TR_EINVAL: more packets than depth;
 * HB_TR_FAILED.  The source stays untouched until hb_tr_mcast_send_idle. */
int hb_tr_mcast_send(struct hb_tr_mcast *m, const void *addr, size_t len,
                     uint32_t lkey, uint32_t imm_base);

/* One packet received on queue q.  ok == 0: an error completion (its data
 * is not to be used; wr_id is valid). */
struct hb_tr_mcast_event {
    int q;
    int ok;
    int has_imm;
    uint32_t imm;
    uint32_t len; /* payload bytes (the route header not counted) */
    uint64_t wr_id;
};

/* Up to max (at most 16) received packets into ev; their number, 0, or
 * HB_TR_FAILED.  Sends complete apart: a caller may leave packets queued
 * (they wait in the completion queue, which holds every posted receive)
 * and still learn that its sends finished. */
int hb_tr_mcast_poll(struct hb_tr_mcast *m, struct hb_tr_mcast_event *ev,
                     int max);

/* 1 when every packet posted has been sent (its source is free again), 0
 * while some are pending, HB_TR_FAILED on an error completion. */
int hb_tr_mcast_send_idle(struct hb_tr_mcast *m);

struct hb_tr_mcast_stats {
    uint64_t sends, packets_sent, packets_dropped, packets_received,
        recvs_posted;
};
void hb_tr_mcast_get_stats(const struct hb_tr_mcast *m,
                           struct hb_tr_mcast_stats *s);

/* Leaves the groups, destroys the QPs (posted receives are dropped: the
 * NIC writes nothing after this returns).  NULL is fine. */
void hb_tr_mcast_close(struct hb_tr_mcast *m);

/* Tests only: packets number every-1, 2*every-1, ... since open are not
 * posted, as if the network lost them (0: none). */
void hb_tr_mcast_debug_drop(struct hb_tr_mcast *m, unsigned every);

/* ---- tests only -------------------------------------------------------------------------- */
/* Moves peer's RC QP to the ERROR state behind the transport's back, as a
 * fatal device/link error would: the failure must be detected by progress. */
int hb_transport_debug_qp_error(struct hb_transport *t, int peer);
/* The control area's 8-byte scratch word of this rank (a fence write lands there). */
uint64_t hb_transport_debug_scratch(struct hb_transport *t, uint32_t *rkey);

#endif
