/* Point-to-point's internals, shared by the files of shim/p2p (see p2p.h
 * for the interface and P2P-DESIGN.md §5.7 and §5.9 for the design).
 *
 *   p2p.c        subsystem life cycle, switches, the progress callback
 *   p2p_comm.c   communicator map, entry into pull, migration, claiming
 *   p2p_req.c    request handles (pool, table), posting, completion
 *   p2p_recv.c   receive calls;  p2p_probe.c probes;  p2p_wait.c Wait/Test
 *   p2p_match.c  the matching rules (MPI-free)
 *   p2p_merge.c, p2p_pair.c, p2p_slots.c  part 2's release merge, sender
 *                bookkeeping and channel slots (MPI-free)
 *   p2p_grant.c  the handshake;  p2p_chan.c channels;  p2p_send.c sends
 *   p2p_revoke.c revokes, and freeing the channels they leave idle
 *   p2p_sync.c   synchronous sends (SYNC_ACK)
 *   p2p_rndv.c   rendezvous: the receiver reads large messages by RDMA
 */
#ifndef HOTBUF_P2P_INT_H
#define HOTBUF_P2P_INT_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include "util/uthash_keys.h"

#include "core/ctx.h"
#include "regcache/regcache_churn.h"
#include "p2p.h"
#include "p2p_match.h"
#include "p2p_merge.h"
#include "p2p_pair.h"
#include "p2p_slots.h"
#include "p2p_wire.h"
#include "p2p_stats.h"

/* The PMPI call that takes an MPI_Count: the large-count form where the
 * MPI has one (MPI-4), else the int form. */
#if MPI_VERSION >= 4
#define PMPI_C(fn) fn##_c
#else
#define PMPI_C(fn) fn
#endif

struct p2p_rndv;  /* p2p_rndv.c */
struct hb_region; /* regcache.h */

enum p2p_mode { P2P_MODE_AUTO, P2P_MODE_ALL, P2P_MODE_AFTER };
enum p2p_comm_state { COMM_NORMAL, COMM_PULLED, COMM_OFF };

struct p2p_comm {
    uint64_t key; /* the MPI_Comm handle's bits */
    MPI_Comm comm;
    int state;            /* enum p2p_comm_state */
    uint64_t recv_calls;  /* receive calls while not pulled (after:N, policy) */
    uint32_t *recvs_from; /* [size]: those naming each source (policy) */
    struct hb_pm m;       /* matcher, while pulled */
    struct hb_list link;  /* on p2p.pulled */
    int pending;          /* hotbuf receives posted or matched, not done,
                             and rendezvous sends not acknowledged */
    int persistent;       /* hotbuf's persistent receives on c: they may be
                             started after the application's free, so c
                             (and the messages claimed on it) lives on */
    int free_deferred;    /* the application freed it: free at pending 0
                             and persistent 0 */
    int sends_held;       /* of pending: rendezvous sends, resent on c if
                             their peer fails (p2p_sync.c) */
    int tx_closed;        /* our CLOSEs on c are sent (p2p_comm.c) */
    /* part 2 (p2p_chan.c): members' world ranks, pairs by rank in c */
    int size, rank;
    int *world;             /* NULL until a pair needs it */
    struct p2p_rxpair **rx; /* receiving: senders granted on c */
    struct p2p_txpair **tx; /* sending: receivers asked on c */
    uint32_t cid;           /* index in p2p.cids (0: none) */
    UT_hash_handle hh;
};

/* Receiver B, one sender A on c (P2P-DESIGN.md §5.4 "PRE/LIVE").  It
 * outlives revokes: the merge goes on across them (p2p_revoke.c). */
struct p2p_rxpair {
    struct hb_mg mg; /* A's two paths merged back into send order */
    int world;       /* A */
    int live;        /* granted, not revoked since */
    int revoke_due;  /* test switch: revoke at the next wrapper entry */
    uint32_t token;  /* A's id of the pair (its REQ), named in REVOKE */
    uint32_t grants; /* GRANTs sent to A on c, */
    uint32_t gones;  /* ... of them answered GONE (A had freed c) */
    int closed;      /* A's CLOSE came: nothing more of A's on c */
};

