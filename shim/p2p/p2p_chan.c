/* Point-to-point channels (P2P-DESIGN.md §5.5-5.7, §5.11; issue 13).
 *
 * One channel per direction of a pair of processes that some grant
 * switched on (shared by every communicator's pair of the two), made at
 * the first grant:
 *   receiver B: a registered region cut into bucketed slots
 *               (p2p_slots.h), charged to the peer's budget; the records
 *               A writes land there, each announced by an immediate;
 *   sender A:   a registered staging area ([credit word | header |
 *               payload copy]) and the slot bookkeeping of B's region.
 * A record is one RDMA WRITE WITH IMMEDIATE of [header, payload]: the
 * payload straight from the user buffer when it is hot (its registration
 * from the cache), else copied behind the header.  The immediate names
 * the slot.  B copies each record out when it is processed (into the
 * matched receive, else into the unexpected store), so slots free in the
 * order they were written, and returns credits as zero-length immediates
 * into A's credit word.
 *
 * B frees its region once no pair of A's is live any more (every one
 * revoked and answered) and it has taken every record A wrote
 * (p2p_revoke.c); a later grant makes a new one, a new epoch, which A's
 * side and the credits tell apart.  A's staging area stays (it is small,
 * and credits of the old region may still land in it).
 *
 * Immediates arrive inside the transport's progress, possibly inside MPI
 * (the hook): the handler only queues them.  hb_p2p_chan_drain, run by
 * point-to-point's progress with its busy flag, does the matching.
 *
 * A blocking send waits for its record's RC completion, so at most one
 * record per sender is ever unacknowledged; when the wait fails (QP error,
 * peer failed) that record goes again by MPI as a RESEND on its
 * communicator, and every pair to that peer stays on MPI (DEAD). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "core/note.h"
#include "core/progress.h"
#include "core/track_mpi.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "util/copy.h"
#include "p2p_int.h"

#define CREDIT_WORD 64 /* the staging area's first bytes: credits land here */
/* How long a send waits for a credit before it goes by MPI: a credit in
 * flight takes one write's latency (a few us on a NIC, up to ~100 us on
 * soft-RoCE); a receiver that is not draining (computing, not in MPI)
 * costs one such wait, then the pair is "starved" and sends go by MPI at
 * once until a credit comes.  The wait is wall-clock time, so a receiver
 * descheduled for longer (a loaded host: the emulated guest beside other
 * jobs) costs misses too; the ping-pong test sets a long wait with
 * HOTBUF_TEST_P2P_CREDIT_WAIT_US, so that what it counts is the protocol,
 * not the host's scheduler (up to 6% of its sends went by MPI for want of
 * a credit beside a CI run with 200 us). */
#define CREDIT_WAIT_US 200.0

/* A SYNC_ACK written by RDMA, not yet known delivered (p2p_sync.c: a
 * sender whose communicator is gone cannot resend its record, so the
 * receiver must make sure its SYNC_ACK arrives). */
struct ack_wait {
    struct hb_tr_op op;
    uint32_t id;
    int lost; /* test switch: never posted, its QP failed */
};

/* Every ACK_SIGNAL_EVERY-th SYNC_ACK is signaled: its completion confirms
 * the earlier ones (RC completes in order), so the list stays short. */
#define ACK_SIGNAL_EVERY 16

struct p2p_peer {
    /* sending to this peer */
    int tx_up, tx_dead;
    int starved; /* a credit wait timed out: no more until a credit comes */
    struct hb_slot_layout tl;
    struct hb_slot_tx stx;
    struct hb_pp_peer pp;
    uint64_t raddr;
    uint32_t rkey;
    char *stage;
    struct ibv_mr *stage_mr;
    /* receiving from this peer */
    int rx_up;
    int rx_dead; /* a RESEND came or a write failed: SYNC_ACKs by MPI */
    char *region;
    struct ibv_mr *region_mr;
    struct hb_slot_layout rl;
    struct hb_slot_rx srx;
    uint64_t rx_budget; /* rl was made for it: every grant says the same */
    uint64_t ack_addr;
    uint32_t ack_rkey;
    uint32_t *fifo; /* immediates not yet processed */
    uint32_t fifo_cap, fifo_head, fifo_tail;
    double fifo_since;         /* test (drain_delay): the oldest's arrival */
    struct hb_tr_op credit_op; /* the last credit write (seq 0: none) */
    long charged;
    uint32_t tx_epoch; /* the receiver's region tl describes */
    /* receiving: revokes (p2p_revoke.c) */
    uint32_t rx_epoch;  /* regions made so far */
    int rx_pairs;       /* live pairs of this sender, every communicator */
    int rx_revoking;    /* REVOKEs not yet answered */
    uint32_t rx_need;   /* the answers' highest rseq: written by A */
    uint32_t rx_seen;   /* highest rseq taken (ring or RESEND) */
    uint32_t rx_placed; /* highest rseq taken from the ring */
    uint64_t rx_last;   /* p2p.ctrl_calls at the last record */
    uint64_t rx_count;  /* records taken, for the test switch */
    struct ack_wait
        *acks; /* SYNC_ACKs by RDMA not yet confirmed, oldest first */
    uint32_t nacks, capacks;
};

static struct {
    struct hb_transport *tr;
    struct hb_rdma *rdma;
    int size;
    uint32_t max_msg;
    int *rxlist;  /* peers with a receive channel */
    int *acklist; /* peers with SYNC_ACKs not yet confirmed */
    int nack;
    int nrx;
    struct p2p_msg *in_slot; /* the record being processed, still in its slot */
    /* test switches: a QP error before record number fault_at (0: never);
     * the region's budget (0: what the peer's budget leaves); credits held
     * until a bucket is all free (the sender runs out: sends go by MPI) */
    uint64_t fault_at, records;
    uint64_t test_budget;
    int hold_credits;
    uint64_t revoke_every; /* test: revoke a pair at every K-th record */
    /* test: the SYNC_ACK number ack_fault_at (0: never) is lost with its
     * QP, as if the link failed under it: not posted, and a QP error */
    uint64_t ack_fault_at, acks;
    /* test: the progress pass drains a peer's records only once the
     * oldest has waited drain_delay seconds in the FIFO (0: at once), so
     * in-band messages sent after them are pulled first, as when MPI's own
     * progress runs the transport inside the pull */
    double drain_delay;
    double credit_wait_us; /* CREDIT_WAIT_US, or the test switch's */
    /* test: the first record of tag late_fault_tag (-1: none) is placed,
     * then, a late_fault_us later (as the retries of a lost
     * acknowledgement would take), its completion fails with the QP: it
     * goes again as a RESEND the receiver took already */
    int late_fault_tag;
    /* test: making the receive region number rx_fail_at fails (0: none) */
    uint64_t rx_fail_at, rx_makes;
} ch;

