/* The communicator map: which communicators hotbuf matches on (pull),
 * entry into pull with the migration of MPI's pending receives, claiming
 * MPI's messages, and the end of a communicator (P2P-DESIGN.md §5.7). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/progress.h"
#include "util/clock.h"
#include "p2p_int.h"

static uint64_t comm_key(MPI_Comm c)
{
    uint64_t k = 0;
    memcpy(&k, &c, sizeof(c) < sizeof(k) ? sizeof(c) : sizeof(k));
    return k;
}

static struct p2p_comm *find(MPI_Comm comm)
{
    uint64_t key = comm_key(comm);
    struct p2p_comm *c;
    HASH_FIND(hh, p2p.comms, &key, sizeof(key), c);
    return c;
}

static void count_off(int reason)
{
    p2p.stats.comms_seen++;
    p2p.stats.comms_off[reason]++;
}

/* Intercommunicators and communicators that span several worlds stay on
 * MPI (P2P-DESIGN.md §5.12; core/comm.h), and so do single-rank ones: no
 * peer to reroute, and MPICH's self path (ch4_self.c) completes a send to
 * self inside the receive call without counting it as progress, so a
 * blocking Ssend to self whose match hotbuf makes from inside MPI's
 * progress would wait forever in MPID_Progress_wait. */
static int classify(MPI_Comm comm)
{
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        return HB_P2P_OFF_INTERCOMM;
    PMPI_Comm_size(comm, &size);
    if (size == 1)
        return HB_P2P_OFF_SINGLE;
    if (!hb_comm_one_world(comm))
        return HB_P2P_OFF_WORLDS;
    return -1;
}

static struct p2p_comm *add(MPI_Comm comm)
{
    struct p2p_comm *c = calloc(1, sizeof(*c));
    int reason = c ? classify(comm) : HB_P2P_OFF_MEMORY;
    if (reason >= 0) {
        count_off(reason);
        if (!c)
            return NULL;
        c->state = COMM_OFF;
    } else {
        p2p.stats.comms_seen++;
        c->state = COMM_NORMAL;
    }
    c->key = comm_key(comm);
    c->comm = comm;
    PMPI_Comm_size(comm, &c->size);
    PMPI_Comm_rank(comm, &c->rank);
    hb_list_init(&c->link);
    HASH_ADD(hh, p2p.comms, key, sizeof(c->key), c);
    return c;
}

struct p2p_comm *hb_p2p_comm_get(MPI_Comm comm)
{
    if (!p2p.pull_ok || comm == MPI_COMM_NULL)
        return NULL;
    struct p2p_comm *c = find(comm);
    return c ? c : add(comm);
}

static void free_items(struct hb_list *q)
{
    while (!hb_list_empty(q)) {
        struct hb_list *l = hb_list_tail(q);
        hb_list_del(l);
        hb_p2p_msg_free(hb_container_of(l, struct p2p_msg, g.link));
    }
}

/* ---- closing: no duplicate left in MPI after a free ----------------------
 * A record the receiver took from its CQ may still come again by MPI, as
 * a RESEND on c, when the sender's completion of it failed (an
 * acknowledgement lost until the retries ran out: seconds on a real NIC).
 * Freed in MPI meanwhile, c's context id goes to the next communicator
 * made, and MPICH hands that RESEND to whichever receive or probe there
 * matches it (tests/mpi/p2p_close.c; Open MPI's ob1 holds it back, its
 * sequence number being c's, but leaks it).  So a sender that B granted
 * on c sends B a CLOSE on c when the application frees c: its last
 * message there, after every RESEND (a free waits for its records'
 * completions, and MPI keeps one sender's order).
 * B frees c in MPI only once the CLOSE of every sender it granted has
 * been claimed, and the duplicates before it with it (the model:
 * tests/model/p2p_pull.pml, freed_fault; NO_CLOSE is the old free).
 * Granted, not "wrote a record": then every CLOSE sent finds its
 * receiver still holding c (a sender that saw the GRANT sends one).  A
 * GRANT that reaches a sender after its free is answered GONE
 * (p2p_grant.c): without it B held c until MPI_Finalize, about one
 * communicator a rank every seed of p2p_random, and seeds slowed as they
 * piled up (the model: no_gone, gone_closes).  MPI_Finalize drains the
 * CLOSEs by counts (hb_p2p_comm_drain_closes).
 * A rank is sender and receiver on c alike, so it sends its CLOSEs at the
 * application's free, not at the real one, which may wait for the
 * peer's: waiting first, two ranks would each hold c for the other. */