/* Sender A, one receiver B on c. */
enum p2p_tx_state { TX_IDLE, TX_ASKED, TX_GRANTED, TX_REFUSED };
struct p2p_txpair {
    int state;       /* enum p2p_tx_state */
    struct hb_pp pp; /* stamps, markers (p2p_pair.h) */
    struct p2p_comm *c;
    int dest, world;
    uint32_t cid;      /* B's index of c, from GRANT */
    uint32_t token;    /* index in p2p.txs (the handshake's id) */
    uint64_t retry_at; /* sends on c to B before asking again */
    uint64_t sends;    /* send-family calls to B on c */
    int close_due;     /* a GRANT came from B: CLOSE at the free */
};

/* A message claimed from MPI or placed in the ring, on its way through
 * a merge (ring pairs), then in the unexpected store or matched. */
enum p2p_msg_kind { MSG_MPI, MSG_RING, MSG_MARKER };
struct p2p_msg {
    struct hb_pm_msg n;
    MPI_Message msg; /* MSG_MPI */
    MPI_Status st;   /* as PMPI_Improbe gave it (ring: made alike) */
    struct hb_mg_item g;
    int kind;   /* enum p2p_msg_kind */
    void *data; /* MSG_RING: payload, in its slot, in copy[] or in heap */
    uint32_t bytes;
    /* a DATA_RNDV record not yet read (data NULL): where its payload is,
     * and the read under way once matched (p2p_rndv.c) */
    int rndv;
    struct hb_rndv_desc rd;
    struct p2p_rndv *rv;
    void *heap; /* the payload, read or resent, owned by the message */
    /* a DATA_SYNC record not yet matched (p2p_sync.c): its SYNC_ACK */
    int sync;
    int sync_world;
    uint32_t sync_id;
    struct hb_list sync_link; /* on p2p.sync_rx */
    char copy[];              /* room for the payload (MSG_RING) */
};

enum p2p_req_state {
    RQ_INACTIVE, /* persistent, not started */
    RQ_POSTED,   /* in the matcher */
    RQ_MATCHED,  /* PMPI_Imrecv under way (inner) */
    RQ_DONE,     /* st holds the status; the application has not seen it */
    RQ_PMPI      /* MPI's own receive: PMPI progresses the handle */
};

/* A receive hotbuf knows about: one hotbuf progresses (managed), or an
 * MPI receive on a communicator that may enter pull later (tracked, for
 * migration), or a persistent receive (its handle is MPI's own). */
struct p2p_req {
    uint64_t key; /* the handle's bits (table key) */
    MPI_Request handle;
    int state;      /* enum p2p_req_state */
    int persistent; /* made by Recv_init: handle is MPI's, inactive */
    int holds_comm; /* counts in c->persistent until released */
    int psend;      /* a persistent send's Start that went by ring: the
                       handle is MPI's, left inactive; done, dropped at
                       completion */
    int pool;       /* handle from the pool */
    int hijacked;   /* handle holds a cancelled MPI receive to consume */
    int freed;      /* the application freed the handle while pending */
    int cancelled;  /* the application cancelled MPI's receive: it is
                       complete or matched, never migrated */
    int whole;      /* MPI's Isendrecv: the handle carries a send too, so
                       it is never cancelled to migrate the receive; its
                       communicator stays out of pull while it is pending */
    int in_table;
    uint64_t seq;       /* posting order (migration) */
    struct p2p_comm *c; /* NULL once the communicator is gone */
    MPI_Comm comm;
    void *buf;
    MPI_Count count;
    MPI_Datatype type;
    int type_dup; /* type is our duplicate: free it */
    int source, tag;
    int raise;    /* err goes through the communicator's handler */
    int blocking; /* Recv, Sendrecv: matched = msg, for PMPI_Mrecv */
    MPI_Message msg;
    MPI_Count msg_bytes; /* of the matched message (blocking) */
    MPI_Request inner;   /* PMPI_Imrecv */
    MPI_Request sreq;    /* Isendrecv: the send half */
    void *tmp;           /* Sendrecv_replace: the packed send data */
    MPI_Status st;
    int err;
    struct hb_pm_recv n;
    struct hb_list orphan; /* on p2p.orphans once freed while pending */
    struct p2p_sync *sync; /* a synchronous send by ring: done at its ack */
    struct p2p_rndv *rv;   /* matched to a rendezvous record: reading */
    struct hb_region *pin; /* Recv_init: buf registered until freed */
    int pin_used;          /* a rendezvous read into it (report) */
    UT_hash_handle hh;
};