static struct p2p_peer *peer(int w)
{
    return &p2p.peers[w];
}

/* A record this rank cannot take (no channel, no room, no such slot or
 * pair): the peer fails, and the record's message, which its sender saw
 * complete, is lost.  Never expected: said on any rank, for the
 * transport keeps a peer's failure quiet until the report, and a lost
 * message usually ends in a hang that leaves no report. */
static void refuse_record(int w, const char *why)
{
    fprintf(stderr,
            "hotbuf: rank %d: point-to-point: %s from rank %d: its message "
            "is lost\n",
            p2p.ctx->rank, why, w);
    hb_transport_fail_peer(ch.tr, w, why);
}

/* ---- immediates (inside the transport's progress: no MPI here) -------- */

static void on_imm(void *ctx, int w, uint32_t body, uint32_t len)
{
    (void)ctx;
    (void)len;
    if (w < 0 || w >= ch.size)
        return;
    struct p2p_peer *p = peer(w);
    switch (HB_P2P_IMM_KIND(body)) {
    case HB_IMM_P2P_CREDIT: {
        int b = (int)HB_P2P_IMM_BUCKET(body);
        if (p->tx_up && b < p->tl.nbuckets &&
            HB_P2P_CREDIT_EPOCH(body) == (p->tx_epoch & 3u)) {
            hb_slot_tx_credit(&p->stx, b,
                              p->stx.freed[b] + HB_P2P_CREDIT_N(body));
            p->starved = 0;
        }
        return;
    }
    case HB_IMM_P2P_SYNC: hb_p2p_sync_acked(HB_P2P_IMM_N(body)); return;
    case HB_IMM_P2P_DATA:
        if (!p->rx_up || (p->fifo_tail + 1) % p->fifo_cap == p->fifo_head) {
            refuse_record(w, "point-to-point: stray record");
            return;
        }
        if (ch.drain_delay > 0 && p->fifo_head == p->fifo_tail)
            p->fifo_since = hb_clock_s(); /* the test's delay starts */
        p->fifo[p->fifo_tail] = body;
        p->fifo_tail = (p->fifo_tail + 1) % p->fifo_cap;
        return;
    }
}

int hb_p2p_chan_start(const struct hb_ctx *ctx)
{
    memset(&ch, 0, sizeof(ch));
    ch.rdma = ctx->rdma;
    ch.tr = ctx->rdma ? ctx->rdma->tr : NULL;
    if (!ch.tr)
        return -1;
    ch.size = ctx->size;
    ch.max_msg = ctx->cfg->eager_limit < (1u << 15)
                     ? (uint32_t)ctx->cfg->eager_limit
                     : (1u << 15);
    const char *fault = getenv("HOTBUF_TEST_P2P_FAULT");
    const char *budget = getenv("HOTBUF_TEST_P2P_BUDGET");
    const char *revoke = getenv("HOTBUF_TEST_P2P_REVOKE");
    const char *wait = getenv("HOTBUF_TEST_P2P_CREDIT_WAIT_US");
    ch.fault_at = fault ? strtoull(fault, NULL, 10) : 0;
    ch.test_budget = budget ? strtoull(budget, NULL, 10) : 0;
    ch.hold_credits = getenv("HOTBUF_TEST_P2P_HOLD_CREDITS") != NULL;
    ch.revoke_every = revoke ? strtoull(revoke, NULL, 10) : 0;
    ch.credit_wait_us = wait ? strtod(wait, NULL) : CREDIT_WAIT_US;
    const char *ack_fault = getenv("HOTBUF_TEST_P2P_ACK_FAULT");
    ch.ack_fault_at = ack_fault ? strtoull(ack_fault, NULL, 10) : 0;
    const char *late = getenv("HOTBUF_TEST_P2P_LATE_FAULT");
    ch.late_fault_tag = late ? atoi(late) : -1;
    const char *rx_fail = getenv("HOTBUF_TEST_P2P_RX_FAIL");
    ch.rx_fail_at = rx_fail ? strtoull(rx_fail, NULL, 10) : 0;
    const char *delay = getenv("HOTBUF_TEST_P2P_DRAIN_DELAY_US");
    ch.drain_delay = delay ? strtod(delay, NULL) * 1e-6 : 0;
    p2p.peers = calloc((size_t)ctx->size, sizeof(*p2p.peers));
    ch.rxlist = calloc((size_t)ctx->size, sizeof(*ch.rxlist));
    ch.acklist = calloc((size_t)ctx->size, sizeof(*ch.acklist));
    if (!p2p.peers || !ch.rxlist || !ch.acklist)
        return -1;
    return hb_rdma_imm_register(ctx->rdma, HB_IMM_CLASS_P2P, on_imm, NULL);
}

static void free_peer(int w, struct p2p_peer *p)
{
    if (p->stage_mr)
        ibv_dereg_mr(p->stage_mr);
    if (p->region_mr)
        ibv_dereg_mr(p->region_mr);
    if (p->charged)
        hb_transport_charge(ch.tr, w, -p->charged);
    free(p->stage);
    free(p->region);
    free(p->fifo);
    free(p->acks);
}

/* Before the barrier of MPI_Finalize: a credit still on its way could
 * reach a staging area its owner deregisters after the barrier (also one
 * of a region freed since). */
void hb_p2p_chan_quiesce(void)
{
    for (int w = 0; ch.tr && p2p.peers && w < ch.size; w++) {
        struct p2p_peer *p = peer(w);
        if (p->credit_op.seq)
            hb_transport_wait(ch.tr, &p->credit_op, NULL, NULL);
    }
}

/* After a barrier (p2p.c): no peer writes into a region any more. */
void hb_p2p_chan_stop(void)
{
    if (ch.rdma && ch.tr)
        hb_rdma_imm_register(ch.rdma, HB_IMM_CLASS_P2P, NULL, NULL);
    for (int w = 0; p2p.peers && w < ch.size; w++)
        free_peer(w, peer(w));
    free(p2p.peers);
    free(ch.rxlist);
    free(ch.acklist);
    p2p.peers = NULL;
    memset(&ch, 0, sizeof(ch));
}