/* CLOSE sends that completed, forgotten; all of them, with wait. */
static void reap_closes(int wait)
{
    int n = 0;
    for (int i = 0; i < p2p.ncloses; i++) {
        int done = 1;
        if (wait)
            PMPI_Wait(&p2p.closes[i], MPI_STATUS_IGNORE);
        else
            PMPI_Test(&p2p.closes[i], &done, MPI_STATUS_IGNORE);
        if (!done)
            p2p.closes[n++] = p2p.closes[i];
    }
    p2p.ncloses = n;
}

static void send_close(struct p2p_comm *c, int dest)
{
    reap_closes(0);
    if (p2p.ncloses == p2p.capcloses) {
        int cap = p2p.capcloses ? 2 * p2p.capcloses : 8;
        MPI_Request *v = realloc(p2p.closes, (size_t)cap * sizeof(*v));
        if (!v)
            abort(); /* a duplicate would go to the application */
        p2p.closes = v;
        p2p.capcloses = cap;
    }
    PMPI_Isend(&p2p.close_msg, sizeof(p2p.close_msg), MPI_BYTE, dest, p2p.tstar,
               c->comm, &p2p.closes[p2p.ncloses++]);
    p2p.stats.closes_out++;
    if (p2p.closes_to)
        p2p.closes_to[c->tx[dest]->world]++;
}

/* The sender's half of a free, once no rendezvous send on c may still be
 * resent (sends_held): a CLOSE to each receiver that granted us on c, and
 * kept Ssend records lose their pair (their receiver sends a lost
 * SYNC_ACK again by MPI instead, p2p_sync.c), so nothing of ours follows
 * the CLOSE.  0 while it must wait. */
static int close_tx(struct p2p_comm *c)
{
    if (c->tx_closed || c->sends_held)
        return c->tx_closed;
    c->tx_closed = 1;
    for (int i = 0; c->tx && i < c->size; i++)
        if (c->tx[i]) {
            if (c->tx[i]->close_due)
                send_close(c, i);
            hb_p2p_sync_pair_gone(c->tx[i]);
        }
    return 1;
}

/* Whether A's CLOSE is still to come on this pair.  A sends one if it saw
 * a GRANT before its free, and a GONE for every GRANT that came after it:
 * so while no CLOSE came, one is on its way unless every GRANT has its
 * GONE.  Not "a GONE came": A may have seen an earlier GRANT on c (the
 * pair revoked and asked again), and the GONE, on the private
 * communicator, may pass the CLOSE and RESENDs A sent on c before it. */
static int close_awaited(const struct p2p_rxpair *rp)
{
    return rp && !rp->closed && rp->gones < rp->grants;
}

/* Senders granted on c whose CLOSE has not come. */
static int awaited_closes(const struct p2p_comm *c)
{
    int n = 0;
    for (int i = 0; c->rx && i < c->size; i++)
        n += close_awaited(c->rx[i]);
    return n;
}

void hb_p2p_comm_gone_in(int world, uint32_t token)
{
    p2p.stats.gones_in++;
    for (uint32_t i = 1; i < p2p.ncids; i++) {
        struct p2p_comm *c = p2p.cids[i];
        for (int j = 0; c && c->rx && j < c->size; j++)
            if (c->rx[j] && c->rx[j]->world == world &&
                c->rx[j]->token == token) {
                c->rx[j]->gones++;
                return;
            }
    }
}

uint64_t hb_p2p_comm_held(void)
{
    struct p2p_comm *c, *tmp;
    uint64_t n = 0;
    HASH_ITER(hh, p2p.comms, c, tmp)
    n += c->free_deferred && awaited_closes(c) > 0;
    return n;
}