/* A DATA_SYNC record the sender keeps until its SYNC_ACK (p2p_sync.c). */
struct p2p_sync {
    uint32_t id; /* in the record (sreq) and in its SYNC_ACK */
    int sent;    /* hdr holds the record as written */
    int acked;
    int rndv;              /* may go as a DATA_RNDV record (too large for
                              a slot): the receiver reads buf */
    struct hb_region *reg; /* DATA_RNDV: buf's, held until the SYNC_ACK */
    int holds_comm;        /* DATA_RNDV: counts in its communicator's
                              pending until the SYNC_ACK (p2p_sync.c) */
    int world;             /* the receiver, world rank */
    struct p2p_txpair *tp; /* NULL once its communicator is dropped */
    unsigned polls;        /* looks while unacknowledged (p2p_sync.c) */
    const void *buf;       /* the user's: untouched until the send completes */
    struct hb_ring_hdr hdr;
    UT_hash_handle hh;
};

/* Module state.  Static: the wrappers that reach it carry no context. */
struct p2p_state {
    const struct hb_ctx *ctx;
    int mode; /* enum p2p_mode */
    uint64_t after_n;
    int pull_ok;    /* pull may start (switches, hook, threads) */
    int off_reason; /* why not, when !pull_ok */
    int busy;       /* progress running: never re-enter */
    int hook;       /* progress runs inside MPI: blocking PMPI waits are safe */
    int engaged_min;        /* hb_p2p_engaged never drops below this */
    struct p2p_comm *comms; /* uthash by handle */
    struct hb_list pulled;  /* struct p2p_comm */
    struct p2p_req *reqs;   /* uthash by handle */
    struct hb_list orphans; /* struct p2p_req freed while pending */
    uint64_t seq;           /* posting order */
    uint64_t n_posted;      /* hotbuf receives in some matcher */
    uint64_t n_unexp;       /* messages in the unexpected stores */
    MPI_Request *pool;      /* idle handles */
    int npool, cappool;
    int madepool;    /* handles made (idle or out): what the array must hold */
    MPI_Comm bridge; /* Intercomm_create's leaders talk here (p2p_bridge.c) */
    struct hb_p2p_summary stats;
    /* part 2 */
    int ring;               /* HOTBUF_P2P_RING and RDMA up: pairs may switch */
    int tstar;              /* MPI's own MPI_TAG_UB: markers' tag */
    uint64_t nonce;         /* the job's, in every in-band message */
    MPI_Comm ctrl;          /* grant handshake (p2p_grant.c) */
    MPI_Comm self;          /* ring messages handed to Mprobe */
    struct p2p_peer *peers; /* [ctx->size], channels (p2p_chan.c) */
    struct p2p_comm **cids; /* cid -> communicator, [ncids] */
    uint32_t ncids;
    struct p2p_txpair **txs; /* token -> pair, [ntxs] */
    uint32_t ntxs;
    uint64_t ctrl_calls;      /* wrapper entries, for polling the handshake */
    int ask_always;           /* HOTBUF_TEST_P2P_ASK=1: ask at the first send */
    int revokes_due;          /* some rxpair has revoke_due set */
    struct p2p_psend *psends; /* persistent sends by handle (p2p_send.c) */
    struct p2p_sync *syncs;   /* kept DATA_SYNC records, by id */
    uint32_t sync_next;       /* the last id given out */
    struct hb_list sync_rx;   /* DATA_SYNC records taken, not yet matched */
    int rndv;                 /* HOTBUF_P2P_RNDV: large sends may go by ring */
    uint64_t rndv_min;        /* ... from this size (HOTBUF_P2P_RNDV_MIN) */
    uint64_t rndv_max; /* ... up to this (HB_RNDV_MAX, the device's largest
                          message: one read) */
    uint32_t rndv_thr[HB_SIZE_CLASSES]; /* uses that make it worth it */
    struct hb_churn churn;     /* buffers whose registrations do not last */
    struct hb_list rndv_reads; /* struct p2p_rndv under way */
    /* CLOSE sends under way (p2p_comm.c), and the one message they send */
    MPI_Request *closes;
    int ncloses, capcloses;
    struct hb_inband close_msg;
    uint32_t *closes_to, *closes_from; /* [ctx->size], by world rank */
};