/* ---- set-up, from the handshake -------------------------------------- */

static void *alloc_registered(size_t bytes, struct ibv_mr **mr)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes))
        return NULL;
    memset(p, 0, bytes);
    *mr = ibv_reg_mr(hb_transport_pd(ch.tr), p, bytes,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!*mr) {
        free(p);
        return NULL;
    }
    return p;
}

static size_t stage_bytes(void)
{
    return CREDIT_WORD + HB_SLOT_HDR + ch.max_msg;
}

/* The region's share of the peer's budget: what the transport's own
 * objects and this rank's staging area for the peer leave. */
static uint64_t region_budget(void)
{
    struct hb_transport_mem m;
    if (ch.test_budget)
        return ch.test_budget;
    hb_transport_get_mem(ch.tr, &m);
    size_t used = m.per_peer_bytes + stage_bytes();
    return m.budget_per_peer > used ? m.budget_per_peer - used : 0;
}

static int charge(int w, struct p2p_peer *p, size_t bytes)
{
    if (hb_transport_charge(ch.tr, w, (long)bytes))
        return -1;
    p->charged += (long)bytes;
    p2p.stats.chan_bytes += bytes;
    return 0;
}

static int rx_make(int w, struct p2p_peer *p)
{
    uint32_t slots = 0;
    if (++ch.rx_makes == ch.rx_fail_at)
        return -1; /* test: as if the memory were not there */
    p->rx_budget = region_budget();
    if (hb_slot_layout_make(&p->rl, p->rx_budget, ch.max_msg))
        return -1;
    for (int b = 0; b < p->rl.nbuckets; b++) {
        if (p->rl.count[b] > HB_P2P_CREDIT_N_MAX)
            return -1; /* a credit could not say it */
        slots += p->rl.count[b];
    }
    if (charge(w, p, p->rl.bytes))
        return -1;
    p->fifo_cap = slots + 1;
    p->fifo = calloc(p->fifo_cap, sizeof(*p->fifo));
    p->region = p->fifo ? alloc_registered(p->rl.bytes, &p->region_mr) : NULL;
    if (!p->region) { /* as it was: a later grant may try again */
        free(p->fifo);
        p->fifo = NULL;
        hb_transport_charge(ch.tr, w, -(long)p->rl.bytes);
        p->charged -= (long)p->rl.bytes;
        return -1;
    }
    hb_slot_rx_init(&p->srx, &p->rl);
    p->srx.hold = ch.hold_credits;
    p->rx_epoch++;
    p->rx_need = p->rx_seen; /* nothing of the new region written yet */
    ch.rxlist[ch.nrx++] = w;
    p2p.stats.chans++;
    p->rx_up = 1;
    return 0;
}

int hb_p2p_chan_rx(int a, uint64_t ack_addr, uint32_t ack_rkey,
                   struct hb_ctrl *grant)
{
    struct p2p_peer *p = peer(a);
    if (!p->rx_up && rx_make(a, p))
        return -1;
    p->ack_addr = ack_addr;
    p->ack_rkey = ack_rkey;
    grant->region = (uint64_t)(uintptr_t)p->region;
    grant->rkey = p->region_mr->rkey;
    grant->budget = p->rx_budget;
    grant->epoch = p->rx_epoch;
    hb_transport_connect(ch.tr, a); /* under way while the grant travels */
    grant->max_msg = ch.max_msg;
    return 0;
}

static int tx_make(int w, struct p2p_peer *p)
{
    if (p->stage)
        return 0;
    if (charge(w, p, stage_bytes()))
        return -1;
    p->stage = alloc_registered(stage_bytes(), &p->stage_mr);
    if (!p->stage)
        return -1;
    p2p.stats.chans++;
    hb_pp_peer_init(&p->pp);
    return 0;
}

void hb_p2p_chan_ack_area(int b, uint64_t *addr, uint32_t *rkey)
{
    struct p2p_peer *p = peer(b);
    *addr = 0;
    *rkey = 0;
    if (tx_make(b, p) == 0) {
        *addr = (uint64_t)(uintptr_t)p->stage;
        *rkey = p->stage_mr->rkey;
    }
}

/* The first grant from b sets the channel up; later ones (other
 * communicators, or a grant after a revoke that b has not freed the
 * region for yet) name the same region, the same epoch.  A new epoch is a
 * new region: b freed the old one only after every pair of this rank's
 * was revoked and answered, so no record uses the old layout any more. */
int hb_p2p_chan_tx(int b, const struct hb_ctrl *grant)
{
    struct p2p_peer *p = peer(b);
    if (p->tx_dead || tx_make(b, p))
        return -1;
    if (p->tx_up && p->tx_epoch == grant->epoch)
        return 0;
    p->tx_up = 0;
    if (grant->max_msg > ch.max_msg ||
        hb_slot_layout_make(&p->tl, grant->budget, grant->max_msg))
        return -1;
    hb_slot_tx_init(&p->stx, &p->tl);
    p->raddr = grant->region;
    p->rkey = grant->rkey;
    p->tx_epoch = grant->epoch;
    p->tx_up = 1;
    hb_transport_connect(ch.tr, b);
    return 0;
}

/* ---- sending ---------------------------------------------------------- */

/* The fault path (§5.11): the record may or may not have been placed; it
 * goes again by MPI on its communicator, where it travels ahead of every
 * later MPI message of this sender, and the receiver drops it if it saw
 * the original.  Then every pair to this peer stays on MPI. */
void hb_p2p_chan_resend(struct p2p_txpair *tp, const struct hb_ring_hdr *h,
                        const void *buf)
{
    uint32_t bytes = h->nbytes;
    size_t n = sizeof(struct hb_inband) + sizeof(*h) + bytes;
    char *m = malloc(n);
    struct hb_inband ib = {p2p.nonce, HB_INBAND_RESEND, h->rseq};
    if (!m)
        abort(); /* a record that may be lost cannot be dropped */
    memcpy(m, &ib, sizeof(ib));
    memcpy(m + sizeof(ib), h, sizeof(*h));
    memcpy(m + sizeof(ib) + sizeof(*h), buf, bytes);
    PMPI_Send(m, (int)n, MPI_BYTE, tp->dest, p2p.tstar, tp->c->comm);
    free(m);
    p2p.stats.ring_resends++;
}

