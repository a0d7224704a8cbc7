/* MPI's matching rules for one communicator, without MPI (unit-tested
 * alone: tests/unit/test_p2p_match.c).
 *
 * Posted receives wait in posting order, with wildcards; unexpected
 * messages wait per sender in arrival order (per sender, arrival order is
 * send order: hotbuf claims them with Improbe(ANY_SOURCE, ANY_TAG), which
 * does not overtake).  The rules (MPI-4.0 §3.5):
 *  - an arriving message goes to the earliest-posted receive it matches;
 *  - a posted receive takes the earliest-arrived message it matches: for a
 *    specific source that sender's first, for ANY_SOURCE the first across
 *    senders (any is legal; this one is deterministic).
 * A probe answers by the same rule a receive uses, so a receive with the
 * probe's (source, tag) gets the probed message.
 *
 * Nodes are embedded in the caller's objects: nothing here allocates
 * except the per-sender queue heads.  Wildcards are HB_PM_ANY.
 */
#ifndef HOTBUF_P2P_MATCH_H
#define HOTBUF_P2P_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "util/list.h"

#define HB_PM_ANY (-1)

struct hb_pm_recv {
    struct hb_list link; /* on posted, in posting order */
    int source, tag;     /* or HB_PM_ANY */
};

struct hb_pm_msg {
    struct hb_list link; /* on its sender's queue, in arrival order */
    int source, tag;     /* never wildcards */
    uint64_t seq;        /* arrival number (set by hb_pm_arrive) */
};

struct hb_pm {
    struct hb_list posted; /* struct hb_pm_recv, oldest at the tail */
    struct hb_list *unexp; /* [nsrc] struct hb_pm_msg queues */
    int nsrc;
    uint64_t next_seq;
    uint64_t n_unexp, n_posted;
};

/* 0, or -1 when out of memory.  nsrc: the communicator's size. */
int hb_pm_init(struct hb_pm *m, int nsrc);
void hb_pm_fini(struct hb_pm *m);

/* A message arrives: returns the receive it matched (no longer posted),
 * or NULL when it was queued as unexpected. */
struct hb_pm_recv *hb_pm_arrive(struct hb_pm *m, struct hb_pm_msg *msg);

/* A receive is posted: returns the unexpected message it takes (no longer
 * queued), or NULL when it was queued as posted. */
struct hb_pm_msg *hb_pm_post(struct hb_pm *m, struct hb_pm_recv *r);

/* The message a receive (source, tag) would take now, still queued. */
struct hb_pm_msg *hb_pm_peek(const struct hb_pm *m, int source, int tag);

/* Removes a queued message (matched probe) or a posted receive (cancel);
 * no-op when it is not queued. */
void hb_pm_take(struct hb_pm *m, struct hb_pm_msg *msg);
void hb_pm_unpost(struct hb_pm *m, struct hb_pm_recv *r);

/* The oldest unexpected message of any sender, or NULL (draining). */
struct hb_pm_msg *hb_pm_first_unexpected(const struct hb_pm *m);

#endif