/* Part 2's state on c: its pairs both ways, its cid.  A live pair is
 * revoked first: its sender's channel is freed only once every pair on
 * it was revoked and answered (p2p_revoke.c).  closing: the application
 * frees c (not MPI_Finalize, nor a handle MPI reused unseen), with no
 * rendezvous send held: our CLOSEs go now if they did not yet. */
static void drop_pairs(struct p2p_comm *c, int closing)
{
    if (closing)
        close_tx(c);
    for (int i = 0; c->rx && i < c->size; i++)
        if (c->rx[i]) {
            hb_p2p_revoke(c, i);
            free_items(&c->rx[i]->mg.pulled);
            free_items(&c->rx[i]->mg.ring);
            free(c->rx[i]);
        }
    for (int i = 0; c->tx && i < c->size; i++)
        if (c->tx[i]) {
            hb_p2p_sync_pair_gone(c->tx[i]);
            p2p.txs[c->tx[i]->token] = NULL;
            free(c->tx[i]);
        }
    if (c->cid)
        p2p.cids[c->cid] = NULL;
    free(c->rx);
    free(c->tx);
    free(c->world);
    free(c->recvs_from);
}

/* Drops everything hotbuf holds for c (its messages were claimed from a
 * communicator that is going away: MPI would drop them too). */
static void drop(struct p2p_comm *c, int closing)
{
    /* drop_pairs' CLOSEs and REVOKEs are MPI calls, which may run the
     * progress hook: its poll must not claim on c while c's pairs are
     * being freed */
    int was_busy = p2p.busy;
    p2p.busy = 1;
    drop_pairs(c, closing);
    hb_p2p_psend_drop_comm(c->comm);
    if (c->state == COMM_PULLED) {
        struct hb_pm_msg *pm;
        while ((pm = hb_pm_first_unexpected(&c->m))) {
            hb_pm_take(&c->m, pm);
            p2p.n_unexp--;
            hb_p2p_msg_free(hb_container_of(pm, struct p2p_msg, n));
        }
        hb_pm_fini(&c->m);
        hb_list_del(&c->link);
    }
    struct p2p_req *r, *tmp;
    HASH_ITER(hh, p2p.reqs, r, tmp)
    if (r->c == c)
        r->c = NULL; /* MPI's own receives and idle persistent ones */
    HASH_DEL(p2p.comms, c);
    free(c);
    hb_p2p_update_engaged();
    p2p.busy = was_busy;
}