/* The pairs to w go DEAD, and the DATA_SYNC records kept for their
 * SYNC_ACKs go again by MPI (p2p_sync.c), oldest first. */
static void peer_dead(int w)
{
    struct p2p_peer *p = peer(w);
    p->tx_dead = 1;
    p->tx_up = 0;
    for (uint32_t i = 0; i < p2p.ntxs; i++)
        if (p2p.txs[i] && p2p.txs[i]->world == w &&
            hb_pp_ring_ok(&p2p.txs[i]->pp)) {
            hb_pp_dead(&p2p.txs[i]->pp);
            p2p.stats.pairs_dead++;
        }
    hb_p2p_sync_resend(w);
}

/* Per peer, not per live pair: after a revoke (and a new epoch, or none)
 * the pair is off the ring, but a DATA_SYNC record it wrote may still
 * wait for a SYNC_ACK that dies with the QP; only its RESEND brings the
 * acknowledgement back (the model's revoke_fault). */
int hb_p2p_chan_tx_failed(int b)
{
    struct p2p_peer *p = peer(b);
    if (!p->tx_dead && p->stage &&
        hb_transport_peer_state(ch.tr, b) == HB_PEER_FAILED)
        peer_dead(b);
    return p->tx_dead;
}

static void fill_hdr(struct hb_ring_hdr *h, struct p2p_txpair *tp,
                     struct hb_pp_rec *rec, uint32_t bytes, int tag, int zc,
                     struct p2p_sync *sync, int rndv)
{
    memset(h, 0, sizeof(*h));
    h->cid = tp->cid;
    h->src = tp->c->rank;
    h->tag = tag;
    h->nbytes = bytes;
    h->rseq = rec->rseq;
    h->mpi_before = rec->mpi_before;
    h->type = !sync  ? HB_RING_DATA
              : rndv ? HB_RING_DATA_RNDV
                     : HB_RING_DATA_SYNC;
    h->zcopy = (uint16_t)zc;
    if (sync) { /* kept for a resend until its SYNC_ACK */
        h->sreq = sync->id;
        sync->hdr = *h;
        sync->sent = 1;
        p2p.stats.ring_sync++;
    }
}

/* Posts the record; HB_TR_* of the post. */
static int post(struct p2p_peer *p, int w, const struct hb_tr_sge *sg, int nsge,
                uint64_t off, uint32_t imm, struct hb_tr_op *op)
{
    struct hb_tr_wr wr = {.opcode = HB_TR_WRITE_IMM,
                          .sg = sg,
                          .nsge = nsge,
                          .remote_addr = p->raddr + off,
                          .rkey = p->rkey,
                          .imm = imm,
                          .flags = HB_TR_F_SIGNAL};
    int rc;
    while ((rc = hb_transport_post(ch.tr, w, &wr, op)) == HB_TR_BUSY)
        hb_progress_yield(NULL);
    return rc;
}

/* A hot buffer whose registrations have not lasted (mapped anew between
 * sends, regcache_churn.h) is copied: at slot sizes the copy costs less
 * than registering it again. */
static int zcopy_lasts(const void *buf)
{
    if (hb_churn_try(&p2p.churn, buf))
        return 1;
    p2p.stats.zcopy_churned++;
    return 0;
}

/* The payload's gather entry: the user buffer itself when hot and
 * registered (*reg to put back), else a copy behind the header. */
static void payload(struct p2p_peer *p, const void *buf, uint32_t bytes,
                    int hot, struct hb_tr_sge *sg, struct hb_region **reg)
{
    *reg = NULL;
    if (hot && ch.rdma->cache && zcopy_lasts(buf) &&
        hb_rdma_register(ch.rdma, buf, bytes, reg) == 0) {
        hb_churn_note(&p2p.churn, buf, hb_region_serial(*reg),
                      hb_region_len(*reg));
        sg->addr = (uint64_t)(uintptr_t)buf;
        sg->length = bytes;
        sg->lkey = hb_region_mr(*reg)->lkey;
        return;
    }
    *reg = NULL;
    hb_copy(p->stage + CREDIT_WORD + HB_SLOT_HDR, buf, bytes);
    sg->addr = (uint64_t)(uintptr_t)(p->stage + CREDIT_WORD + HB_SLOT_HDR);
    sg->length = bytes;
    sg->lkey = p->stage_mr->lkey;
}

/* No slot: the receiver holds them all.  A credit may be on its way (the
 * receiver drains as soon as it is in MPI): wait for it a little, once
 * per starvation (see CREDIT_WAIT_US).  0: a slot was taken. */
static int wait_credit(struct p2p_peer *p, uint32_t bytes, int *bucket,
                       uint64_t *off)
{
    double until = hb_clock_us() + ch.credit_wait_us;
    do {
        hb_progress_yield(NULL);
        if (!hb_slot_tx_take(&p->stx, bytes, bucket, off))
            return 0;
    } while (!p->starved && hb_clock_us() < until);
    p->starved = 1;
    return -1;
}

int hb_p2p_chan_fits(int b, uint64_t bytes)
{
    struct p2p_peer *p = peer(b);
    return !p->tx_up || bytes <= p->tl.cap[p->tl.nbuckets - 1];
}

/* A DATA_RNDV record's payload: the descriptor of the user's buffer,
 * registered (*reg, held by the record's keeper until its SYNC_ACK), from
 * the staging area behind the header.  -1: no registration (MPI then). */
static int rndv_desc(struct p2p_peer *p, const void *buf, uint32_t bytes,
                     struct hb_tr_sge *sg, struct hb_region **reg)
{
    struct hb_rndv_desc d = {.addr = (uint64_t)(uintptr_t)buf};
    *reg = NULL;
    if (!ch.rdma->cache || hb_rdma_register(ch.rdma, buf, bytes, reg)) {
        p2p.stats.rndv_noreg++;
        return -1;
    }
    hb_churn_note(&p2p.churn, buf, hb_region_serial(*reg), hb_region_len(*reg));
    d.rkey = hb_region_mr(*reg)->rkey;
    memcpy(p->stage + CREDIT_WORD + HB_SLOT_HDR, &d, sizeof(d));
    sg->addr = (uint64_t)(uintptr_t)(p->stage + CREDIT_WORD + HB_SLOT_HDR);
    sg->length = sizeof(d);
    sg->lkey = p->stage_mr->lkey;
    return 0;
}

/* What a send's record occupies in its slot. */
static uint32_t record_len(uint32_t bytes, int rndv)
{
    return rndv ? (uint32_t)sizeof(struct hb_rndv_desc) : bytes;
}

