/* Whether a receiver grants a ring pair (issue 13 item 1): the copies the
 * sender's hot buffer would save against what pull costs the receiver on
 * the communicator's other traffic.  MPI-free (unit test:
 * tests/unit/test_p2p_policy.c).
 *
 * A grant puts the whole communicator into pull at the receiver: from
 * then on every receive on it, cold ones included, goes through hotbuf's
 * matcher, MPI's Improbe and Imrecv, which costs several times MPI's own
 * receive (`make bench`: about 3,950 instructions against 1,027 per
 * message on Open MPI's vader).  The pair's ring saves the copy of each
 * hot message (C - V of the cost model, the same saving that made the
 * buffer hot).  So the receiver weighs, from counts it has at the
 * request:
 *
 *   saving = uses x (C(bytes) - V)      the hot buffer's messages so far
 *   cost   = cold x pull_ns             every other message on c so far
 *
 * and grants when saving >= cost: the past mix stands for the future one
 * (the buffer turned hot because the traffic repeats).  The other
 * receives are counted on both sides, each where it is known: the
 * receiver's receives on c that do not name A (other senders, wildcards),
 * up to the time it looks at the request, and A's own sends to B on c
 * that were not the hot buffer's, up to the time it asked.  (The
 * receiver's total minus the sender's uses mixes two times: a receiver
 * that looks at the request late has received more of the hot buffer's
 * messages meanwhile, and refused a hot buffer alone on its
 * communicator.)  A communicator
 * already pulled costs nothing more, so a pair there is granted; so is a
 * persistent send (uses 0: the request is the user's promise of reuse,
 * and no count exists yet).  The policy only says whether: a refusal
 * leaves the pair on MPI, always safe, and the sender asks again after
 * HB_ASK_BACKOFF more sends, when the counts may say otherwise.
 * pull_ns = 0 grants every valid request (as before the policy). */
#ifndef HOTBUF_P2P_POLICY_H
#define HOTBUF_P2P_POLICY_H

#include <stdint.h>

#include "track/costmodel.h"

struct hb_grant_case {
    int pulled;      /* the communicator is pulled already */
    uint64_t others; /* the receiver's receives on it not naming A */
    uint32_t sends;  /* A's sends to B on it, when it asked */
    uint32_t uses;   /* uses of its hot buffer then (0: persistent) */
    uint32_t bytes;  /* its message size */
    double pull_ns;  /* a receive under pull, over MPI's own */
};

struct hb_grant_verdict {
    double saving_ns, cost_ns;
    int grant;
};

void hb_p2p_grant_weigh(const struct hb_costmodel *cm,
                        const struct hb_grant_case *gc,
                        struct hb_grant_verdict *v);

#endif