static int by_seq(const void *a, const void *b)
{
    const struct p2p_req *x = *(struct p2p_req *const *)a,
                         *y = *(struct p2p_req *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One cancelled MPI receive moves into pull once its cancel is settled;
 * if MPI had matched it already, it stays MPI's.  The handle stays
 * allocated either way (a cancelled receive is consumed when the
 * application completes it). */
static void migrate_one(struct p2p_comm *c, struct p2p_req *r)
{
    int flag = 0, cancelled = 0;
    MPI_Status st;
    while (PMPI_Request_get_status(r->handle, &flag, &st) == MPI_SUCCESS &&
           !flag)
        ;
    PMPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) {
        p2p.stats.migrate_matched++;
        return;
    }
    p2p.stats.migrated++;
    r->hijacked = 1;
    hb_p2p_req_post(c, r);
}

/* MPI's receive on c that may still take a message.  One the application
 * cancelled is done or matched already (and cancelling it again is not
 * safe: Open MPI's ob1 crashes on a second cancel of a completed receive). */
static int migratable(const struct p2p_req *r, const struct p2p_comm *c)
{
    return r->c == c && r->state == RQ_PMPI && !r->cancelled && !r->whole;
}

/* c cannot enter pull now: an Isendrecv of MPI's is pending on it (its
 * receive cannot be migrated, see track_whole in p2p_recv.c). */
static int pull_blocked(const struct p2p_comm *c)
{
    struct p2p_req *r, *tmp;
    HASH_ITER(hh, p2p.reqs, r, tmp)
    if (r->c == c && r->state == RQ_PMPI && r->whole)
        return 1;
    return 0;
}

/* MPI's pending receives on c, in posting order: those older than every
 * receive hotbuf will post, so they go first into the matcher.
 *
 * Cancelled newest first: a message MPI matches meanwhile (waiting for a
 * receive MPI had matched, its data still coming, runs MPI's progress)
 * then goes to the oldest matching receive MPI still holds, as without
 * hotbuf.  Oldest first would leave younger
 * receives in MPI while an older one already waits in hotbuf's matcher,
 * and a younger one would take the older one's message (a hang or a
 * wrong match; tests/model/p2p_pull.pml, variant migrate_forward). */
static void migrate(struct p2p_comm *c)
{
    struct p2p_req *r, *tmp, **v;
    size_t n = 0, i = 0;
    HASH_ITER(hh, p2p.reqs, r, tmp)
    n += migratable(r, c);
    if (!n || !(v = malloc(n * sizeof(*v))))
        return;
    HASH_ITER(hh, p2p.reqs, r, tmp)
    if (migratable(r, c))
        v[i++] = r;
    qsort(v, n, sizeof(*v), by_seq);
    for (i = n; i-- > 0;)
        PMPI_Cancel(&v[i]->handle);
    for (i = 0; i < n; i++)
        migrate_one(c, v[i]);
    free(v);
}

static int enter_pull(struct p2p_comm *c)
{
    int size = 0, off = -1;
    PMPI_Comm_size(c->comm, &size);
    if (!hb_p2p_hook_ok())
        off = HB_P2P_OFF_NO_HOOK;
    else if (hb_pm_init(&c->m, size))
        off = HB_P2P_OFF_MEMORY;
    if (off >= 0) {
        c->state = COMM_OFF;
        p2p.stats.comms_seen--; /* counted again, with its reason */
        count_off(off);
        return -1;
    }
    c->state = COMM_PULLED;
    hb_list_add_head(&p2p.pulled, &c->link);
    p2p.stats.comms_pulled++;
    hb_p2p_update_engaged();
    migrate(c);
    return 0;
}

int hb_p2p_comm_pull(struct p2p_comm *c)
{
    if (c->state == COMM_PULLED)
        return 0;
    return pull_blocked(c) ? -1 : enter_pull(c);
}

int hb_p2p_comm_worlds(struct p2p_comm *c)
{
    MPI_Group g, w;
    int *ranks;
    if (c->world)
        return 0;
    if (!(c->world = malloc((size_t)c->size * sizeof(int))) ||
        !(ranks = malloc((size_t)c->size * sizeof(int)))) {
        free(c->world);
        c->world = NULL;
        return -1;
    }
    for (int i = 0; i < c->size; i++)
        ranks[i] = i;
    PMPI_Comm_group(c->comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &w);
    PMPI_Group_translate_ranks(g, c->size, ranks, w, c->world);
    PMPI_Group_free(&g);
    PMPI_Group_free(&w);
    free(ranks);
    return 0;
}

/* The policy's count of receives naming each source (p2p_policy.h), kept
 * only with the ring on (the array made at the first one; without it,
 * none): with it off every receive would pay for it. */
static void count_from(struct p2p_comm *c, int source)
{
    if (!p2p.ring || source < 0 || source >= c->size)
        return;
    if (!c->recvs_from)
        c->recvs_from = calloc((size_t)c->size, sizeof(*c->recvs_from));
    if (c->recvs_from)
        c->recvs_from[source]++;
}

struct p2p_comm *hb_p2p_comm_recv_call(MPI_Comm comm, int source)
{
    struct p2p_comm *c = hb_p2p_comm_get(comm);
    if (!c || c->state == COMM_OFF)
        return NULL;
    if (c->state == COMM_PULLED)
        return c;
    uint64_t due = p2p.mode == P2P_MODE_AFTER ? p2p.after_n : 0;
    c->recv_calls++; /* after:N, and the grant policy */
    count_from(c, source);
    hb_p2p_grant_poll(); /* a grant may pull c right here */
    if (c->state == COMM_PULLED)
        return c;
    if (p2p.mode == P2P_MODE_AUTO || c->recv_calls <= due || pull_blocked(c) ||
        enter_pull(c))
        return NULL;
    return c;
}

struct p2p_msg *hb_p2p_msg_mpi(MPI_Message msg, const MPI_Status *st)
{
    struct p2p_msg *m = calloc(1, sizeof(*m));
    if (!m)
        abort(); /* a claimed message cannot be given back to MPI */
    m->kind = MSG_MPI;
    m->msg = msg;
    m->st = *st;
    /* MPICH's Improbe leaves the cancelled bit as it found it */
    PMPI_Status_set_cancelled(&m->st, 0);
    m->n.source = st->MPI_SOURCE;
    m->n.tag = st->MPI_TAG;
    m->g.kind = HB_MG_MPI;
    return m;
}

int hb_p2p_match(struct p2p_comm *c, struct p2p_msg *m)
{
    struct hb_pm_recv *pr = hb_pm_arrive(&c->m, &m->n);
    if (pr) {
        p2p.n_posted--;
        p2p.stats.matched_posted++;
        hb_p2p_req_deliver(hb_container_of(pr, struct p2p_req, n), m);
        return 1;
    }
    if (++p2p.n_unexp > p2p.stats.unexp_hwm)
        p2p.stats.unexp_hwm = p2p.n_unexp;
    return 0;
}

/* A claimed message: a switched sender's goes through its merge (its
 * T* messages are hotbuf's own), any other straight to matching. */
static void arrive(struct p2p_comm *c, MPI_Message msg, const MPI_Status *st)
{
    int bytes = 0;
    struct p2p_rxpair *rp = c->rx ? c->rx[st->MPI_SOURCE] : NULL;
    PMPI_Get_count(st, MPI_BYTE, &bytes);
    p2p.stats.claimed++;
    p2p.stats.claimed_bytes += bytes > 0 ? (uint64_t)bytes : 0;
    if (rp && st->MPI_TAG == p2p.tstar) {
        hb_p2p_inband(c, rp, msg, st);
        return;
    }
    struct p2p_msg *m = hb_p2p_msg_mpi(msg, st);
    if (rp) {
        hb_mg_pulled(&rp->mg, &m->g);
        hb_p2p_release(c, rp);
        return;
    }
    hb_p2p_match(c, m);
}

/* Messages come out of Improbe in each sender's order; a nested claim
 * (the progress hook inside MPI, running while Improbe runs) could
 * overtake one on its way out, hence the busy flag. */
void hb_p2p_claim_locked(struct p2p_comm *c)
{
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    while (PMPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->comm, &flag, &msg,
                        &st) == MPI_SUCCESS &&
           flag)
        arrive(c, msg, &st);
}