/* A slot for len bytes, waiting a little for a credit; -1: none. */
static int take_slot(struct p2p_peer *p, uint32_t len, int *bucket,
                     uint64_t *off)
{
    if (hb_slot_tx_take(&p->stx, len, bucket, off) &&
        wait_credit(p, len, bucket, off)) {
        p2p.stats.live_no_slot++;
        return -1;
    }
    return 0;
}

/* The record was written (zero-copy or copied), or failed: the pair's
 * bookkeeping, the resend, the counts. */
static void sent(struct p2p_txpair *tp, struct hb_pp_rec *rec, int rc,
                 const void *buf, uint32_t bytes, int zc, int rndv,
                 struct p2p_sync *sync)
{
    struct p2p_peer *p = peer(tp->world);
    hb_pp_acked(rec);
    if (rc != HB_TR_OK) {
        struct hb_ring_hdr copy =
            *(struct hb_ring_hdr *)(p->stage + CREDIT_WORD);
        peer_dead(tp->world); /* a kept record goes again there */
        if (!sync)
            hb_p2p_chan_resend(tp, &copy, buf);
        return;
    }
    p2p.stats.ring_msgs++;
    p2p.stats.ring_bytes += bytes;
    p2p.stats.ring_zcopy += zc;
    p2p.stats.rndv_msgs += rndv;
    p2p.stats.rndv_bytes += rndv ? bytes : 0;
}

int hb_p2p_chan_send(struct p2p_txpair *tp, const void *buf, uint32_t bytes,
                     int tag, int hot, struct p2p_sync *sync)
{
    struct p2p_peer *p = peer(tp->world);
    struct hb_tr_sge sg[2];
    struct hb_region *reg = NULL;
    struct hb_pp_rec rec;
    struct hb_tr_op op;
    int bucket, rc;
    uint64_t off;
    if (!p->tx_up)
        return -1;
    int rndv = bytes > p->tl.cap[p->tl.nbuckets - 1];
    if (rndv && (!sync || !sync->rndv || bytes > p2p.rndv_max))
        return -1;
    if (hb_transport_connect(ch.tr, tp->world) != HB_TR_OK) {
        p2p.stats.live_connecting++;
        return -1;
    }
    uint32_t len = record_len(bytes, rndv);
    if (rndv && rndv_desc(p, buf, bytes, &sg[1], &reg))
        return -1;
    if (take_slot(p, len, &bucket, &off)) {
        if (reg)
            hb_regcache_put(ch.rdma->cache, reg);
        return -1;
    }
    uint32_t slot =
        (uint32_t)((off - p->tl.offset[bucket]) / p->tl.stride[bucket]);
    hb_pp_ring(&tp->pp, &p->pp, &rec);
    if (++ch.records == ch.fault_at) /* test: as a fatal link error would */
        hb_transport_debug_qp_error(ch.tr, tp->world);
    struct hb_ring_hdr *h = (void *)(p->stage + CREDIT_WORD);
    if (!rndv)
        payload(p, buf, bytes, hot, &sg[1], &reg);
    fill_hdr(h, tp, &rec, bytes, tag, reg != NULL, sync, rndv);
    sg[0] = (struct hb_tr_sge){(uint64_t)(uintptr_t)h, HB_SLOT_HDR,
                               p->stage_mr->lkey};
    rc = post(
        p, tp->world, sg, len ? 2 : 1, off,
        HB_IMM(HB_IMM_CLASS_P2P, HB_P2P_IMM(HB_IMM_P2P_DATA, bucket, slot)),
        &op);
    if (rc == HB_TR_OK)
        rc = hb_transport_wait(ch.tr, &op, hb_progress_yield, NULL);
    if (rc == HB_TR_OK && tag == ch.late_fault_tag) {
        ch.late_fault_tag = -1;
        struct timespec late = {0, 300000000}; /* the receiver took it */
        nanosleep(&late, NULL);
        hb_transport_debug_qp_error(ch.tr, tp->world);
        rc = HB_TR_FAILED;
    }
    int zc = reg != NULL;
    if (rndv) { /* the receiver reads buf: registered until the SYNC_ACK,
                   and the message can be resent on its communicator */
        sync->reg = reg;
        hb_p2p_sync_hold_comm(sync);
    } else if (reg)
        hb_regcache_put(ch.rdma->cache, reg);
    sent(tp, &rec, rc, buf, bytes, zc, rndv, sync);
    return zc;
}

/* ---- receiving -------------------------------------------------------- */

void hb_p2p_release(struct p2p_comm *c, struct p2p_rxpair *rp)
{
    struct hb_mg_item *it;
    while ((it = hb_mg_next(&rp->mg))) {
        struct p2p_msg *m = hb_container_of(it, struct p2p_msg, g);
        if (m->kind == MSG_MARKER) {
            free(m);
            continue;
        }
        /* the record being taken: delivered, it was unpacked straight out
         * of its slot (and m is gone); stored unexpected, it stays
         * ch.in_slot, and take_record copies it out before the slot is
         * freed and credited (it was left there, and a later record
         * overwrote it: p2p_random seed 15 with nonblocking sends on the
         * ring) */
        if (m != ch.in_slot) {
            hb_p2p_match(c, m);
            continue;
        }
        ch.in_slot = NULL;
        if (!hb_p2p_match(c, m))
            ch.in_slot = m;
    }
}

/* A DATA_SYNC or DATA_RNDV record: its sender waits for a SYNC_ACK. */
static int record_sync(const struct hb_ring_hdr *h)
{
    return h->type == HB_RING_DATA_SYNC || h->type == HB_RING_DATA_RNDV;
}

/* What the record holds in its slot (not what the message holds). */
static uint32_t slot_len(const struct hb_ring_hdr *h)
{
    return record_len(h->nbytes, h->type == HB_RING_DATA_RNDV);
}

/* The message of record h; data: its payload as placed (a rendezvous
 * record's descriptor when rndv, else the message). */
