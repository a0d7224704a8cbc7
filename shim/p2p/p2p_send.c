/* The send family on a switched pair (P2P-DESIGN.md §5.6; issue 13
 * item 3).
 *
 * Every send-family call on a communicator that hotbuf may reroute comes
 * here while point-to-point is engaged.  On a live pair, a blocking
 * standard send of contiguous data that fits a slot goes by ring; any
 * other send goes by MPI, after a marker when ring records precede it on
 * that communicator, and counts in the stamps (p2p_pair.h), so the
 * receiver's merge restores the send order.  A send on a pair that is not
 * live goes to MPI unchanged, and asks for a grant when its call is hot.
 *
 * What goes by ring today: MPI_Send, and MPI_Rsend as a Send (MPI allows
 * it: the receive is posted, and a ready send that found none would be
 * erroneous either way).  Each waits for its record's RC completion, so
 * its buffer and the staging area are free on return.  Ssend (it needs
 * the receiver's match acknowledgement), Bsend (the attached buffer's
 * accounting), the nonblocking forms and persistent sends go by
 * MPI with the pair's bookkeeping: a persistent send is remembered at its
 * init call and counted at each Start, where its message enters MPI's
 * order. */
#include <stdlib.h>
#include <string.h>

#include "core/track_mpi.h"
#include "p2p_int.h"

static int pmpi_send(int mode, const void *buf, int count, MPI_Datatype type,
                     int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    switch (mode) {
    case HB_P2P_SSEND: return PMPI_Ssend(buf, count, type, dest, tag, comm);
    case HB_P2P_RSEND: return PMPI_Rsend(buf, count, type, dest, tag, comm);
    case HB_P2P_BSEND: return PMPI_Bsend(buf, count, type, dest, tag, comm);
    case HB_P2P_ISEND:
        return PMPI_Isend(buf, count, type, dest, tag, comm, req);
    case HB_P2P_ISSEND:
        return PMPI_Issend(buf, count, type, dest, tag, comm, req);
    case HB_P2P_IRSEND:
        return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
    case HB_P2P_IBSEND:
        return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
    default: return PMPI_Send(buf, count, type, dest, tag, comm);
    }
}

/* The pair of a send to dest on comm, or NULL (no ring, not ours). */
static struct p2p_txpair *pair_of(MPI_Comm comm, int dest)
{
    struct p2p_comm *c;
    if (!p2p.ring || dest < 0)
        return NULL;
    hb_p2p_grant_poll();
    c = hb_p2p_comm_get(comm);
    if (!c || c->state == COMM_OFF)
        return NULL;
    return hb_p2p_txpair(c, dest);
}

void hb_p2p_send_marker(MPI_Comm comm, int dest, uint32_t k)
{
    struct hb_inband ib = {p2p.nonce, HB_INBAND_MARKER, k};
    PMPI_Send(&ib, (int)sizeof(ib), MPI_BYTE, dest, p2p.tstar, comm);
    p2p.stats.markers_out++;
}

/* An MPI data send on a pair that is or was live: the marker first when
 * ring records precede it (§5.6 step 3), and the count the stamps use. */
static void mpi_on_pair(struct p2p_txpair *tp)
{
    uint32_t k;
    if (tp->pp.state == HB_PP_MPI)
        return;
    if (hb_pp_mpi(&tp->pp, &k))
        hb_p2p_send_marker(tp->c->comm, tp->dest, k);
    p2p.stats.live_by_mpi += tp->state == TX_GRANTED && hb_pp_ring_ok(&tp->pp);
}

/* Asks for a grant when this call is hot (or always, for tests). */
static void maybe_ask(struct p2p_txpair *tp, int hot)
{
    if (tp->state == TX_IDLE ||
        (tp->state == TX_REFUSED && tp->sends >= tp->retry_at))
        if (hot || p2p.ask_always)
            hb_p2p_ask(tp);
}

