/* The sending side's order bookkeeping of point-to-point part 2
 * (P2P-DESIGN.md §5.4-5.6, §5.11; the sender of tests/model/p2p_pull.pml),
 * without MPI: which path a send may take and what travels with it, so
 * that the receiver's merge (p2p_merge.h) restores the send order.
 * Unit-tested with the merge: tests/unit/test_p2p_merge.c.
 *
 * Per receiver B: struct hb_pp_peer, the ring sequence (rseq, one per
 * A -> B queue pair, over all communicators) and the records not yet seen
 * complete, which a QP error makes A resend by MPI.  Per (B, c): struct
 * hb_pp, the pair's state and its stamps:
 *   MPI --grant--> GRANTED --first ring record--> LIVE --QP error--> DEAD
 *   (GRANTED --QP error--> DEAD too: MPI for good)
 *   - the first MARKER{0} goes by MPI right before the first ring record,
 *     not at the grant: every in-band message of hotbuf's is then followed
 *     by a data message the receiver must take (a ring record waits for
 *     its marker in the merge), so none is left unreceived in MPI when
 *     the communicator is freed.  MPICH reuses a freed communicator's
 *     context id, and a marker left behind matched a wildcard receive of
 *     the next communicator (tests/mpi/p2p_ring_cases.c);
 *   - a ring record is stamped mpi_before = MPI data messages sent on c
 *     since that first marker (never reset at later markers);
 *   - an MPI data message that follows ring records goes after a
 *     MARKER{k}, k = the rseq of the last ring record on c; in DEAD too,
 *     since resent records travel ahead of it and still need the fence.
 * The caller sends what these functions say, in the order they say it,
 * on one thread (hotbuf's lock).  Not yet wired: the channels and the
 * send path of issue 13 use it. */
#ifndef HOTBUF_P2P_PAIR_H
#define HOTBUF_P2P_PAIR_H

#include <stdint.h>

#include "util/list.h"

enum hb_pp_state { HB_PP_MPI, HB_PP_GRANTED, HB_PP_LIVE, HB_PP_DEAD };

/* A ring record A keeps until it is seen complete (an embedded node). */
struct hb_pp_rec {
    struct hb_list link; /* on the peer's unacked list, oldest at the tail */
    uint32_t rseq, mpi_before;
};

struct hb_pp_peer {
    uint32_t rseq;          /* last rseq given out */
    struct hb_list unacked; /* struct hb_pp_rec, in rseq order */
};

struct hb_pp {
    int state;          /* enum hb_pp_state */
    uint32_t mpi_since; /* MPI data on c since the first marker */
    uint32_t last_ring; /* rseq of the last ring record on c */
    int unfenced;       /* a ring record on c since the last marker */
};

void hb_pp_peer_init(struct hb_pp_peer *p);
void hb_pp_init(struct hb_pp *pp);

/* B granted: GRANTED.  Nothing is sent yet. */
void hb_pp_granted(struct hb_pp *pp);

/* A send may take the ring only while GRANTED or LIVE. */
static inline int hb_pp_ring_ok(const struct hb_pp *pp)
{
    return pp->state == HB_PP_GRANTED || pp->state == HB_PP_LIVE;
}

/* Before a ring send: 1 when MARKER{0} must go by MPI first (the pair's
 * first ring record: GRANTED becomes LIVE, the stamps start), else 0. */
int hb_pp_open(struct hb_pp *pp);

/* A ring send (after hb_pp_open): fills rec (rseq, mpi_before) and keeps
 * it unacked. */
void hb_pp_ring(struct hb_pp *pp, struct hb_pp_peer *peer,
                struct hb_pp_rec *rec);

/* The record's RC completion was seen: it needs no resend. */
void hb_pp_acked(struct hb_pp_rec *rec);

/* An MPI data send on c: 1 when MARKER{*k} must go first (by MPI, on c,
 * before the data), else 0. */
int hb_pp_mpi(struct hb_pp *pp, uint32_t *k);

/* A QP error or a failed peer: every pair of the peer goes DEAD
 * (hb_pp_dead on each), and its unacked records go by MPI as RESENDs,
 * oldest first, each on its own communicator: the oldest one (NULL when
 * none is left), which hb_pp_acked then takes off the list. */
struct hb_pp_rec *hb_pp_oldest_unacked(const struct hb_pp_peer *peer);
void hb_pp_dead(struct hb_pp *pp);

#endif
