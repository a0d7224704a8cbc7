/* The grant handshake of point-to-point part 2 (P2P-DESIGN.md §5.4, §5.7
 * "Grant"; issue 13 item 1).
 *
 * A sender A whose sends to B on c turn hot asks (REQ); B grants (GRANT:
 * c enters pull at B, MPI's pending receives that could match A move
 * into hotbuf's matcher, B's channel for A is made) or refuses (REFUSE).
 * On GRANT the pair may take the ring; A's first MARKER{0} on c goes
 * right before its first ring record.
 *
 * Why MPI, on a private communicator, and not the RDMA channel: the
 * handshake happens once per pair, before any channel exists; a nonblocking
 * PMPI send never waits for the peer, and MPI keeps the messages until the
 * peer looks.  Both sides look at wrapper entries only (every
 * HB_CTRL_EVERY-th), never inside the progress hook: a grant cancels and
 * re-posts receives, which must not happen inside MPI.  A silent peer
 * leaves the pair on MPI: nothing ever waits for an answer.  The same
 * communicator carries the revokes (p2p_revoke.c). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/host.h"
#include "p2p_int.h"
#include "p2p_policy.h"

#define HB_CTRL_EVERY                                                          \
    16 /* wrapper entries per look at the handshake
                            (1 under HOTBUF_TEST_P2P_ASK: grants early) */
#define HB_CTRL_TAG 7
#define HB_ASK_BACKOFF 1024 /* sends on a refused pair before asking again */

/* A send in flight: its buffer stays where MPI was given it until MPI is
 * done with it (MPI may read it at any later progress, as UCX does while
 * an endpoint connects), so each has its own allocation: an array of
 * them moved that buffer at every realloc and at every reap that filled
 * a hole, and the next message overwrote a slot whose send was still
 * pending (tests/mpi/preload/late_isend.c). */
struct ctrl_out {
    MPI_Request req;
    struct hb_ctrl msg;
};

static struct {
    int on; /* the handshake communicator exists (every rank alike) */
    struct ctrl_out **out; /* the array holds pointers: it may move */
    int nout, capout;
    int size;        /* of p2p.ctrl */
    uint32_t *sent;  /* [size]: handshake messages sent to each rank */
    uint32_t *recvd; /* [size]: and received from each */
} g;

static uint64_t make_nonce(const struct hb_ctx *ctx)
{
    uint64_t n = 0;
    if (ctx->rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        n = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^
            ((uint64_t)getpid() << 32);
        n |= 1;
    }
    PMPI_Bcast(&n, 1, MPI_UINT64_T, 0, ctx->comm);
    return n;
}

/* Collective over ctx->comm when HOTBUF_P2P_RING is set (every rank
 * alike, whether its own RDMA came up or not). */
int hb_p2p_grant_start(const struct hb_ctx *ctx)
{
    int *ub = NULL, flag = 0;
    memset(&g, 0, sizeof(g));
    if (PMPI_Comm_dup(ctx->comm, &p2p.ctrl) != MPI_SUCCESS ||
        PMPI_Comm_dup(MPI_COMM_SELF, &p2p.self) != MPI_SUCCESS)
        return -1;
    /* ring messages handed out by a matched probe are received on
     * p2p.self: a truncation must come back to be raised on the
     * application's communicator (p2p_probe.c) */
    PMPI_Comm_set_errhandler(p2p.self, MPI_ERRORS_RETURN);
    PMPI_Comm_size(p2p.ctrl, &g.size);
    g.sent = calloc((size_t)g.size, sizeof(*g.sent));
    g.recvd = calloc((size_t)g.size, sizeof(*g.recvd));
    p2p.closes_to = calloc((size_t)g.size, sizeof(*p2p.closes_to));
    p2p.closes_from = calloc((size_t)g.size, sizeof(*p2p.closes_from));
    p2p.nonce = make_nonce(ctx);
    /* every CLOSE sends this one (p2p_comm.c): set once, never written
     * while a send of it is under way */
    p2p.close_msg = (struct hb_inband){p2p.nonce, HB_INBAND_CLOSE, 0};
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    p2p.tstar = flag && ub ? *ub : 32767;
    g.on = 1;
    return 0;
}

