/* Revokes, and freeing the channels they leave idle (P2P-DESIGN.md §5.4
 * "REVOKE", issue 13 item 2; the model: tests/model/p2p_pull.pml, REVOKE).
 *
 * Receiver B revokes a pair (A, c) when A's channel has carried no record
 * for HOTBUF_P2P_IDLE of B's wrapper entries (every pair of A's then: the
 * channel is per process pair, shared by the communicators), when c is
 * freed, or, under the test switch HOTBUF_TEST_P2P_REVOKE=K, at every K-th
 * record of A's.  REVOKE and its answer travel on the handshake's private
 * communicator, at wrapper entries, never blocking.
 *
 *   A, on REVOKE: the pair leaves the ring (TX_IDLE: its next hot send
 *     asks again).  Its stamps and rseq go on: the next MPI send after
 *     ring records goes after MARKER{k}, as any MPI run on a live pair
 *     (p2p_pair.h), and a later grant needs no new MARKER{0}.  B's merge
 *     of the pair goes on the same way, so a revoke is, for ordering, a
 *     stretch of MPI sends.  Once every record A wrote to B is complete
 *     (placed, or resent by MPI after a fault), A answers REVOKED{rseq =
 *     its last record to B}; it answers every REVOKE, also one for a pair
 *     it freed, since B counts the answers.
 *   B: frees A's region (slots, registration, budget) once no pair of A's
 *     is live, every REVOKE is answered, and every record up to the
 *     answers' highest rseq is taken: drained from the CQ, or received as
 *     a RESEND when the QP failed first.  Freed earlier, a record still on
 *     its way would land in freed memory or be lost (the model's
 *     FREE_EARLY fails).  A grant that comes before that reuses the
 *     region (same epoch); one after it makes a new one (the next epoch:
 *     A lays its slots out anew, and credits of the old one are ignored).
 *   B stays in pull on c: leaving pull (§5.7 "Leaving PULL") is not done.
 * At MPI_Finalize a REVOKE or an answer nobody read is drained like any
 * handshake message (p2p_grant.c counts them all). */
#include <stdlib.h>
#include <string.h>

#include "p2p_int.h"

/* A REVOKE the sender must answer once its records are complete. */
struct owed {
    int world;
    uint32_t token;
};

static struct {
    uint64_t idle;       /* HOTBUF_P2P_IDLE: B's wrapper entries (0: never) */
    uint64_t next_check; /* p2p.ctrl_calls of the next idle check */
    struct owed *owed;
    int nowed, capowed;
} rv;

void hb_p2p_revoke_start(const struct hb_ctx *ctx)
{
    memset(&rv, 0, sizeof(rv));
    rv.idle = (uint64_t)ctx->cfg->p2p_idle;
}

void hb_p2p_revoke_stop(void)
{
    free(rv.owed);
    memset(&rv, 0, sizeof(rv));
}

/* ---- the receiver --------------------------------------------------------- */

void hb_p2p_revoke(struct p2p_comm *c, int src)
{
    struct p2p_rxpair *rp = c->rx ? c->rx[src] : NULL;
    if (!rp || !rp->live || !p2p.peers)
        return;
    struct hb_ctrl m = {.kind = HB_CTRL_REVOKE, .token = rp->token};
    rp->revoke_due = 0;
    if (hb_p2p_ctrl_send(&m, rp->world))
        return; /* stays live: A never hears */
    rp->live = 0;
    hb_p2p_chan_rx_revoking(rp->world);
    p2p.stats.revokes++;
}

/* Every live pair for which want(rp) holds, revoked. */
static void revoke_where(int (*want)(const struct p2p_rxpair *rp))
{
    for (uint32_t i = 1; i < p2p.ncids; i++) {
        struct p2p_comm *c = p2p.cids[i];
        for (int s = 0; c && c->rx && s < c->size; s++)
            if (c->rx[s] && c->rx[s]->live && want(c->rx[s]))
                hb_p2p_revoke(c, s);
    }
}

/* Every pair of sender w (any communicator) marked due. */
static void mark_world(int w)
{
    for (uint32_t i = 1; i < p2p.ncids; i++) {
        struct p2p_comm *c = p2p.cids[i];
        for (int s = 0; c && c->rx && s < c->size; s++)
            if (c->rx[s] && c->rx[s]->world == w)
                c->rx[s]->revoke_due = 1;
    }
}

/* The test switch revokes every pair of the due pair's sender: a pair
 * with no record would otherwise hold the channel until it is idle, and
 * the switch is there to free channels often. */
static int due(const struct p2p_rxpair *rp)
{
    if (rp->revoke_due)
        mark_world(rp->world);
    return rp->revoke_due;
}

static int idle(const struct p2p_rxpair *rp)
{
    return hb_p2p_chan_rx_idle(rp->world, rv.idle);
}

void hb_p2p_revoke_poll(void)
{
    if (!p2p.peers)
        return;
    if (p2p.revokes_due) {
        p2p.revokes_due = 0;
        revoke_where(due); /* twice: pairs before a due one in the scan */
        revoke_where(due);
    }
    if (rv.idle && p2p.ctrl_calls >= rv.next_check) {
        rv.next_check = p2p.ctrl_calls + rv.idle / 4 + 1;
        revoke_where(idle);
    }
    if (rv.nowed)
        hb_p2p_revoke_answer_owed();
    hb_p2p_chan_rx_release();
}

/* The region goes at once when it can: A's next REQ may be right behind
 * this answer, and would keep it. */
void hb_p2p_revoked_in(const struct hb_ctrl *m, int world)
{
    if (!p2p.peers)
        return;
    hb_p2p_chan_rx_revoked(world, m->rseq);
    hb_p2p_chan_rx_release();
}

/* ---- the sender ----------------------------------------------------------- */

/* 0 when sent (or no channel: nothing to wait for), -1 not yet. */
static int answer(int world, uint32_t token)
{
    struct hb_ctrl r = {.kind = HB_CTRL_REVOKED, .token = token};
    if (p2p.peers && !hb_p2p_chan_tx_quiet(world, &r.rseq))
        return -1;
    if (hb_p2p_ctrl_send(&r, world) == 0)
        p2p.stats.revoke_answers++;
    return 0; /* unsent: B keeps the region until MPI_Finalize */
}

static void owe(int world, uint32_t token)
{
    if (rv.nowed == rv.capowed) {
        int cap = rv.capowed ? 2 * rv.capowed : 4;
        struct owed *v = realloc(rv.owed, (size_t)cap * sizeof(*v));
        if (!v)
            return; /* B keeps the region until MPI_Finalize */
        rv.owed = v;
        rv.capowed = cap;
    }
    rv.owed[rv.nowed++] = (struct owed){world, token};
}

void hb_p2p_revoke_in(const struct hb_ctrl *m, int world)
{
    struct p2p_txpair *tp = m->token < p2p.ntxs ? p2p.txs[m->token] : NULL;
    if (tp && tp->world == world && tp->state == TX_GRANTED)
        tp->state = TX_IDLE; /* off the ring; the stamps go on */
    if (answer(world, m->token))
        owe(world, m->token);
}

/* In the order the REVOKEs came (B counts answers, not which). */
void hb_p2p_revoke_answer_owed(void)
{
    int i = 0;
    while (i < rv.nowed && answer(rv.owed[i].world, rv.owed[i].token) == 0)
        i++;
    memmove(rv.owed, rv.owed + i, (size_t)(rv.nowed - i) * sizeof(*rv.owed));
    rv.nowed -= i;
}