void hb_p2p_claim(struct p2p_comm *c)
{
    if (p2p.busy)
        return;
    p2p.busy = 1;
    hb_p2p_chan_drain();
    hb_p2p_claim_locked(c);
    p2p.busy = 0;
}

/* The real free waits for a wrapper entry (never inside MPI's progress,
 * where the hook may run us). */
void hb_p2p_comm_release_pending(struct p2p_comm *c)
{
    c->pending--;
}

void hb_p2p_flush_frees(void)
{
    struct p2p_comm *c, *tmp;
    if (p2p.busy)
        return;
    HASH_ITER(hh, p2p.comms, c, tmp)
    {
        if (c->free_deferred && close_tx(c) && !c->pending && !c->persistent &&
            !awaited_closes(c)) {
            MPI_Comm comm = c->comm;
            drop(c, 1);
            PMPI_Comm_free(&comm);
        }
    }
}

void hb_p2p_comm_created(MPI_Comm comm)
{
    struct p2p_comm *c;
    if (comm == MPI_COMM_NULL)
        return;
    if (!p2p.pull_ok) {
        count_off(p2p.off_reason);
        return;
    }
    if ((c = find(comm)) && !c->free_deferred)
        drop(c, 0); /* a handle MPI reused after a free we did not see */
    add(comm);
}