/* Handshake messages nobody looked at (a REQ or an answer that came
 * after the last look; a REFUSE for a communicator freed meanwhile) are
 * received and dropped: left in MPI, they are the application's business
 * at MPI_Finalize (UCX prints "unexpected tag-receive descriptor ... was
 * not matched").  Collective: every rank tells every other how many it
 * sent.  Without the counts (out of memory), nothing is drained. */
static void drain_unread(void)
{
    uint32_t *owed =
        g.sent && g.recvd ? malloc((size_t)g.size * sizeof(*owed)) : NULL;
    int ok = owed != NULL, all = 0;
    struct hb_ctrl m;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, p2p.ctrl);
    if (all)
        PMPI_Alltoall(g.sent, 1, MPI_UINT32_T, owed, 1, MPI_UINT32_T, p2p.ctrl);
    for (int w = 0; all && w < g.size; w++)
        for (uint32_t i = g.recvd[w]; i < owed[w]; i++)
            PMPI_Recv(&m, (int)sizeof(m), MPI_BYTE, w, HB_CTRL_TAG, p2p.ctrl,
                      MPI_STATUS_IGNORE);
    free(owed);
}

void hb_p2p_grant_stop(void)
{
    for (int i = 0; i < g.nout; i++) {
        PMPI_Wait(&g.out[i]->req, MPI_STATUS_IGNORE);
        free(g.out[i]);
    }
    if (g.on)
        drain_unread();
    free(g.sent);
    free(g.recvd);
    free(g.out);
    for (uint32_t i = 0; i < p2p.ntxs; i++)
        free(p2p.txs[i]);
    free(p2p.txs);
    free(p2p.cids);
    p2p.txs = NULL;
    p2p.cids = NULL;
    p2p.ntxs = p2p.ncids = 0;
    if (g.on) {
        PMPI_Comm_free(&p2p.ctrl);
        PMPI_Comm_free(&p2p.self);
    }
    g.on = 0;
}

static void reap(void)
{
    for (int i = 0; i < g.nout;) {
        int done = 0;
        PMPI_Test(&g.out[i]->req, &done, MPI_STATUS_IGNORE);
        if (done) {
            free(g.out[i]);
            g.out[i] = g.out[--g.nout];
        } else
            i++;
    }
}

/* Room for one more send in flight; the array is grown after the send
 * is posted: a progress hook run inside PMPI_Isend may send too. */
static int out_room(void)
{
    if (g.nout < g.capout)
        return 0;
    int cap = g.capout ? 2 * g.capout : 8;
    struct ctrl_out **v = realloc(g.out, (size_t)cap * sizeof(*v));
    if (!v)
        return -1;
    g.out = v;
    g.capout = cap;
    return 0;
}

int hb_p2p_ctrl_send(const struct hb_ctrl *m, int world)
{
    struct ctrl_out *o;
    if (!g.on || !(o = malloc(sizeof(*o))))
        return -1; /* the peer never hears: the pair stays on MPI */
    o->msg = *m;
    if (PMPI_Isend(&o->msg, (int)sizeof(o->msg), MPI_BYTE, world, HB_CTRL_TAG,
                   p2p.ctrl, &o->req) != MPI_SUCCESS) {
        free(o);
        return -1;
    }
    if (out_room()) { /* posted: it goes, but nowhere to keep it */
        PMPI_Wait(&o->req, MPI_STATUS_IGNORE);
        free(o);
    } else
        g.out[g.nout++] = o;
    if (g.sent)
        g.sent[world]++;
    return 0;
}

/* ---- the sender's side -------------------------------------------------- */