static struct p2p_msg *ring_msg(const struct hb_ring_hdr *h, const void *data,
                                int rndv)
{
    struct p2p_msg *m = malloc(sizeof(*m) + (rndv ? 0 : h->nbytes));
    if (!m)
        abort(); /* a placed record cannot be refused */
    memset(m, 0, sizeof(*m));
    m->kind = MSG_RING;
    m->msg = MPI_MESSAGE_NULL;
    m->data = rndv ? NULL : (void *)data;
    m->bytes = h->nbytes;
    if (rndv) /* the payload stays with the sender until it is read */
        memcpy(&m->rd, data, sizeof(m->rd));
    m->rndv = rndv;
    m->n.source = h->src;
    m->n.tag = h->tag;
    m->st.MPI_SOURCE = h->src;
    m->st.MPI_TAG = h->tag;
    m->st.MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(&m->st, MPI_BYTE, (int)h->nbytes);
    PMPI_Status_set_cancelled(&m->st, 0);
    m->g.kind = HB_MG_RING;
    m->g.rseq = h->rseq;
    m->g.stamp = h->mpi_before;
    return m;
}

/* The pair a record names, or NULL (a corrupt record). */
static struct p2p_comm *record_comm(const struct hb_ring_hdr *h, int w,
                                    struct p2p_rxpair **rp)
{
    struct p2p_comm *c = h->cid < p2p.ncids ? p2p.cids[h->cid] : NULL;
    if (!c || !c->rx || h->src < 0 || h->src >= c->size)
        return NULL;
    *rp = c->rx[h->src];
    return *rp && (*rp)->world == w ? c : NULL;
}

/* A record seen before (a RESEND of a placed one, or the placed one
 * after its RESEND).  A synchronous or rendezvous record still waiting
 * for its match or its read gets what it needs from a RESEND's payload;
 * one already acknowledged is acknowledged again (p2p_sync.c). */
static void take_dup(int w, const struct hb_ring_hdr *h, const void *data,
                     int resent)
{
    p2p.stats.ring_dups++;
    if (!record_sync(h))
        return;
    struct p2p_msg *m = hb_p2p_sync_rx_dup(w, h->rseq, h->sreq);
    if (m && m->rndv && resent)
        hb_p2p_rndv_resent(m, data);
}

/* Records of w before rseq that were placed but never completed here.
 * One queue pair carries them in rseq order and A waits for each one's
 * completion, so the ring's completions come without a gap unless the
 * device lost one; A keeps nothing once a record completed (a DATA_SYNC
 * record aside), so their messages are lost: the receives they match
 * wait forever.  Not expected on a working device; said on any rank (a
 * hang's only trace otherwise), counted. */
static void gap(int w, const struct p2p_peer *p, uint32_t rseq)
{
    p2p.stats.ring_gaps += rseq - p->rx_placed - 1;
    fprintf(stderr,
            "hotbuf: rank %d: point-to-point: records %u..%u from rank %d "
            "were placed but never completed here (lost)\n",
            p2p.ctx->rank, p->rx_placed + 1, rseq - 1, w);
}

/* A record into its pair's merge; 0, or -1 when it names no pair.  data
 * is borrowed (a slot, or a RESEND's buffer): a record the merge or the
 * unexpected store keeps gets its own copy.  resent: it came by MPI,
 * whole (a rendezvous record's message with it). */
static int take_record(int w, const struct hb_ring_hdr *h, const void *data,
                       int resent)
{
    struct p2p_rxpair *rp;
    struct p2p_comm *c = record_comm(h, w, &rp);
    if (!c)
        return -1;
    int rndv = h->type == HB_RING_DATA_RNDV && !resent;
    struct p2p_msg *m = ring_msg(h, data, rndv);
    struct p2p_peer *p = peer(w);
    if (!resent && h->rseq > p->rx_placed + 1)
        gap(w, p, h->rseq);
    if (h->rseq > p->rx_seen)
        p->rx_seen = h->rseq;
    if (!resent && h->rseq > p->rx_placed)
        p->rx_placed = h->rseq;
    p->rx_last = p2p.ctrl_calls;
    if (hb_mg_ring(&rp->mg, &m->g)) {
        free(m);
        take_dup(w, h, data, resent);
        return 0;
    }
    if (record_sync(h))
        hb_p2p_sync_rx_new(m, w, h->sreq);
    p2p.stats.ring_received++;
    if (ch.revoke_every && rp->live && ++p->rx_count % ch.revoke_every == 0)
        rp->revoke_due = p2p.revokes_due = 1;
    ch.in_slot = rndv ? NULL : m; /* a descriptor is copied already */
    hb_p2p_release(c, rp);
    if (ch.in_slot) { /* held (merge or unexpected store) */
        hb_copy(m->copy, m->data, m->bytes);
        m->data = m->copy;
    }
    ch.in_slot = NULL;
    return 0;
}

static void send_credit(int w, struct p2p_peer *p, int b)
{
    uint64_t before = p->srx.credited[b], freed;
    struct hb_tr_op op;
    if (!hb_slot_rx_credit_due(&p->srx, b, &freed))
        return;
    uint32_t imm =
        HB_IMM(HB_IMM_CLASS_P2P, HB_P2P_CREDIT(b, p->rx_epoch, freed - before));
    struct hb_tr_wr wr = {.opcode = HB_TR_WRITE_IMM,
                          .nsge = 0,
                          .remote_addr = p->ack_addr,
                          .rkey = p->ack_rkey,
                          .imm = imm};
    if (hb_transport_post(ch.tr, w, &wr, &op) != HB_TR_OK) {
        p->srx.credited[b] = before; /* again at the next free */
        return;
    }
    p->credit_op = op;
    p2p.stats.ring_credits++;
}

/* Keeps a SYNC_ACK written to a until it is known delivered; -1: no
 * memory (the caller sends it by MPI at once instead). */
static int ack_keep(int a, struct p2p_peer *p, struct ack_wait w)
{
    if (p->nacks == p->capacks) {
        uint32_t cap = p->capacks ? 2 * p->capacks : 2 * ACK_SIGNAL_EVERY;
        struct ack_wait *v = realloc(p->acks, cap * sizeof(*v));
        if (!v)
            return -1;
        p->acks = v;
        p->capacks = cap;
    }
    if (p->nacks == 0)
        ch.acklist[ch.nack++] = a;
    p->acks[p->nacks++] = w;
    return 0;
}

