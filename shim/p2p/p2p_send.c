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
 * What goes by ring today: MPI_Send only (it waits for its record's RC
 * completion, so its buffer and the staging area are free on return).
 * Ssend, Rsend, Bsend, the nonblocking forms and persistent sends go by
 * MPI with the pair's bookkeeping; a persistent send made on a live pair
 * turns the pair back to MPI for good (its Starts are not seen here). */
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
    if (!c || c->state == COMM_OFF || c->no_ring)
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
    p2p.stats.live_by_mpi += tp->pp.state == HB_PP_LIVE;
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
    return hb_p2p_chan_send(tp, buf, (uint32_t)bytes, tag, hot);
}

int hb_p2p_send(int mode, const void *buf, int count, MPI_Datatype type,
                int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    struct p2p_txpair *tp = pair_of(comm, dest);
    int hot = hb_tracker_call_hot(hb_track_last);
    hb_track_last = NULL;
    if (!tp)
        return pmpi_send(mode, buf, count, type, dest, tag, comm, req);
    tp->sends++;
    int ring =
        mode == HB_P2P_SEND ? by_ring(tp, buf, count, type, tag, hot) : -1;
    p2p.stats.hot_missed += hot && ring != 1 && tp->state == TX_GRANTED &&
                            tp->pp.state == HB_PP_LIVE;
    if (ring >= 0)
        return MPI_SUCCESS;
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

/* A persistent send: its Starts go to MPI unseen, so the pair can no
 * longer count its MPI messages.  Fence what the ring sent, then MPI for
 * good on this communicator. */
void hb_p2p_send_init(MPI_Comm comm)
{
    struct p2p_comm *c;
    if (!p2p.ring || !(c = hb_p2p_comm_get(comm)))
        return;
    c->no_ring = 1;
    for (int d = 0; c->tx && d < c->size; d++) {
        struct p2p_txpair *tp = c->tx[d];
        if (!tp || tp->pp.state != HB_PP_LIVE)
            continue;
        if (tp->pp.unfenced) {
            hb_p2p_send_marker(comm, d, tp->pp.last_ring);
            tp->pp.unfenced = 0;
        }
        hb_pp_dead(&tp->pp);
    }
}