struct p2p_txpair *hb_p2p_txpair(struct p2p_comm *c, int dest)
{
    if (dest < 0 || dest >= c->size || dest == c->rank)
        return NULL;
    if (c->tx && c->tx[dest])
        return c->tx[dest];
    if (hb_p2p_comm_worlds(c) ||
        (!c->tx && !(c->tx = calloc((size_t)c->size, sizeof(*c->tx)))))
        return NULL;
    struct p2p_txpair **v =
        realloc(p2p.txs, (size_t)(p2p.ntxs + 1) * sizeof(*v));
    struct p2p_txpair *tp = calloc(1, sizeof(*tp));
    if (!v || !tp) {
        free(tp);
        if (v)
            p2p.txs = v;
        return NULL;
    }
    p2p.txs = v;
    hb_pp_init(&tp->pp);
    tp->c = c;
    tp->dest = dest;
    tp->world = c->world[dest];
    tp->token = p2p.ntxs;
    p2p.txs[p2p.ntxs++] = tp;
    c->tx[dest] = tp;
    return tp;
}

void hb_p2p_ask(struct p2p_txpair *tp, uint32_t uses, uint32_t bytes)
{
    struct hb_ctrl m = {.kind = HB_CTRL_REQ,
                        .token = tp->token,
                        .host = hb_host_hash(),
                        .uses = uses,
                        .bytes = bytes,
                        .sends = tp->sends > UINT32_MAX ? UINT32_MAX
                                                        : (uint32_t)tp->sends};
    if (hb_p2p_name_claim(tp->c->comm, &m.claim) != HB_P2P_NAMED) {
        tp->state = TX_REFUSED;
        tp->retry_at = UINT64_MAX; /* no name, never */
        p2p.stats.pairs_refused[HB_P2P_REFUSE_UNNAMED]++;
        return;
    }
    hb_p2p_chan_ack_area(tp->world, &m.ack_addr, &m.ack_rkey);
    if (!m.ack_rkey) {
        tp->state = TX_REFUSED;
        tp->retry_at = UINT64_MAX;
        p2p.stats.pairs_refused[HB_P2P_REFUSE_BUDGET]++;
        return;
    }
    tp->state = TX_ASKED;
    p2p.stats.pairs_asked++;
    hb_p2p_ctrl_send(&m, tp->world);
}

/* A GRANT that came after the application freed c: B holds c until our
 * CLOSE, and none comes (none was due at the free, or it went already),
 * so we say so.  Tokens are never reused: a freed pair's is NULL. */
static int gone(const struct hb_ctrl *m, int world)
{
    struct p2p_txpair *tp = m->token < p2p.ntxs ? p2p.txs[m->token] : NULL;
    if (m->token >= p2p.ntxs || (tp && !tp->c->tx_closed))
        return 0;
    if (tp)
        tp->state = TX_REFUSED, tp->retry_at = UINT64_MAX;
    struct hb_ctrl r = {.kind = HB_CTRL_GONE, .token = m->token};
    hb_p2p_ctrl_send(&r, world);
    p2p.stats.gones_out++;
    return 1;
}

/* GRANT: the channel, then GRANTED (MARKER{0} waits for the first ring
 * record: p2p_pair.h says why). */
static void granted(const struct hb_ctrl *m, int world)
{
    struct p2p_txpair *tp = m->token < p2p.ntxs ? p2p.txs[m->token] : NULL;
    if (gone(m, world) || !tp || tp->state != TX_ASKED)
        return;
    tp->close_due = 1; /* B awaits our CLOSE, whatever comes of it here */
    if (hb_p2p_name_verify(tp->c->comm, &m->claim) != HB_P2P_NAMED ||
        hb_p2p_chan_tx(tp->world, m)) {
        tp->state = TX_REFUSED;
        tp->retry_at = UINT64_MAX;
        p2p.stats.pairs_refused[HB_P2P_REFUSE_CHANNEL]++;
        return; /* B holds a pair that never goes live: harmless */
    }
    tp->cid = m->cid;
    hb_pp_granted(&tp->pp);
    tp->state = TX_GRANTED;
    p2p.stats.pairs_live++;
}

static void refused(const struct hb_ctrl *m)
{
    struct p2p_txpair *tp = m->token < p2p.ntxs ? p2p.txs[m->token] : NULL;
    if (!tp || tp->state != TX_ASKED)
        return;
    tp->state = TX_REFUSED;
    tp->retry_at = tp->sends + HB_ASK_BACKOFF;
    if (m->why >= 0 && m->why < HB_P2P_NREFUSALS)
        p2p.stats.pairs_refused[m->why]++;
}