int hb_p2p_chan_sync_ack(int a, uint32_t id)
{
    struct p2p_peer *p = peer(a);
    struct hb_tr_op op;
    struct hb_tr_wr wr = {
        .opcode = HB_TR_WRITE_IMM,
        .nsge = 0,
        .remote_addr = p->ack_addr,
        .rkey = p->ack_rkey,
        .imm = HB_IMM(HB_IMM_CLASS_P2P, HB_P2P_IMM(HB_IMM_P2P_SYNC, 0, id)),
        .flags = p->nacks % ACK_SIGNAL_EVERY == ACK_SIGNAL_EVERY - 1
                     ? HB_TR_F_SIGNAL
                     : 0};
    if (!p->rx_up || p->rx_dead)
        return -1;
    if (++ch.acks == ch.ack_fault_at) { /* test: lost with the QP */
        hb_transport_debug_qp_error(ch.tr, a);
        return ack_keep(a, p, (struct ack_wait){.id = id, .lost = 1});
    }
    int rc = hb_transport_post(ch.tr, a, &wr, &op);
    if (rc == HB_TR_FAILED)
        p->rx_dead = 1;
    if (rc != HB_TR_OK)
        return -1; /* queue full: this one by MPI */
    p->credit_op = op;
    return ack_keep(a, p, (struct ack_wait){.op = op, .id = id});
}

/* Drops a's confirmed SYNC_ACKs; once its QP has failed, sends the others
 * again by MPI (a duplicate changes nothing at the sender).  1: a's list
 * is empty now. */
static int ack_state(const struct ack_wait *w)
{
    return w->lost ? HB_TR_FAILED : hb_transport_test(ch.tr, &w->op);
}

static int acks_check_peer(int a, struct p2p_peer *p)
{
    uint32_t k = 0;
    int st = HB_TR_AGAIN;
    while (k < p->nacks && (st = ack_state(&p->acks[k])) == HB_TR_OK)
        k++;
    if (k < p->nacks && st == HB_TR_FAILED) {
        p->rx_dead = 1; /* SYNC_ACKs by MPI from now */
        for (; k < p->nacks; k++)
            hb_p2p_ctrl_sync_ack(a, p->acks[k].id);
    }
    memmove(p->acks, p->acks + k, (p->nacks - k) * sizeof(*p->acks));
    p->nacks -= k;
    return p->nacks == 0;
}

void hb_p2p_chan_rx_failed(int a, const char *why)
{
    peer(a)->rx_dead = 1;
    hb_transport_fail_peer(ch.tr, a, why); /* nothing if failed already */
}

void hb_p2p_chan_acks_check(void)
{
    for (int i = 0; i < ch.nack;) {
        int a = ch.acklist[i];
        if (acks_check_peer(a, peer(a)))
            ch.acklist[i] = ch.acklist[--ch.nack];
        else
            i++;
    }
}

static void drain_peer(int w, struct p2p_peer *p)
{
    while (p->fifo_head != p->fifo_tail) {
        uint32_t body = p->fifo[p->fifo_head];
        p->fifo_head = (p->fifo_head + 1) % p->fifo_cap;
        int b = (int)HB_P2P_IMM_BUCKET(body);
        uint32_t slot = HB_P2P_IMM_N(body);
        if (b >= p->rl.nbuckets || slot >= p->rl.count[b]) {
            refuse_record(w, "point-to-point: bad slot");
            return;
        }
        char *rec =
            p->region + p->rl.offset[b] + (uint64_t)slot * p->rl.stride[b];
        const struct hb_ring_hdr *h = (const void *)rec;
        uint32_t len = slot_len(h);
        if (len > p->rl.cap[b] || take_record(w, h, rec + HB_SLOT_HDR, 0)) {
            refuse_record(w, "point-to-point: bad record");
            return;
        }
        hb_slot_rx_free(&p->srx, b, len);
        p2p.stats.slot_recs[b]++;
        p2p.stats.slot_msg_bytes[b] += len;
        p2p.stats.slot_cap_bytes[b] += p->rl.cap[b];
        send_credit(w, p, b);
    }
}

void hb_p2p_chan_drain(void)
{
    double now = ch.drain_delay > 0 ? hb_clock_s() : 0;
    for (int i = 0; i < ch.nrx; i++) {
        struct p2p_peer *p = peer(ch.rxlist[i]);
        if (p->fifo_head != p->fifo_tail &&
            now - p->fifo_since >= ch.drain_delay)
            drain_peer(ch.rxlist[i], p);
    }
}

/* ---- revokes: the receiver's accounting, the sender's answer ---------- */

void hb_p2p_chan_rx_granted(int a)
{
    struct p2p_peer *p = peer(a);
    p->rx_pairs++;
    p->rx_last = p2p.ctrl_calls;
}

void hb_p2p_chan_rx_revoking(int a)
{
    struct p2p_peer *p = peer(a);
    p->rx_pairs--;
    p->rx_revoking++;
}

void hb_p2p_chan_rx_revoked(int a, uint32_t rseq)
{
    struct p2p_peer *p = peer(a);
    if (p->rx_revoking > 0)
        p->rx_revoking--;
    if (rseq > p->rx_need)
        p->rx_need = rseq;
}

int hb_p2p_chan_rx_idle(int a, uint64_t idle)
{
    struct p2p_peer *p = peer(a);
    return p->rx_up && p->rx_pairs > 0 && p2p.ctrl_calls - p->rx_last >= idle;
}

/* Nothing can land in the region any more: no live pair, every REVOKE
 * answered, and every record up to the answers' rseq taken (placed ones
 * drained from the CQ, lost ones received as RESENDs). */
static int releasable(const struct p2p_peer *p)
{
    return p->rx_up && p->rx_pairs == 0 && p->rx_revoking == 0 &&
           p->rx_seen >= p->rx_need && p->fifo_head == p->fifo_tail;
}

/* The region back to the peer's budget.  Its rkey dies with the MR: a
 * write that should not come would fail at A (QP error, the fault path)
 * instead of landing in freed memory. */
static void rx_free(int w, struct p2p_peer *p)
{
    ibv_dereg_mr(p->region_mr);
    free(p->region);
    free(p->fifo);
    p->region_mr = NULL;
    p->region = NULL;
    p->fifo = NULL;
    p->fifo_head = p->fifo_tail = p->fifo_cap = 0;
    hb_transport_charge(ch.tr, w, -(long)p->rl.bytes);
    p->charged -= (long)p->rl.bytes;
    p2p.stats.chans_freed++;
    p2p.stats.chan_bytes_freed += p->rl.bytes;
    p->rx_up = 0;
}

/* A channel waiting only for its last records has them drained here
 * (the progress pass may not run: no communicator left in pull). */