int hb_p2p_comm_free(MPI_Comm *comm)
{
    HB_P2P_ROUTE(comm_free);
    hb_p2p_flush_frees(); /* earlier frees whose CLOSEs came */
    struct p2p_comm *c = comm ? find(*comm) : NULL;
    if (c && c->free_deferred)
        c = NULL; /* cannot happen: the application's handle is NULL */
    if (c)
        close_tx(c);
    /* A persistent receive may be started after the free: c stays, or
     * the messages hotbuf claimed on c for it would be dropped with c
     * (p2p_pull's persistent_freed hung so at 4 ranks). */
    if (c && (c->pending || c->persistent || awaited_closes(c))) {
        c->free_deferred = 1;
        p2p.stats.frees_deferred += c->pending > 0 || c->persistent > 0;
        p2p.stats.frees_closing += awaited_closes(c) > 0;
        *comm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    if (c)
        drop(c, 1);
    return PMPI_Comm_free(comm);
}

int hb_p2p_comm_disconnect(MPI_Comm *comm)
{
    HB_P2P_ROUTE(comm_disconnect);
    struct p2p_comm *c = comm ? find(*comm) : NULL;
    /* disconnect waits for pending traffic, the peers' CLOSEs too (ours
     * sent first) */
    while (c && !close_tx(c))
        hb_progress_yield(NULL);
    while (c && (c->pending || awaited_closes(c)))
        hb_progress_yield(NULL);
    if (c)
        drop(c, 1);
    return PMPI_Comm_disconnect(comm);
}

/* At MPI_Finalize no CLOSE is sent (no communicator is made after it),
 * and those sent are claimed: left in MPI, UCX prints "unexpected
 * tag-receive descriptor ... was not matched".  Every rank tells every
 * other how many it sent; each is on a communicator its receiver still
 * holds (it granted the sender there), so claiming finds it.  Bounded all
 * the same: hotbuf does not hang a job in MPI_Finalize. */
#define HB_CLOSE_DRAIN_S 10.0
void hb_p2p_comm_drain_closes(void)
{
    int size = 0, ok, all = 0, w = 0;
    PMPI_Comm_size(p2p.ctrl, &size);
    uint32_t *owed = malloc((size_t)size * sizeof(*owed));
    ok = owed && p2p.closes_to && p2p.closes_from;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, p2p.ctrl);
    if (all)
        PMPI_Alltoall(p2p.closes_to, 1, MPI_UINT32_T, owed, 1, MPI_UINT32_T,
                      p2p.ctrl);
    double until = hb_clock_s() + HB_CLOSE_DRAIN_S;
    while (all && w < size) {
        if (p2p.closes_from[w] >= owed[w]) {
            w++;
        } else if (hb_clock_s() > until) {
            fprintf(stderr,
                    "hotbuf: rank %d: MPI_Finalize: %u CLOSE message(s) of "
                    "rank %d not found; left in MPI\n",
                    p2p.ctx->rank, owed[w] - p2p.closes_from[w], w);
            break;
        } else {
            hb_p2p_poll(); /* claims on every pulled communicator */
            sched_yield();
        }
    }
    free(owed);
}

void hb_p2p_comm_free_all(void)
{
    struct p2p_comm *c, *tmp;
    HASH_ITER(hh, p2p.comms, c, tmp)
    {
        drop(c, 0);
    }
    reap_closes(1);
    free(p2p.closes);
    free(p2p.closes_to);
    free(p2p.closes_from);
    p2p.closes = NULL;
    p2p.closes_to = p2p.closes_from = NULL;
    p2p.ncloses = p2p.capcloses = 0;
}

/* With the ring on, T* = MPI's own MPI_TAG_UB carries the markers: the
 * application sees one less (also under the route test, which checks that
 * the queries subtract). */
int hb_p2p_tag_ub_hidden(void)
{
    return hb_p2p_route.on || p2p.tstar != 0;
}