/* MPI_Send by ring: 1 zero-copy, 0 copied, -1 not (MPI then). */
static int by_ring(struct p2p_txpair *tp, const void *buf, int count,
                   MPI_Datatype type, int tag, int hot)
{
    uint64_t bytes = hb_dt_contiguous_bytes(count, type);
    if (tp->state != TX_GRANTED || !hb_pp_ring_ok(&tp->pp) || !bytes ||
        bytes > UINT32_MAX)
        return -1;
    if (hb_pp_open(&tp->pp)) /* the pair's first record */
        hb_p2p_send_marker(tp->c->comm, tp->dest, 0);
    return hb_p2p_chan_send(tp, buf, (uint32_t)bytes, tag, hot);
}

int hb_p2p_send(int mode, const void *buf, int count, MPI_Datatype type,
                int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    struct p2p_txpair *tp = pair_of(comm, dest);
    struct hb_entry *e = hb_track_last;
    int hot = hb_tracker_call_hot(e);
    hb_track_last = NULL;
    if (!tp)
        return pmpi_send(mode, buf, count, type, dest, tag, comm, req);
    tp->sends++;
    int ring = mode == HB_P2P_SEND || mode == HB_P2P_RSEND
                   ? by_ring(tp, buf, count, type, tag, hot)
                   : -1;
    p2p.stats.hot_missed +=
        hot && ring != 1 && tp->state == TX_GRANTED && hb_pp_ring_ok(&tp->pp);
    if (ring >= 0) {
        uint16_t site = hb_tracker_call_site(e);
        if (site != HB_SITE_NONE)
            hb_tracker_count_rerouted(p2p.ctx->tracker, HB_OP_SEND, site);
        return MPI_SUCCESS;
    }
    mpi_on_pair(tp);
    maybe_ask(tp, hot);
    return pmpi_send(mode, buf, count, type, dest, tag, comm, req);
}

void hb_p2p_send_half(MPI_Comm comm, int dest)
{
    struct p2p_txpair *tp = pair_of(comm, dest);
    if (tp) {
        tp->sends++;
        mpi_on_pair(tp);
    }
}

/* Persistent sends, by handle: each Start is an MPI send on its pair. */
struct p2p_psend {
    uint64_t key; /* the MPI_Request handle's bits */
    MPI_Comm comm;
    int dest;
    UT_hash_handle hh;
};

static struct p2p_psend *psend_find(MPI_Request h)
{
    uint64_t key = hb_p2p_req_key(h);
    struct p2p_psend *s = NULL;
    if (p2p.psends)
        HASH_FIND(hh, p2p.psends, &key, sizeof(key), s);
    return s;
}

void hb_p2p_send_init(MPI_Request req, MPI_Comm comm, int dest)
{
    struct p2p_psend *s, *old;
    if (!p2p.ring || dest < 0 || !(s = calloc(1, sizeof(*s))))
        return; /* a persistent send no pair can see */
    s->key = hb_p2p_req_key(req);
    s->comm = comm;
    s->dest = dest;
    HASH_REPLACE(hh, p2p.psends, key, sizeof(s->key), s, old);
    free(old); /* a handle MPI reused after a free we did not see */
}

/* Its message enters MPI's order here: the marker first when ring records
 * precede it, and the count the stamps use, as for any MPI send. */
void hb_p2p_psend_start(MPI_Request req)
{
    struct p2p_psend *s = psend_find(req);
    struct p2p_txpair *tp = s ? pair_of(s->comm, s->dest) : NULL;
    if (tp) {
        tp->sends++;
        mpi_on_pair(tp);
    }
}

void hb_p2p_psend_forget(MPI_Request req)
{
    struct p2p_psend *s = psend_find(req);
    if (s) {
        HASH_DEL(p2p.psends, s);
        free(s);
    }
}

/* comm is going away: its pairs are dropped, so are its sends' entries
 * (MPI may reuse the handle for another communicator).  MPI_COMM_NULL:
 * every entry (the subsystem stops). */
void hb_p2p_psend_drop_comm(MPI_Comm comm)
{
    struct p2p_psend *s, *tmp;
    HASH_ITER(hh, p2p.psends, s, tmp)
    if (s->comm == comm || comm == MPI_COMM_NULL) {
        HASH_DEL(p2p.psends, s);
        free(s);
    }
}
