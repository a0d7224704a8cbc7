/* Synchronous sends on the ring (issue 13 item 3; SYNC_ACK in
 * tests/model/p2p_pull.pml).
 *
 * The ring record of an MPI_Ssend, an MPI_Issend or a Start of an
 * MPI_Ssend_init is a DATA_SYNC record carrying a sync id.  The send
 * completes when the receiver's hotbuf has matched the record (a receive
 * took it, or a matched probe handed it out) and said so with a SYNC_ACK
 * naming that id.  The receiver writes the SYNC_ACK as a zero-length RDMA
 * write with immediate into the sender's credit word, right where the
 * match happens, which may be inside MPI (the progress hook): no MPI call
 * is needed there.  Once the receiver has seen the pair fail (a RESEND
 * came, or its write could not be posted), SYNC_ACKs go by MPI on hotbuf's
 * private communicator instead.
 *
 * The sender keeps every DATA_SYNC record until its SYNC_ACK.  When the
 * pair fails, a kept record may have been placed and matched and its
 * SYNC_ACK lost with the QP, so every kept record goes again by MPI, as a
 * RESEND, with the record that had no RC completion (the model's
 * a_recover; its NAIVE_RESEND variant is the run where a matched Ssend
 * never completes).  The receiver answers the duplicate of a record it
 * has matched with a new SYNC_ACK by MPI; a record it has not matched yet
 * is acknowledged at its match, as any.
 *
 * The fault path is per peer, not per live pair: a revoked pair (off the
 * ring, its region maybe freed) can still have kept records waiting, and
 * their SYNC_ACKs die with the QP as any.  A waiting sender looks at the
 * transport's state of the peer (a failure on the receiver's side reaches
 * it as the peer's REJ) and resends then.  The receiver needs no region
 * for it: a record taken unmatched was copied out of its slot, and the
 * SYNC_ACK goes into the sender's credit word (its staging area, never
 * freed) or by MPI.  So REVOKED need not wait for SYNC_ACKs, and does not.
 * Once the region is freed, SYNC_ACKs go by MPI (hb_p2p_chan_sync_ack),
 * which a waiting sender reads from the handshake (hb_p2p_sync_done).
 *
 * A sync send whose communicator is freed before its SYNC_ACK (MPI allows
 * that) cannot be resent after a fault: the pair is gone, and the
 * receiver, its communicator freed too, would not read a RESEND there.
 * Its record was placed (a record's write is waited for, and the one in
 * flight at the fault is resent while its pair exists), so only the
 * SYNC_ACK can be missing: the receiver keeps each SYNC_ACK it writes by
 * RDMA until a completion shows it delivered and sends the unconfirmed
 * ones again by MPI once that QP has failed (p2p_chan.c, ack_wait;
 * tests/mpi/p2p_issend_freed hung without it). */
#include <stdlib.h>

#include "core/progress.h"
#include "rdma/rdma.h"
#include "regcache/regcache.h"
#include "p2p_int.h"

/* ---- the sender's side ------------------------------------------------ */

static struct p2p_sync *find(uint32_t id)
{
    struct p2p_sync *s = NULL;
    if (p2p.syncs)
        HASH_FIND(hh, p2p.syncs, &id, sizeof(id), s);
    return s;
}

/* Ids fit the immediate's count field; 0 is never used. */
static uint32_t next_id(void)
{
    do
        p2p.sync_next = (p2p.sync_next + 1) & HB_P2P_IMM_N_MAX;
    while (!p2p.sync_next || find(p2p.sync_next));
    return p2p.sync_next;
}

struct p2p_sync *hb_p2p_sync_new(struct p2p_txpair *tp, const void *buf)
{
    struct p2p_sync *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL; /* the send goes by MPI */
    s->id = next_id();
    s->tp = tp;
    s->world = tp->world;
    s->buf = buf;
    HASH_ADD(hh, p2p.syncs, id, sizeof(s->id), s);
    return s;
}

/* A rendezvous record's message exists only in the user's buffer until
 * the receiver has read it: after a fault it must go again by MPI on its
 * communicator, so the application's Comm_free of it waits (pending)
 * until the SYNC_ACK.  A synchronous record needs no such wait: it was
 * placed whole, only its SYNC_ACK can be lost, and the receiver resends
 * that (p2p_chan.c, ack_wait). */
void hb_p2p_sync_hold_comm(struct p2p_sync *s)
{
    s->holds_comm = 1;
    s->tp->c->pending++;
    s->tp->c->sends_held++;
}

static void release_comm(struct p2p_sync *s)
{
    if (s->holds_comm && s->tp) {
        s->tp->c->sends_held--;
        hb_p2p_comm_release_pending(s->tp->c);
    }
    s->holds_comm = 0;
}

void hb_p2p_sync_free(struct p2p_sync *s)
{
    if (s) {
        release_comm(s);
        if (s->reg) /* a rendezvous record's buffer: read, or resent */
            hb_regcache_put(p2p.ctx->rdma->cache, s->reg);
        HASH_DEL(p2p.syncs, s);
        free(s);
    }
}

/* A SYNC_ACK, by RDMA (inside the transport's progress) or by MPI.  One
 * for a send already complete (a duplicate's) changes nothing. */
void hb_p2p_sync_acked(uint32_t id)
{
    struct p2p_sync *s = find(id);
    if (s && !s->acked) {
        s->acked = 1;
        release_comm(s);
        p2p.stats.sync_acks++;
    }
}