/* ---- the receiver's side ------------------------------------------------ */

/* The communicator of a claim: one hotbuf matches on already, else one
 * this process made and has not used for receiving yet. */
static struct p2p_comm *by_name(const struct hb_p2p_name_claim *claim)
{
    struct p2p_comm *c, *tmp;
    struct hb_p2p_name n;
    MPI_Comm comm;
    HASH_ITER(hh, p2p.comms, c, tmp)
    if (!c->free_deferred && hb_p2p_name_lookup(c->comm, &n) == HB_P2P_NAMED &&
        n.hash[0] == claim->hash[0] && n.hash[1] == claim->hash[1])
        return c;
    return hb_p2p_names_find(claim->hash, &comm) ? NULL : hb_p2p_comm_get(comm);
}

static int new_cid(struct p2p_comm *c)
{
    if (c->cid)
        return 0;
    uint32_t n = p2p.ncids ? p2p.ncids : 1; /* 0 means none */
    struct p2p_comm **v = realloc(p2p.cids, (size_t)(n + 1) * sizeof(*v));
    if (!v)
        return -1;
    v[0] = NULL;
    v[n] = c;
    p2p.cids = v;
    p2p.ncids = n + 1;
    c->cid = n;
    return 0;
}

/* The pair (A, c) at B, made on A's first request; -1 when it is live
 * (A asks again only after it answered a revoke) or out of memory.  A
 * revoked pair is granted again with its merge as it is: A's stamps and
 * rseq went on counting (p2p_revoke.c). */
static int new_rxpair(struct p2p_comm *c, int src, int world)
{
    if (!c->rx && !(c->rx = calloc((size_t)c->size, sizeof(*c->rx))))
        return -1;
    if (c->rx[src])
        return c->rx[src]->live || c->rx[src]->world != world ? -1 : 0;
    if (!(c->rx[src] = calloc(1, sizeof(*c->rx[src]))))
        return -1;
    hb_mg_init(&c->rx[src]->mg);
    c->rx[src]->world = world;
    return 0;
}

/* The policy (p2p_policy.h), from B's receive calls on c and A's counts
 * in the request; the test switch that makes every pair ask grants every
 * valid request too. */
static int worth_it(const struct p2p_comm *c, const struct hb_ctrl *m)
{
    uint64_t from_a = c->recvs_from ? c->recvs_from[m->claim.rank] : 0;
    struct hb_grant_case gc = {.pulled = c->state == COMM_PULLED,
                               .others = c->recv_calls - from_a,
                               .sends = m->sends,
                               .uses = m->uses,
                               .bytes = m->bytes,
                               .pull_ns = p2p.ctx->cfg->p2p_pull_ns};
    struct hb_grant_verdict v;
    if (p2p.ask_always)
        return 1;
    hb_p2p_grant_weigh(p2p.ctx->cost, &gc, &v);
    return v.grant;
}

/* Why B refuses A's request, or -1 to grant: the checks, the policy, then
 * pull. */
static int judge(const struct hb_ctrl *m, int world, struct p2p_comm **cp)
{
    struct p2p_comm *c = p2p.ring ? by_name(&m->claim) : NULL;
    *cp = c;
    if (!p2p.ring)
        return HB_P2P_REFUSE_NO_RING;
    if (m->host == hb_host_hash() && !p2p.ctx->cfg->intranode)
        return HB_P2P_REFUSE_INTRANODE; /* MPI's shared memory is faster */
    if (!c || c->state == COMM_OFF)
        return HB_P2P_REFUSE_UNKNOWN;
    if (hb_p2p_name_verify(c->comm, &m->claim) != HB_P2P_NAMED ||
        hb_p2p_comm_worlds(c) || m->claim.rank < 0 ||
        m->claim.rank >= c->size || c->world[m->claim.rank] != world)
        return HB_P2P_REFUSE_UNNAMED;
    if (!worth_it(c, m))
        return HB_P2P_REFUSE_NOT_WORTH;
    if (c->state != COMM_PULLED && hb_p2p_comm_pull(c))
        return HB_P2P_REFUSE_NO_PULL;
    if (new_cid(c) || new_rxpair(c, m->claim.rank, world))
        return HB_P2P_REFUSE_BUDGET;
    return -1;
}