extern struct p2p_state p2p;

/* The test switch of p2p_route.c: calls per function. */
/* clang-format off */
#define HB_P2P_ROUTE_FUNCS(X)                                                  \
    X(recv) X(irecv) X(recv_init) X(start) X(startall) X(sendrecv)             \
    X(sendrecv_replace) X(isendrecv) X(isendrecv_replace) X(probe) X(iprobe)   \
    X(mprobe) X(improbe) X(wait) X(test) X(waitall) X(testall) X(waitany)     \
    X(testany) X(waitsome) X(testsome) X(request_get_status) X(cancel)         \
    X(request_free) X(comm_free) X(comm_disconnect)
/* clang-format on */
#define HB_P2P_ROUTE_ENUM(f) HB_P2P_ROUTE_##f,
enum { HB_P2P_ROUTE_FUNCS(HB_P2P_ROUTE_ENUM) HB_P2P_ROUTE_N };

struct p2p_route {
    int on; /* HOTBUF_TEST_P2P_PASS=1 */
    unsigned long calls[HB_P2P_ROUTE_N];
};
extern struct p2p_route hb_p2p_route;

#define HB_P2P_ROUTE(f)                                                        \
    do {                                                                       \
        if (hb_p2p_route.on)                                                   \
            hb_p2p_route.calls[HB_P2P_ROUTE_##f]++;                            \
    } while (0)

/* p2p.c */
void hb_p2p_update_engaged(void);
void hb_p2p_poll(void);   /* one progress pass (guarded) */
int hb_p2p_hook_ok(void); /* progress runs inside MPI (else: no pull) */

/* p2p_bridge.c: collective over ctx->comm */
void hb_p2p_bridge_start(const struct hb_ctx *ctx);
void hb_p2p_bridge_stop(void);

/* p2p_comm.c */
struct p2p_comm *hb_p2p_comm_get(MPI_Comm comm); /* NULL: not ours */
/* A receive-side call on comm from source (or MPI_ANY_SOURCE): counts it,
 * enters pull when due.  Returns the communicator when pulled, else NULL
 * (go to PMPI). */
struct p2p_comm *hb_p2p_comm_recv_call(MPI_Comm comm, int source);
void hb_p2p_claim(struct p2p_comm *c);        /* unless busy */
void hb_p2p_claim_locked(struct p2p_comm *c); /* busy set by the caller */
void hb_p2p_comm_release_pending(struct p2p_comm *c);
void hb_p2p_comm_free_all(void);
/* At MPI_Finalize, collective over p2p.ctrl: the CLOSEs sent to us. */
void hb_p2p_comm_drain_closes(void);
void hb_p2p_flush_frees(void); /* deferred Comm_frees now due */
void hb_p2p_comm_gone_in(int world, uint32_t token); /* GONE from world */
uint64_t hb_p2p_comm_held(void); /* frees held for a CLOSE now */

/* p2p_req.c */
int hb_p2p_translate_source(int source); /* MPI -> HB_PM_ANY */
struct p2p_req *hb_p2p_req_find(MPI_Request h);
uint64_t hb_p2p_req_key(MPI_Request h); /* a handle's bits, as a hash key */
struct p2p_req *hb_p2p_req_new(void);   /* zeroed, not in the table */
int hb_p2p_req_set_args(struct p2p_req *r, void *buf, MPI_Count count,
                        MPI_Datatype type, int source, int tag);
int hb_p2p_req_pool_handle(struct p2p_req *r); /* MPI_SUCCESS or error */
void hb_p2p_req_insert(struct p2p_req *r);
void hb_p2p_req_release(struct p2p_req *r); /* out of the table, freed */
void hb_p2p_req_post(struct p2p_comm *c, struct p2p_req *r);
void hb_p2p_req_deliver(struct p2p_req *r, struct p2p_msg *m);
/* A ring message's payload is in r's buffer (in_place: put there by a
 * rendezvous read) or in m->data (unpacked here): status, truncation,
 * SYNC_ACK, r done; m is freed. */
void hb_p2p_req_deliver_ring(struct p2p_req *r, struct p2p_msg *m,
                             int in_place);
/* Drives r one step (nonblocking); 1 when it is RQ_DONE. */
int hb_p2p_req_poll(struct p2p_req *r);
/* Blocks (with hotbuf's progress) until r is RQ_DONE. */
void hb_p2p_req_block(struct p2p_req *r);
/* The application takes a done request's status: frees what must be
 * freed, updates *handle (MPI_REQUEST_NULL unless persistent). */
int hb_p2p_req_complete(struct p2p_req *r, MPI_Request *handle, MPI_Status *st);
void hb_p2p_req_pool_free(void);
void hb_p2p_poll_orphans(void);

/* The empty status MPI gives for a null or inactive request. */
void hb_p2p_status_empty(MPI_Status *st);

/* p2p_comm.c: a message (claimed, or released by a merge) meets the
 * earliest posted receive it matches (1; m is gone), or waits in the
 * unexpected store (0). */
int hb_p2p_match(struct p2p_comm *c, struct p2p_msg *m); /* 1: delivered */
struct p2p_msg *hb_p2p_msg_mpi(MPI_Message msg, const MPI_Status *st);
/* Enters pull for a grant; 0, or -1: not now (an Isendrecv of MPI's is
 * pending on c) or never (c is off). */
int hb_p2p_comm_pull(struct p2p_comm *c);
/* The members' world ranks (c->world); 0, or -1 out of memory. */
int hb_p2p_comm_worlds(struct p2p_comm *c);

/* p2p_chan.c: channels, ring records in and out, credits */
int hb_p2p_chan_start(const struct hb_ctx *ctx); /* 0: ring possible */
void hb_p2p_chan_quiesce(void); /* this rank's credit writes completed */
void hb_p2p_chan_stop(void);
struct p2p_peer;
/* Receiver: the channel from world rank a (made on first use) and its
 * grant fields; 0, or -1 (refuse: out of memory or budget). */
int hb_p2p_chan_rx(int a, uint64_t ack_addr, uint32_t ack_rkey,
                   struct hb_ctrl *grant);
/* Sender: the channel to world rank b from its grant; 0 or -1. */
int hb_p2p_chan_tx(int b, const struct hb_ctrl *grant);
/* Sender: where the receiver writes credits. */
void hb_p2p_chan_ack_area(int b, uint64_t *addr, uint32_t *rkey);
/* Sender: one record on the ring to pair's receiver: 1 when it went
 * zero-copy, 0 copied (completed, or resent by MPI after a fault), -1
 * when it must go by MPI (no channel, not connected, no slot).  sync:
 * a DATA_SYNC record, kept there until its SYNC_ACK (else NULL). */
int hb_p2p_chan_send(struct p2p_txpair *tp, const void *buf, uint32_t bytes,
                     int tag, int hot, struct p2p_sync *sync);
/* Sender: 1 when bytes fit a slot of the channel to world rank b (else
 * only a rendezvous can carry them); 1 too when no channel is up. */
int hb_p2p_chan_fits(int b, uint64_t bytes);
/* Receiver: the peer failed under a read; SYNC_ACKs by MPI from now. */
void hb_p2p_chan_rx_failed(int a, const char *why);
/* Sender: a record again by MPI, as a RESEND on its communicator. */
void hb_p2p_chan_resend(struct p2p_txpair *tp, const struct hb_ring_hdr *h,
                        const void *buf);
/* Sender: 1 when the channel to world rank b failed (found now: the kept
 * records go again by MPI); per peer, whether or not a pair is live. */
int hb_p2p_chan_tx_failed(int b);
/* Receiver: a SYNC_ACK to world rank a by RDMA; 0, or -1 (by MPI then). */
int hb_p2p_chan_sync_ack(int a, uint32_t id);
/* receiver: SYNC_ACKs written by RDMA whose QP failed before they were
 * known delivered go again by MPI (cheap when none is pending) */
void hb_p2p_chan_acks_check(void);
void hb_p2p_chan_drain(void); /* receiver: placed records into merges */
/* One line per peer with a channel: its sequence, credits, records taken
 * (p2p_dump.c). */
void hb_p2p_chan_dump(FILE *f);
/* The merge of (A, c) released what it can: into matching. */
void hb_p2p_release(struct p2p_comm *c, struct p2p_rxpair *rp);
/* A pulled message of a switched sender with tag T*: ours (marker,
 * resend) or, failing the checks, the application's. */
void hb_p2p_inband(struct p2p_comm *c, struct p2p_rxpair *rp, MPI_Message msg,
                   const MPI_Status *st);
/* A ring message a matched probe hands out: as a real MPI message (m,
 * out of the store, is owned and freed by the probe module from here). */
int hb_p2p_ring_message(struct p2p_msg *m, MPI_Comm comm, MPI_Message *msg);

/* Receiver, revokes (p2p_revoke.c): a pair granted (counts on A's
 * channel), a REVOKE sent, its answer (A's last rseq), a record taken
 * (1: the test switch wants its pair revoked); channels with no live pair
 * left whose records are all taken are freed. */
void hb_p2p_chan_rx_granted(int a);
void hb_p2p_chan_rx_revoking(int a);
void hb_p2p_chan_rx_revoked(int a, uint32_t rseq);
int hb_p2p_chan_rx_idle(int a, uint64_t idle); /* a live channel, idle */
void hb_p2p_chan_rx_release(void); /* drains them first (busy set) */
/* Sender: whether every record to b is complete (placed or resent), so a
 * REVOKE can be answered, and the last rseq given out to b. */
int hb_p2p_chan_tx_quiet(int b, uint32_t *rseq);

/* p2p_grant.c: the handshake */
int hb_p2p_grant_start(const struct hb_ctx *ctx);
void hb_p2p_grant_stop(void);
void hb_p2p_grant_poll(void);     /* at wrapper entries (rate-limited) */
void hb_p2p_grant_poll_now(void); /* a sender waiting for a SYNC_ACK */
void hb_p2p_ctrl_sync_ack(int world, uint32_t id); /* by MPI */

/* p2p_sync.c: synchronous sends */
struct p2p_sync *hb_p2p_sync_new(struct p2p_txpair *tp, const void *buf);
void hb_p2p_sync_free(struct p2p_sync *s); /* NULL: nothing */
/* A rendezvous record: its communicator's free waits for its SYNC_ACK. */
void hb_p2p_sync_hold_comm(struct p2p_sync *s);
void hb_p2p_sync_acked(uint32_t id);
int hb_p2p_sync_done(struct p2p_sync *s); /* 1: acknowledged */
void hb_p2p_sync_wait(struct p2p_sync *s);
void hb_p2p_sync_resend(int world); /* the failed peer's kept records */
/* At wrapper entries: the peers of kept records looked at (a failed one's
 * records resent), whether or not their sends are being waited for. */
void hb_p2p_sync_check(void);
void hb_p2p_sync_pair_gone(const struct p2p_txpair *tp); /* before its free */
void hb_p2p_sync_rx_new(struct p2p_msg *m, int world, uint32_t id);
void hb_p2p_sync_matched(struct p2p_msg *m);
/* A duplicate record (world, rseq): its message if taken and not yet
 * acknowledged (its SYNC_ACK goes at the match), else NULL and a new
 * SYNC_ACK has gone by MPI. */
struct p2p_msg *hb_p2p_sync_rx_dup(int world, uint32_t rseq, uint32_t id);
void hb_p2p_msg_free(struct p2p_msg *m); /* dropped, or done with */

/* p2p_rndv.c: the receiver's side of a rendezvous */
void hb_p2p_rndv_start(void);
void hb_p2p_rndv_stop(void);
/* m (a DATA_RNDV record) matched r: the read into r's buffer begins; r
 * completes (and the sender gets its SYNC_ACK) when it is done. */
void hb_p2p_rndv_deliver(struct p2p_req *r, struct p2p_msg *m);
/* Reads under way: completed, retried, failed (then wait for the RESEND). */
void hb_p2p_rndv_progress(void);
/* A matched probe hands m out: its payload read into memory of its own
 * first (blocks; 0, or an MPI error class when it cannot be had). */
int hb_p2p_rndv_fetch(struct p2p_comm *c, struct p2p_msg *m);
/* The RESEND of m's record came, with the payload (bytes). */
void hb_p2p_rndv_resent(struct p2p_msg *m, const void *data);
/* Largest message a rendezvous may carry (one RDMA read). */
#define HB_RNDV_MAX (1u << 30)
/* The pair (c, dest) of a send, made on first use; NULL: none. */
struct p2p_txpair *hb_p2p_txpair(struct p2p_comm *c, int dest);
/* REQ, never blocks; the hot buffer's uses so far (0: a persistent send)
 * and its size, for the receiver's policy (p2p_policy.h). */
void hb_p2p_ask(struct p2p_txpair *tp, uint32_t uses, uint32_t bytes);
/* A handshake message to world rank w on p2p.ctrl (counted for the drain
 * at MPI_Finalize), never blocking. */
int hb_p2p_ctrl_send(const struct hb_ctrl *m, int w); /* 0 or -1 */

/* p2p_revoke.c */
void hb_p2p_revoke_start(const struct hb_ctx *ctx);
void hb_p2p_revoke_stop(void);
/* Receiver, at wrapper entries (hb_p2p_grant_poll): revokes due (idle
 * channels, the test switch), then channels that may be freed. */
void hb_p2p_revoke_poll(void);
/* Receiver: revoke pair (A = rank src, c) now (also when c is freed). */
void hb_p2p_revoke(struct p2p_comm *c, int src);
/* Sender: REVOKE received; receiver: REVOKED received. */
void hb_p2p_revoke_in(const struct hb_ctrl *m, int world);
void hb_p2p_revoked_in(const struct hb_ctrl *m, int world);
/* Sender: answers still owed (records not yet complete), at wrapper entry. */
void hb_p2p_revoke_answer_owed(void);

/* p2p_send.c: MARKER{k} to dest on comm, by MPI (tag T*). */
void hb_p2p_send_marker(MPI_Comm comm, int dest, uint32_t k);
/* The send half of a Sendrecv(_replace): 1 when it went by ring (its
 * data is out of buf), 0 when the caller must send it by MPI (the pair's
 * bookkeeping is done).  hb_p2p_send_half: always by MPI (a large-count
 * send). */
int hb_p2p_send_half_ring(const void *buf, MPI_Count count, MPI_Datatype type,
                          int dest, int tag, MPI_Comm comm);
void hb_p2p_send_half(MPI_Comm comm, int dest);
/* Persistent sends: a Start (1: it went by ring, MPI's request stays
 * inactive), a Request_free, the communicator dropped (every entry on it;
 * MPI_COMM_NULL: all). */
int hb_p2p_psend_start(MPI_Request req);
void hb_p2p_psend_forget(MPI_Request req);
void hb_p2p_psend_drop_comm(MPI_Comm comm);

#endif
