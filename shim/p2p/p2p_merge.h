/* The release merge of point-to-point part 2 (P2P-DESIGN.md §5.7
 * "Release", the rules tests/model/p2p_pull.pml checks with spin), without
 * MPI (unit-tested alone: tests/unit/test_p2p_merge.c).
 *
 * One switched sender A on one communicator c reaches the receiver by two
 * paths: MPI (pulled with Improbe, in A's MPI order) and hotbuf's ring
 * (records in rseq order).  A marks the switch points in band: a MARKER{k}
 * by MPI before every run of MPI sends that follows ring records (k = the
 * rseq of A's last ring record on c before it; the first marker after the
 * grant has k = 0), and stamps each ring record with mpi_before = the MPI
 * data messages A sent on c since that first marker.  This merge hands
 * A's messages to matching in A's send order:
 *   - before the first marker (PRE) MPI messages are plain: released as
 *     they come; ring records wait;
 *   - an MPI data message is released in pull order; once LIVE it counts
 *     (m, never reset at later markers: resetting is the model's
 *     RESET_STAMPS variant, which breaks order);
 *   - a ring record is released when it heads c's ring queue and its stamp
 *     equals m;
 *   - MARKER{k} heads the pulled queue until every record of c up to rseq
 *     k has been released (the first one switches PRE to LIVE).
 * Records of c arrive in rseq order (placed by one RC queue pair, then,
 * after a fault, resent by MPI on c, which does not overtake), so "every
 * record of c up to k" is "the highest rseq released on c >= k", and a
 * record whose rseq is not above the highest seen on c is a duplicate
 * (placed, then resent because its completion was lost).  A RESEND is
 * given to hb_mg_ring as soon as it is pulled, not queued behind a marker
 * that may be waiting for exactly that record (the model's RESEND_IN_ORDER
 * variant hangs).
 *
 * Items are embedded in the caller's objects; nothing here allocates.  Not
 * yet wired: the sending side and the channels of issue 13 feed it. */
#ifndef HOTBUF_P2P_MERGE_H
#define HOTBUF_P2P_MERGE_H

#include <stdint.h>

#include "util/list.h"

enum hb_mg_kind {
    HB_MG_MPI,    /* an MPI data message of A on c */
    HB_MG_MARKER, /* MARKER{k}: stamp = k */
    HB_MG_RING    /* a ring record (or its RESEND): rseq, stamp = mpi_before */
};

struct hb_mg_item {
    struct hb_list link;
    int kind;      /* enum hb_mg_kind */
    uint32_t rseq; /* HB_MG_RING: per (A -> B) sequence, 1, 2, ... */
    uint32_t stamp;
};

struct hb_mg {
    struct hb_list pulled; /* MPI data and markers, oldest at the tail */
    struct hb_list ring;   /* records of c in rseq order, oldest at the tail */
    int live;              /* A's first marker consumed */
    uint32_t m;            /* MPI data released since the first marker */
    uint32_t rel_max;      /* highest rseq released on c */
    uint32_t seen_max;     /* highest rseq given to hb_mg_ring on c */
};

void hb_mg_init(struct hb_mg *g);

/* An MPI data message or a marker of A on c, in pull order. */
void hb_mg_pulled(struct hb_mg *g, struct hb_mg_item *it);

/* A ring record of c (placed, or a RESEND as soon as it is pulled):
 * 0 when queued, -1 when it is a duplicate (not queued: drop it). */
int hb_mg_ring(struct hb_mg *g, struct hb_mg_item *it);

/* The next item in A's send order, or NULL while the merge must wait.
 * Consumed markers come out too (kind HB_MG_MARKER, nothing to match):
 * the caller frees them. */
struct hb_mg_item *hb_mg_next(struct hb_mg *g);

/* Items still held (pulled or ring), e.g. for a report or a drain check. */
int hb_mg_empty(const struct hb_mg *g);

#endif