/* No channel for a pair judged fine: a new pair goes again.  One granted
 * before stays, revoked: its merge may hold A's messages, and A, which
 * may have seen a GRANT, then owes a CLOSE at its free that must be
 * taken as hotbuf's and waited for.  Dropped, the pair's CLOSE went to
 * the application (tests/mpi/p2p_regrant.c: a wildcard receive got it). */
static void unjudge(struct p2p_comm *c, int src)
{
    struct p2p_rxpair *rp = c->rx[src];
    if (rp->grants || rp->mg.live || !hb_mg_empty(&rp->mg))
        return;
    free(rp);
    c->rx[src] = NULL;
}

static void asked(const struct hb_ctrl *m, int world)
{
    struct hb_ctrl r = {.kind = HB_CTRL_REFUSE, .token = m->token};
    struct p2p_comm *c;
    int why = judge(m, world, &c);
    if (why < 0 && hb_p2p_chan_rx(world, m->ack_addr, m->ack_rkey, &r)) {
        unjudge(c, m->claim.rank);
        why = HB_P2P_REFUSE_BUDGET;
    }
    if (why >= 0) {
        r.why = why;
        p2p.stats.grants_refused[why]++;
    } else {
        struct p2p_rxpair *rp = c->rx[m->claim.rank];
        rp->live = 1;
        rp->grants++;
        rp->revoke_due = 0;
        rp->token = m->token;
        hb_p2p_chan_rx_granted(world);
        r.kind = HB_CTRL_GRANT;
        r.cid = c->cid;
        hb_p2p_name_claim(c->comm, &r.claim);
        p2p.stats.grants++;
    }
    hb_p2p_ctrl_send(&r, world);
}

void hb_p2p_ctrl_sync_ack(int world, uint32_t id)
{
    struct hb_ctrl m = {.kind = HB_CTRL_SYNC_ACK, .token = id};
    if (hb_p2p_ctrl_send(&m, world) == 0) /* else the sender never hears */
        p2p.stats.sync_acks_mpi++;
}

static void poll_ctrl(void);

void hb_p2p_grant_poll(void)
{
    if (!g.on || p2p.busy ||
        (++p2p.ctrl_calls % HB_CTRL_EVERY && !p2p.ask_always))
        return;
    poll_ctrl();
    hb_p2p_sync_check();
}

void hb_p2p_grant_poll_now(void)
{
    if (g.on && !p2p.busy)
        poll_ctrl();
}

static void poll_ctrl(void)
{
    int flag = 0;
    MPI_Status st;
    struct hb_ctrl m;
    p2p.busy = 1;
    if (g.nout)
        reap();
    while (PMPI_Iprobe(MPI_ANY_SOURCE, HB_CTRL_TAG, p2p.ctrl, &flag, &st) ==
               MPI_SUCCESS &&
           flag) {
        PMPI_Recv(&m, (int)sizeof(m), MPI_BYTE, st.MPI_SOURCE, HB_CTRL_TAG,
                  p2p.ctrl, MPI_STATUS_IGNORE);
        if (g.recvd)
            g.recvd[st.MPI_SOURCE]++;
        switch (m.kind) {
        case HB_CTRL_REQ: asked(&m, st.MPI_SOURCE); break;
        case HB_CTRL_GRANT: granted(&m, st.MPI_SOURCE); break;
        case HB_CTRL_REFUSE: refused(&m); break;
        case HB_CTRL_REVOKE: hb_p2p_revoke_in(&m, st.MPI_SOURCE); break;
        case HB_CTRL_REVOKED: hb_p2p_revoked_in(&m, st.MPI_SOURCE); break;
        case HB_CTRL_SYNC_ACK: hb_p2p_sync_acked(m.token); break;
        case HB_CTRL_GONE: hb_p2p_comm_gone_in(st.MPI_SOURCE, m.token); break;
        }
    }
    if (p2p.ring)
        hb_p2p_revoke_poll();
    p2p.busy = 0;
}