void hb_p2p_chan_rx_release(void)
{
    for (int i = 0; i < ch.nrx;) {
        int w = ch.rxlist[i];
        struct p2p_peer *p = peer(w);
        if (p->rx_pairs == 0 && p->rx_revoking == 0 &&
            p->fifo_head != p->fifo_tail)
            drain_peer(w, p);
        if (releasable(p)) {
            rx_free(w, p);
            ch.rxlist[i] = ch.rxlist[--ch.nrx];
        } else {
            i++;
        }
    }
}

/* Every record is complete once it is off the unacked list (a blocking
 * ring send takes it off after its completion or its RESEND). */
int hb_p2p_chan_tx_quiet(int b, uint32_t *rseq)
{
    struct p2p_peer *p = peer(b);
    *rseq = p->pp.rseq;
    return !p->stage || hb_pp_oldest_unacked(&p->pp) == NULL;
}

/* ---- in-band messages of a switched sender (tag T*) ------------------- */

static void *mrecv_all(MPI_Message *msg, int bytes)
{
    void *b = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!b)
        abort();
    PMPI_Mrecv(b, bytes, MPI_BYTE, msg, MPI_STATUS_IGNORE);
    return b;
}

/* A T* message that is not ours: the application's, as a ring-like
 * message holding the bytes already received. */
static void foreign(struct p2p_comm *c, struct p2p_rxpair *rp, void *b,
                    int bytes, const MPI_Status *st)
{
    struct hb_ring_hdr h = {
        .src = st->MPI_SOURCE, .tag = st->MPI_TAG, .nbytes = (uint32_t)bytes};
    struct p2p_msg *m = ring_msg(&h, NULL, 0);
    hb_copy(m->copy, b, (size_t)bytes);
    m->data = m->copy;
    m->g.kind = HB_MG_MPI;
    hb_mg_pulled(&rp->mg, &m->g);
    hb_p2p_release(c, rp);
}

/* Before a RESEND of record rseq is taken (§5.11, the model's force):
 * every record below it was placed (A waits for each record's completion,
 * so only its last one can lack one, and a kept DATA_SYNC record had its
 * completion), and a placed record taken after the RESEND would look like
 * a duplicate and be dropped: p2p_random lost rseq 15 of a communicator
 * that way when RESEND 16 came by MPI before 15's completion had been
 * polled (HOTBUF_TEST_P2P_FAULT=16).  So the QP is forced to ERROR (the
 * set of placed records is final) and the CQ polled until those records
 * are in; the transport keeps the failed QP until the CQ is dry, so that
 * no provider drops their completions. */
#define SETTLE_S 5.0

static void settle(int w, struct p2p_peer *p, uint32_t rseq)
{
    double deadline = hb_clock_s() + SETTLE_S;
    hb_p2p_chan_rx_failed(w, "point-to-point: the peer resent a record");
    while (p->rx_placed + 1 < rseq) {
        hb_transport_progress(ch.tr);
        if (p->fifo_head != p->fifo_tail)
            drain_peer(w, p);
        else if (hb_clock_s() > deadline) {
            hb_note("point-to-point: records %u..%u from rank %d were "
                    "acknowledged but never completed here; taking its "
                    "resent record %u anyway",
                    p->rx_placed + 1, rseq - 1, w, rseq);
            p->rx_placed = rseq - 1; /* said once */
        }
    }
}

void hb_p2p_inband(struct p2p_comm *c, struct p2p_rxpair *rp, MPI_Message msg,
                   const MPI_Status *st)
{
    int bytes = 0;
    struct hb_inband ib;
    PMPI_Get_count(st, MPI_BYTE, &bytes);
    char *b = mrecv_all(&msg, bytes);
    if (bytes < (int)sizeof(ib)) {
        foreign(c, rp, b, bytes, st);
        free(b);
        return;
    }
    memcpy(&ib, b, sizeof(ib));
    if (ib.nonce == p2p.nonce && ib.kind == HB_INBAND_MARKER &&
        bytes == (int)sizeof(ib)) {
        struct p2p_msg *m = hb_p2p_msg_mpi(MPI_MESSAGE_NULL, st);
        m->kind = MSG_MARKER;
        m->g.kind = HB_MG_MARKER;
        m->g.stamp = ib.k;
        p2p.stats.markers_in++;
        hb_mg_pulled(&rp->mg, &m->g);
        hb_p2p_release(c, rp);
    } else if (ib.nonce == p2p.nonce && ib.kind == HB_INBAND_RESEND &&
               bytes >= (int)(sizeof(ib) + sizeof(struct hb_ring_hdr))) {
        struct hb_ring_hdr h;
        memcpy(&h, b + sizeof(ib), sizeof(h));
        p2p.stats.ring_resent_in++;
        /* the QP failed: its SYNC_ACKs by MPI from now (rx_dead) */
        settle(rp->world, peer(rp->world), h.rseq);
        if (bytes - sizeof(ib) - sizeof(h) >= h.nbytes)
            take_record(rp->world, &h, b + sizeof(ib) + sizeof(h), 1);
    } else if (ib.nonce == p2p.nonce && ib.kind == HB_INBAND_CLOSE &&
               bytes == (int)sizeof(ib)) {
        rp->closed = 1; /* A sends nothing more on c */
        p2p.stats.closes_in++;
        if (p2p.closes_from)
            p2p.closes_from[rp->world]++;
    } else {
        foreign(c, rp, b, bytes, st);
    }
    free(b);
}

/* ---- the state, for a hang's diagnosis (p2p_dump.c) ------------------- */

void hb_p2p_chan_dump(FILE *f)
{
    for (int w = 0; p2p.peers && w < ch.size; w++) {
        const struct p2p_peer *p = peer(w);
        if (!p->stage && !p->region)
            continue;
        fprintf(f,
                "hotbuf: p2p peer %d: tx up %d dead %d epoch %u rseq %u "
                "starved %d | rx up %d dead %d epoch %u placed %u seen %u "
                "need %u fifo %u pairs %d revoking %d acks %u | qp %d\n",
                w, p->tx_up, p->tx_dead, p->tx_epoch, p->pp.rseq, p->starved,
                p->rx_up, p->rx_dead, p->rx_epoch, p->rx_placed, p->rx_seen,
                p->rx_need,
                p->fifo_cap
                    ? (p->fifo_tail + p->fifo_cap - p->fifo_head) % p->fifo_cap
                    : 0,
                p->rx_pairs, p->rx_revoking, p->nacks,
                (int)hb_transport_peer_state(ch.tr, w));
    }
}