/* The failed peer's kept records, live pair or revoked, oldest first
 * (ids are given out in the order the records are written, and uthash
 * iterates in insertion order).  By their ids, looked up again before
 * each: a resend is an MPI send, inside which point-to-point's progress
 * may complete and free any kept record (an orphaned Issend's). */
void hb_p2p_sync_resend(int world)
{
    struct p2p_sync *s, *tmp;
    unsigned n = HASH_COUNT(p2p.syncs), k = 0;
    uint32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    if (!ids)
        abort(); /* a record whose SYNC_ACK may be lost cannot be dropped */
    HASH_ITER(hh, p2p.syncs, s, tmp)
    if (s->world == world)
        ids[k++] = s->id;
    for (unsigned i = 0; i < k; i++)
        if ((s = find(ids[i])) && s->sent && !s->acked && s->tp)
            hb_p2p_chan_resend(s->tp, &s->hdr, s->buf);
    free(ids);
}

/* A receiver whose rendezvous read failed waits for the record's RESEND,
 * and this rank may be waiting for something of the receiver's, not
 * testing the send (an Isend's request left for later): the failure is
 * looked for here too, not only by a waiting sender.  By world, gathered
 * first: a resend may free kept records. */
void hb_p2p_sync_check(void)
{
    struct p2p_sync *s, *tmp;
    unsigned n = HASH_COUNT(p2p.syncs), k = 0;
    int *worlds;
    if (!n || p2p.busy || !(worlds = malloc(n * sizeof(*worlds))))
        return;
    HASH_ITER(hh, p2p.syncs, s, tmp)
    if (!s->acked && s->sent)
        worlds[k++] = s->world;
    for (unsigned i = 0; i < k; i++)
        if (i == 0 || worlds[i] != worlds[i - 1])
            hb_p2p_chan_tx_failed(worlds[i]);
    free(worlds);
}

/* The pair's communicator is dropped: its records cannot be resent
 * (a rendezvous record's would have kept it: only at MPI_Finalize). */
void hb_p2p_sync_pair_gone(const struct p2p_txpair *tp)
{
    struct p2p_sync *s, *tmp;
    HASH_ITER(hh, p2p.syncs, s, tmp)
    if (s->tp == tp) {
        s->holds_comm = 0;
        s->tp = NULL;
    }
}

/* The handshake is looked at on every HB_SYNC_POLL_EVERY-th look: a
 * SYNC_ACK by MPI is the slow path (fault, region freed, send queue
 * full), and an Iprobe per spin would tax the fast one. */
#define HB_SYNC_POLL_EVERY 16

/* Without blocking: 1 once acknowledged.  A failure of the peer found
 * here makes the records go again.  SYNC_ACKs by MPI come through the
 * handshake, which wrapper entries poll only now and then: polled here.
 * Not inside point-to-point's progress (busy: a resend is a blocking MPI
 * send, and the handshake is not reentrant): the next look does it. */
int hb_p2p_sync_done(struct p2p_sync *s)
{
    if (s->acked)
        return 1;
    if (p2p.busy)
        return 0;
    if (hb_p2p_chan_tx_failed(s->world) || ++s->polls % HB_SYNC_POLL_EVERY == 0)
        hb_p2p_grant_poll_now();
    return s->acked;
}

/* A blocking MPI_Ssend: until the match, with hotbuf's and MPI's progress
 * (a waiting rank may be the one the receiver's MPI waits for). */
void hb_p2p_sync_wait(struct p2p_sync *s)
{
    while (!hb_p2p_sync_done(s))
        hb_progress_yield(NULL);
}

/* ---- the receiver's side ---------------------------------------------- */

/* A DATA_SYNC record taken from sender world: kept on p2p.sync_rx until
 * its match, so that a RESEND of it can be told matched or not. */
void hb_p2p_sync_rx_new(struct p2p_msg *m, int world, uint32_t id)
{
    m->sync = 1;
    m->sync_id = id;
    m->sync_world = world;
    hb_list_add_head(&p2p.sync_rx, &m->sync_link);
}

static void ack(int world, uint32_t id)
{
    if (hb_p2p_chan_sync_ack(world, id))
        hb_p2p_ctrl_sync_ack(world, id);
}

/* m is matched: its sender's Ssend may complete. */
void hb_p2p_sync_matched(struct p2p_msg *m)
{
    if (!m->sync)
        return;
    hb_list_del(&m->sync_link);
    m->sync = 0;
    ack(m->sync_world, m->sync_id);
}

/* A duplicate DATA_SYNC or DATA_RNDV record (a RESEND of one already
 * taken, or the placed one after its RESEND): its SYNC_ACK may have been
 * lost with the QP.  Matched and acknowledged already: a new one, by MPI.
 * Not yet (unmatched, or a rendezvous read not done): it goes then, and
 * the message is returned (a rendezvous one takes the RESEND's payload). */
struct p2p_msg *hb_p2p_sync_rx_dup(int world, uint32_t rseq, uint32_t id)
{
    for (struct hb_list *l = p2p.sync_rx.next; l != &p2p.sync_rx; l = l->next) {
        struct p2p_msg *m = hb_container_of(l, struct p2p_msg, sync_link);
        if (m->sync_world == world && m->g.rseq == rseq)
            return m;
    }
    hb_p2p_ctrl_sync_ack(world, id);
    return NULL;
}

/* A message dropped unmatched (its communicator freed), or one whose
 * payload has been taken. */
void hb_p2p_msg_free(struct p2p_msg *m)
{
    if (m->sync)
        hb_list_del(&m->sync_link);
    free(m->heap);
    free(m);
}
