/* Point-to-point's state in text, for the diagnosis of a hang: a test
 * program's watchdog finds hotbuf_test_p2p_dump with dlsym and calls it
 * before it ends the run (tests/mpi/p2p_random.c), so that a hang seen
 * once in a long randomized run leaves more than "it waited here".
 *
 * Read-only, and called from a signal handler that interrupted the rank
 * wherever it was: a structure caught mid-update may print oddly.  Fine
 * for a process about to exit; never called otherwise. */
#include <stdio.h>

#include "p2p_int.h"

#define DUMP_REQS_MAX 64 /* requests printed; the rest counted */

static int list_len(const struct hb_list *head)
{
    int n = 0;
    for (const struct hb_list *l = head->next; l != head && n < 100000;
         l = l->next)
        n++;
    return n;
}

static void dump_rx(FILE *f, const struct p2p_rxpair *rp, int src)
{
    fprintf(f,
            "hotbuf: p2p   rx from %d (world %d): live %d token %u grants %u "
            "gones %u closed %d | merge live %d m %u released %u seen %u "
            "pulled %d ring %d\n",
            src, rp->world, rp->live, rp->token, rp->grants, rp->gones,
            rp->closed, rp->mg.live, rp->mg.m, rp->mg.rel_max, rp->mg.seen_max,
            list_len(&rp->mg.pulled), list_len(&rp->mg.ring));
}

static void dump_tx(FILE *f, const struct p2p_txpair *tp)
{
    fprintf(f,
            "hotbuf: p2p   tx to %d (world %d): state %d token %u cid %u "
            "sends %llu close_due %d | pair %d mpi_since %u last_ring %u "
            "unfenced %d\n",
            tp->dest, tp->world, tp->state, tp->token, tp->cid,
            (unsigned long long)tp->sends, tp->close_due, tp->pp.state,
            tp->pp.mpi_since, tp->pp.last_ring, tp->pp.unfenced);
}

static void dump_comm(FILE *f, const struct p2p_comm *c)
{
    int pulled = c->state == COMM_PULLED;
    fprintf(f,
            "hotbuf: p2p comm %#llx: state %d size %d rank %d cid %u pending "
            "%d persistent %d deferred %d held %d tx_closed %d | matcher "
            "posted %llu unexpected %llu\n",
            (unsigned long long)c->key, c->state, c->size, c->rank, c->cid,
            c->pending, c->persistent, c->free_deferred, c->sends_held,
            c->tx_closed, pulled ? (unsigned long long)c->m.n_posted : 0ull,
            pulled ? (unsigned long long)c->m.n_unexp : 0ull);
    for (int i = 0; c->rx && i < c->size; i++)
        if (c->rx[i])
            dump_rx(f, c->rx[i], i);
    for (int i = 0; c->tx && i < c->size; i++)
        if (c->tx[i])
            dump_tx(f, c->tx[i]);
}

static void dump_req(FILE *f, const struct p2p_req *r)
{
    fprintf(f,
            "hotbuf: p2p req %#llx: state %d persistent %d psend %d hijacked "
            "%d freed %d cancelled %d blocking %d comm cid %d source %d tag "
            "%d | sync %u acked %d | rndv %d\n",
            (unsigned long long)r->key, r->state, r->persistent, r->psend,
            r->hijacked, r->freed, r->cancelled, r->blocking,
            r->c ? (int)r->c->cid : -1, r->source, r->tag,
            r->sync ? r->sync->id : 0u, r->sync ? r->sync->acked : -1,
            r->rv != NULL);
}

__attribute__((visibility("default"))) void hotbuf_test_p2p_dump(void)
{
    FILE *f = stderr;
    const struct p2p_comm *c, *ctmp;
    const struct p2p_req *r, *rtmp;
    const struct p2p_sync *s, *stmp;
    int n = 0;
    if (!p2p.ctx)
        return;
    fprintf(f,
            "hotbuf: p2p rank %d: posted %llu unexpected %llu busy %d hook "
            "%d orphans %d syncs %u sync_rx %d reads %d closes %d\n",
            p2p.ctx->rank, (unsigned long long)p2p.n_posted,
            (unsigned long long)p2p.n_unexp, p2p.busy, p2p.hook,
            list_len(&p2p.orphans), p2p.syncs ? HASH_COUNT(p2p.syncs) : 0u,
            list_len(&p2p.sync_rx), list_len(&p2p.rndv_reads), p2p.ncloses);
    HASH_ITER(hh, p2p.comms, c, ctmp)
    dump_comm(f, c);
    HASH_ITER(hh, p2p.reqs, r, rtmp)
    if (n++ < DUMP_REQS_MAX)
        dump_req(f, r);
    if (n > DUMP_REQS_MAX)
        fprintf(f, "hotbuf: p2p ... %d more requests\n", n - DUMP_REQS_MAX);
    HASH_ITER(hh, p2p.syncs, s, stmp)
    fprintf(f,
            "hotbuf: p2p sync %u: world %d sent %d acked %d rndv %d holds %d "
            "pair %d\n",
            s->id, s->world, s->sent, s->acked, s->rndv, s->holds_comm,
            s->tp != NULL);
    hb_p2p_chan_dump(f);
}
