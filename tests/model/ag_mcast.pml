/* hotbuf multicast Allgather (copy-based): a Promela model of the protocol
 * of shim/coll/allgather_mcast.c (its header), checked with spin (tests/model/
 * run_spin_mcast.sh).  The claims it checks are the design's C1-C4.
 *
 * Processes:
 *   Rank(i)  NRANK of them, each running NCALL Allgather calls (gseq N).
 *            An mcast call (mseq m) is the design's "One call": step 1
 *            (own block into own half N&1 slot i and into out), step 2
 *            (the UD chain to G_i), then the loop: poll the ring CQ (copy
 *            a packet if m' == m and j's block is incomplete, else discard;
 *            the slot posted again at once), serve nack[j] == m (an RC
 *            write of own half N&1 slot i into j's half N&1 slot i,
 *            immediate REPAIR(m)), take repair[j] == m (copy own half slot
 *            j to out), the timeout (NACK(m) to j, once per call and peer,
 *            only while j's block is incomplete), mready(m+1) to everyone
 *            once every block is in; it returns once every block is in,
 *            mready[j] == m+1 for every j, and every repair write it posted
 *            in the call completed.  Returning and beginning the next call
 *            are one step (nothing of hotbuf's runs between two calls;
 *            BLOCK_BETWEEN: the rank waits in between, see below).
 *   Net      the network: RC messages per ordered pair in FIFO order; UD
 *            packets per (receiver, sender) pair in any order, at any
 *            later time (also after the receiver's last call), or never.
 * init       creates the communicator: rings fully posted, words clear,
 *            every rank in call 0 (steps 1 and 2 done).
 *
 * Ghost state: a block's id is D(sender, gseq).  Each rank's halves
 * (half[i][h][j]) and out (outc[i][j][k]) hold ids.  A UD packet carries
 * (m', k) as its immediate; its data is the id its sender's chain read, the
 * block of the sender's call m' (the chain reads own half slot i right
 * after step 1 wrote it), so it is not stored.  A repair write reads its
 * sender's half slot when it lands (the latest moment the NIC may read it).
 *
 * The network:
 *   UD       per (receiver i, sender j) a bag of packets in flight (one bit
 *            per (m', k); each is sent once, UD makes no duplicates).  Net
 *            takes any packet of any bag at any time, and lands it in the
 *            next posted WQE of Q_ij, whatever its call (a stale packet
 *            consumes a WQE too), queueing its completion (FIFO per QP;
 *            the QPs' completions are taken in any order, more orders than
 *            one shared CQ); with no WQE posted, the packet is lost.  Rings
 *            hold R WQEs (default R = NPK, the design's minimum).  A packet
 *            lands only in a ring slot: C3's UD half holds by construction.
 *            Loss: a packet may be lost when it is sent (see BUDGET).
 *   RC       per ordered pair s -> d a FIFO of MREADY(v), NACK(m), REPAIR
 *            (the write with immediate: it carries gseq N; its data lands in
 *            d's half N&1 slot s, read from s's half N&1 slot s, and its
 *            immediate is seen in the same step, and so is s's completion:
 *            completion after landing, at the earliest, which gives s the
 *            most room).  Arriving, a message sets the flag word (mready,
 *            nack, repair) at d, written by s only.  QL bounds the messages
 *            in flight per pair (asserted).
 *
 * Claims:
 *   C1  every copy to out (packet, repair, other call) asserts that the
 *       data's id is (j, this call); at every return, every out cell holds
 *       this call's block of its sender.
 *   C2  spin's invalid end state check: every Rank must end (NCALL calls
 *       returned); Net may stop anywhere (end label).  Every execution is
 *       finite (each step consumes something bounded: calls, packets, RC
 *       messages, one NACK / repair / copy per call and peer), so a state
 *       that can still move hides no livelock; run_spin_mcast.sh's "cycles"
 *       run checks that there is no cycle at all (-DNP, ./pan -l).
 *   C3  when a repair of call N lands in rank d's half N&1 slot s: d has
 *       begun N (it sent the NACK) and has not returned from N+1.  Once d
 *       returned from N+1 it may begin N+2 at once, and call N+2, any
 *       copy-based algorithm, writes s's next block into that very slot
 *       and reads it (rd, ring: someone's RDMA write; mcast: a repair of
 *       N+2).  Asserting at the landing, not at a later write, also covers
 *       the model's horizon (d returned from its last call).
 *   C4  when a rank writes its own half N&1 slot (step 1 of call N), no
 *       repair write of call N-2 reading it is still in flight (rep_src).
 *       The UD send completes in step 2 (below), before the rank can leave.
 *
 * Other calls (-DOTHER=mask, bit N set: call N is a copy-based Allgather
 * with another algorithm; every rank makes the same choice): mseq counts
 * only the mcast calls (the immediates and words carry m).  An other call at
 * rank i: step 1 (own block into own half N&1 and out, C4), then one step,
 * enabled once every rank has begun call N (before that, some block exists
 * nowhere), that puts every j's block into i's half N&1 slot j (the
 * algorithm's writes) and copies it to out, and returns.  That algorithm's
 * own correctness (immediates, its settle before N+2) is tests/model/
 * ag_flags.py's.  What matters here: it writes and reads i's half N&1 slots
 * in call N, and it needs nothing from RC connection j -> i, so nothing
 * orders a late repair on j -> i before it.  The mcast loop does not run in
 * an other call (no polling, no serving; a NACK or a packet waits).
 *
 * Variants (-D), each run by run_spin_mcast.sh; the broken ones must fail:
 *   NO_SEQ_CHECK    packets accepted without comparing m' with m: a late
 *                   packet of call m-1 is copied while call m runs (C1).
 *   EARLY_LEAVE     a rank returns once every block is in (and its repair
 *                   writes completed), without waiting for mready(m+1); a
 *                   NACK of call m seen later is never served (nack[j] == m
 *                   is looked at in call m only): the rank that sent it
 *                   waits forever for a block that was lost (C2, invalid
 *                   end state).  (The design's other outcome,
 *                   serving it later from a half already rewritten, is not
 *                   modelled.)
 *   NO_REPAIR_WAIT  a rank returns without waiting for its repair writes.
 *                   Every call mcast: the rank rewrites the repair's source
 *                   in step 1 of call N+2 while it is in flight (C4).  The
 *                   receiver's half is safe then: the sender's mready(m+2)
 *                   follows the repair on the same RC connection and holds
 *                   the receiver in call N+1 until it landed.  With an other
 *                   call as N+1 (-DOTHER=2): the repair lands after its
 *                   receiver returned from N+1 (C3), the design's story.
 *   READY_BEFORE_REPOST  not a broken variant here: the next call's packets
 *                   may then find no WQE, a loss, and the model loses any
 *                   packet anyway (and a stale packet may consume the WQE
 *                   whatever the order): every claim still holds, it only
 *                   costs repairs (performance, not safety or liveness).
 *   BLOCK_BETWEEN   (correct) after returning, a rank sits in another MPI
 *                   call, with no hotbuf progress, until every rank has
 *                   returned from that Allgather (a barrier, say), the
 *                   situation the design's "why a sender stays" is about:
 *                   nobody may still need anything of a rank that returned.
 *   RC_ANY_ORDER    (a broken assumption, not a protocol variant) the RC
 *                   messages of a pair arrive in any order.  It fails C2:
 *                   NACK(m+1) arrives before NACK(m) (the NACKer got the
 *                   block of m after all and moved on), NACK(m) overwrites
 *                   the word, NACK(m+1) is never served, its block was
 *                   lost: the NACKer waits forever.  The order the design
 *                   invokes, NACK(m) before mready(m+1), is not needed:
 *                   mready(m+1) says its sender has every block of m, so a
 *                   NACK(m) overtaken by it asks for nothing anyone needs.
 *   NACK_MAX        (a hardening) a NACK's word takes only a larger value:
 *                   with it, RC_ANY_ORDER passes (every claim holds without
 *                   any RC ordering, in the bounds checked).
 *
 * Reductions (each a step merged into another or state that no guard can
 * tell apart; -DUNREDUCED turns them all off, and run_spin_mcast.sh's
 * "unreduced" run checks that the verdict does not change):
 *   - loss is chosen when a packet is sent (lose later = lose now: a packet
 *     in a bag changes nothing until it lands);
 *   - a packet landing while its rank is in an mcast call is polled in the
 *     same step (the poll reads only the rank's own got[] and the slot; a
 *     rank outside an mcast call leaves it queued, holding its WQE, and
 *     polls it in its next mcast call);
 *   - a NACK arriving while its rank is in that mcast call is served in the
 *     same step, one arriving earlier when the rank begins the call (the
 *     serve only appends to the rank's own RC queue; serving it later is
 *     the same as the NACK arriving later);
 *   - a repair landing while its receiver is in that call is taken in the
 *     same step;
 *   - an mready with nothing ahead of it in its FIFO arrives at once (it
 *     only enables its receiver's return, which may happen at any later
 *     time anyway);
 *   - words and cells no guard will look at again are cleared (an old value
 *     of a word only ever compares unequal, a half slot of another rank is
 *     read only in the call whose repair wrote it).
 *
 * Bounds: NRANK (2 or 3), NCALL (<= 4), NPK packets per block (1 or 2), R
 * WQEs per ring (NPK <= R <= 2), QL, and BUDGET (default unbounded): at
 * most BUDGET packets lost plus NACKs sent while a packet of the block is
 * still on its way (a spurious timeout).  A NACK for a block of which
 * nothing is on its way any more (its packets landed, or were lost, or
 * dropped for want of a WQE) is free: the timeout must come then.  The
 * 3-rank runs need a budget to stay within a minute; delays stay unbounded.
 *
 * Seen on the way (not a claim): a rank that has every block of m and sent
 * mready(m+1) may still wait in call m for another rank's mready(m+1)
 * while a faster peer already multicasts call m+1; those packets (m' ==
 * m+1) are discarded, and the block of m+1 then costs a NACK and a repair
 * (reachable with 2 ranks: the peer's mready(m+1) is slower than its UD
 * packets).
 *
 * Abstracted away: the 20-bit wrap of m (calls are bounded, far below
 * 2^20); the timeout's length (a nondeterministic choice while the block is
 * incomplete, spurious ones included); MTU and byte ranges (a block is NPK
 * cells); the UD send's completion (the chain's packets leave in step 2 and
 * the send completes there: every variant waits for it before returning,
 * so its timing only delays the sender, and a packet may still arrive at
 * any later time); RC retransmission (a write reads its source once, at
 * landing; C4 forbids any rewrite until its completion, which covers every
 * read the NIC may make); the communicator's creation and anything between
 * calls (no hotbuf progress there); other algorithms' own messages.
 */

#ifndef NRANK
#define NRANK 2
#endif
#ifndef NCALL
#define NCALL 3
#endif
#ifndef NPK
#define NPK 1
#endif
#ifndef R
#define R NPK
#endif
#ifndef OTHER
#define OTHER 0
#endif
#ifndef QL
#define QL 4
#endif
#ifndef BUDGET
#define BUDGET 255 /* unbounded */
#endif
#ifdef UNREDUCED
#define SLOW_LOSS
#define SLOW_POLL
#define SLOW_SERVE
#define SLOW_TAKE
#define SLOW_READY
#define KEEP_OLD
#endif
#ifdef RC_ANY_ORDER
#define SLOW_READY /* an mready never waits behind anything then */
#define ANY_ORDER 1
#else
#define ANY_ORDER 0
#endif
/* the switches as 0/1 constants: a long #ifdef block inside an inline body
 * makes spin misnumber the lines after it (a trail names the wrong line) */
#ifdef SLOW_POLL
#define POLL_NOW 0
#else
#define POLL_NOW 1
#endif
#ifdef SLOW_SERVE
#define SERVE_NOW 0
#else
#define SERVE_NOW 1
#endif
#ifdef SLOW_TAKE
#define TAKE_NOW 0
#else
#define TAKE_NOW 1
#endif
#ifdef SLOW_READY
#define READY_NOW 0
#else
#define READY_NOW 1
#endif
#ifdef SLOW_LOSS
#define LOSE_AT_SEND 0
#else
#define LOSE_AT_SEND 1
#endif
#ifdef KEEP_OLD
#define CLEAR_OLD 0
#else
#define CLEAR_OLD 1
#endif
#ifdef NACK_MAX
#define NACK_KEEPS_MAX 1
#else
#define NACK_KEEPS_MAX 0
#endif

#if NRANK < 2 || NRANK > 3
#error "NRANK: 2 or 3"
#endif
#if NCALL < 1 || NCALL > 4 || NPK < 1 || NPK > 2 || R < NPK || R > 2
#error "bounds: 1 <= NCALL <= 4, 1 <= NPK <= R <= 2"
#endif

#define ISMC(n) ((((OTHER) >> (n)) & 1) == 0)
/* mseq of call n (the mcast calls before it); gseq of mcast call mm */
#define MSEQ(n) (((n) > 0 && ISMC(0)) + ((n) > 1 && ISMC(1)) + ((n) > 2 && ISMC(2)) + ((n) > 3 && ISMC(3)))
#define GSEQ(mm) ((ISMC(0) && MSEQ(0) == (mm)) -> 0 : \
                 ((ISMC(1) && MSEQ(1) == (mm)) -> 1 : \
                 ((ISMC(2) && MSEQ(2) == (mm)) -> 2 : 3)))

#define NPAIR (NRANK * NRANK)
#define P(a, b) ((a) * NRANK + (b))                  /* ordered pair; word index */
#define H(i, h, j) (((i) * 2 + (h)) * NRANK + (j))   /* rank i's half h, slot j */
#define O(i, j, k) (((i) * NRANK + (j)) * NPK + (k)) /* rank i's out, block j, cell k */
#define D(j, n) ((n) * 4 + (j) + 1) /* ghost id: block of rank j, call n (0: none) */
#define FULL ((1 << NPK) - 1)
#define NONE 255

/* RC messages: kind + value (< 32) */
#define K_READY 32  /* mready(v) */
#define K_NACK 64   /* NACK(m = v) */
#define K_REPAIR 96 /* the repair write of gseq v; immediate REPAIR(MSEQ(v)) */

/* ---- per rank (global: the network's steps look at the receiver) -------- */
byte cn[NRANK];                 /* gseq N of the call the rank is in; NCALL: done */
byte ms[NRANK];                 /* its mseq m */
byte got[NPAIR];                /* got[P(i, j)]: packets of j's block in (FULL: all) */
bit nacked[NPAIR], served[NPAIR], rcopied[NPAIR], ready_sent[NRANK];
byte half[NRANK * 2 * NRANK];   /* the collective buffer's halves: ids */
byte outc[NRANK * NRANK * NPK]; /* the receive buffers: ids */
/* flag words at rank i written by peer j: index P(i, j) */
byte mready[NPAIR], nack[NPAIR], repair[NPAIR];
/* Q_ij, the UD receive QP at rank i for j's group: index P(i, j) */
byte wq[NPAIR];     /* WQEs posted */
byte cq[NPAIR * R]; /* landed, not polled: m' * NPK + k + 1, FIFO */
byte cqn[NPAIR];
/* ---- the network ---------------------------------------------------------- */
byte bag[NPAIR];    /* UD packets j -> i in flight: bit m' * NPK + k */
byte rq[NPAIR * QL]; /* RC s -> d, FIFO: rq[P(s, d) * QL ...] */
byte rqn[NPAIR];
byte rep_src[NRANK * 2]; /* repair writes in flight reading rank i's half h */
#if BUDGET < 255
byte budget = BUDGET; /* packets lost + NACKs while a packet is on its way */
#define SPEND budget--
#else
#define budget 1 /* unbounded */
#define SPEND skip
#endif

#ifdef BLOCK_BETWEEN
bit begun[NRANK]; /* the rank has begun call cn[i] (else: blocked between calls) */
#define BEGUN(i) begun[i]
#else
#define BEGUN(i) 1
#endif
#define MC(i) (cn[i] < NCALL && ISMC(cn[i]) && BEGUN(i))
#define ALL_GOT(i) (got[P(i, 0)] == FULL && got[P(i, 1)] == FULL && (NRANK < 3 || got[P(i, 2)] == FULL))
#define READY_FROM(i, p) (p == i || p >= NRANK || mready[P(i, p)] == ms[i] + 1)
#ifdef EARLY_LEAVE
#define READY_IN(i) 1
#else
#define READY_IN(i) (READY_FROM(i, 0) && READY_FROM(i, 1) && READY_FROM(i, 2))
#endif
#ifdef NO_REPAIR_WAIT
#define REPAIRS_DONE(i) 1
#else
#define REPAIRS_DONE(i) (rep_src[(i) * 2 + (cn[i] & 1)] == 0)
#endif
#define EXIT_OK(i) (ALL_GOT(i) && READY_IN(i) && REPAIRS_DONE(i))
/* every rank returned from call n-1; every rank has begun call n */
#define ALL_RETURNED(n) (cn[0] >= (n) && cn[1] >= (n) && (NRANK < 3 || cn[2] >= (n)))
#define HAS_BEGUN(p, n) (cn[p] > (n) || (cn[p] == (n) && BEGUN(p)))
#define ALL_BEGUN(n) (HAS_BEGUN(0, n) && HAS_BEGUN(1, n) && (NRANK < 3 || HAS_BEGUN(2, n)))
#ifdef NO_SEQ_CHECK
#define SEQ_OK(i, mm) 1
#else
#define SEQ_OK(i, mm) ((mm) == ms[i])
#endif

/* mready(v) from s arrives at d (a value d will never look at is not kept) */
inline ready_arrive(s, d, v) {
    printf("NET: mready(%d) of %d arrives at %d\n", v, s, d);
    if
    :: !CLEAR_OLD || v > ms[d] -> mready[P(d, s)] = v
    :: else -> skip
    fi
}

/* an RC message s -> d.  SLOW_READY unset: an mready with nothing ahead of
 * it arrives at once (it only enables d's return, which d may take at any
 * later time anyway; the messages behind it keep their FIFO order) */
inline rc_send(s, d, msg) {
    if
    :: READY_NOW && msg < K_NACK && rqn[P(s, d)] == 0 -> ready_arrive(s, d, msg - K_READY)
    :: else ->
        assert(rqn[P(s, d)] < QL); /* bound QL too small */
        rq[P(s, d) * QL + rqn[P(s, d)]] = msg;
        rqn[P(s, d)]++
    fi
}

/* once every block is in (first time only): mready(m+1) to everyone */
inline all_in(i) {
    if
    :: !ready_sent[i] && ALL_GOT(i) ->
        ready_sent[i] = 1;
        t = 0;
        do
        :: t < NRANK ->
            if
            :: t != i -> rc_send(i, t, K_READY + ms[i] + 1)
            :: else -> skip
            fi;
            t++
        :: else -> break
        od;
        t = 0
    :: else -> skip
    fi
}

/* nack[p] == m at rank i (in an mcast call): the repair, an RC write of its
 * half N&1 slot i into p's half N&1 slot i, immediate REPAIR(m) */
inline serve(i, p) {
    served[P(i, p)] = 1;
    rep_src[i * 2 + (cn[i] & 1)]++;
    printf("R%d: serves %d's NACK(%d)\n", i, p, ms[i]);
    rc_send(i, p, K_REPAIR + cn[i])
}

/* repair[p] == m at rank i: p's block is in its half N&1 slot p */
inline take_repair(i, p) {
    rcopied[P(i, p)] = 1;
    x = half[H(i, cn[i] & 1, p)];
    assert(x == D(p, cn[i])); /* C1: repaired block is not this call's */
    t = 0;
    do
    :: t < NPK -> outc[O(i, p, t)] = x; t++
    :: else -> break
    od;
    got[P(i, p)] = FULL;
    all_in(i);
    x = 0; t = 0
}

/* the head completion of Q_{i,p}: copy or discard; the slot posted again */
inline poll(i, p) {
    x = cq[P(i, p) * R] - 1;
    if
    :: R > 1 -> cq[P(i, p) * R] = cq[P(i, p) * R + R - 1]; cq[P(i, p) * R + R - 1] = 0
    :: else -> cq[P(i, p) * R] = 0
    fi;
    cqn[P(i, p)]--;
    wq[P(i, p)]++;
    if
    :: SEQ_OK(i, x / NPK) && got[P(i, p)] != FULL ->
        printf("R%d: packet (%d,%d) of %d copied in call %d\n", i, x / NPK, x % NPK, p, cn[i]);
        g = D(p, GSEQ(x / NPK)); /* the packet's data: p's block of its call */
        assert(g == D(p, cn[i])); /* C1: packet of another call copied to out */
        outc[O(i, p, x % NPK)] = g;
        g = 0;
        got[P(i, p)] = got[P(i, p)] | (1 << (x % NPK));
        all_in(i)
    :: else ->
        printf("R%d: packet (%d,%d) of %d discarded in call %d\n", i, x / NPK, x % NPK, p, cn[i])
    fi;
    x = 0
}

/* ---- the network ------------------------------------------------------ */

/* NACK(v) from s arrives at d: its word takes the value (NACK_MAX: only a
 * larger one) */
inline nack_set(d, s, v) {
    printf("NET: NACK(%d) of %d arrives at %d (in call %d)\n", v, s, d, cn[d]);
    if
    :: !NACK_KEEPS_MAX || nack[P(d, s)] == NONE || nack[P(d, s)] < v -> nack[P(d, s)] = v
    :: else -> skip
    fi
}

/* a message of s -> d arrives at d: the head (RC_ANY_ORDER: any one), and,
 * READY_NOW, the mreadys right behind it */
inline rc_deliver(s, d) {
    do
    :: true ->
        t = 0;
        do
        :: ANY_ORDER && t + 1 < rqn[P(s, d)] -> t++ /* any message, not the head */
        :: break
        od;
        y = rq[P(s, d) * QL + t];
        do
        :: t + 1 < rqn[P(s, d)] -> rq[P(s, d) * QL + t] = rq[P(s, d) * QL + t + 1]; t++
        :: else -> break
        od;
        rqn[P(s, d)]--;
        rq[P(s, d) * QL + rqn[P(s, d)]] = 0;
        v = y & 31;
        if
        :: y >= K_REPAIR ->
            printf("NET: repair of %d (call %d) lands at %d (in call %d)\n", s, v, d, cn[d]);
            assert(cn[d] >= v);     /* C3: repair lands before its NACK */
            assert(cn[d] <= v + 1); /* C3: repair lands where call N+2 writes */
            rep_src[s * 2 + (v & 1)]--;
            if
            :: !CLEAR_OLD || cn[d] == v ->
                half[H(d, v & 1, s)] = half[H(s, v & 1, s)];
                repair[P(d, s)] = MSEQ(v);
                if
                :: TAKE_NOW && cn[d] == v && !rcopied[P(d, s)] -> take_repair(d, s)
                :: else -> skip
                fi
            :: else -> skip /* d left call v: nobody reads the cell or the word for v */
            fi
        :: y >= K_NACK && y < K_REPAIR && CLEAR_OLD && v < ms[d] -> /* d left mcast call v */
            printf("NET: NACK(%d) of %d arrives at %d (in call %d): too late\n", v, s, d, cn[d])
        :: y >= K_NACK && y < K_REPAIR && (!CLEAR_OLD || v >= ms[d]) ->
            nack_set(d, s, v);
            if
            :: SERVE_NOW && MC(d) && ms[d] == v && !served[P(d, s)] -> serve(d, s)
            :: else -> skip
            fi
        :: y < K_NACK -> ready_arrive(s, d, v)
        fi;
        y = 0; v = 0; t = 0;
        if
        :: READY_NOW && rqn[P(s, d)] > 0 && rq[P(s, d) * QL] < K_NACK -> skip
        :: else -> break
        fi
    od
}

/* one packet of bag (i, j), any of them: into Q_ij's next WQE, or lost if
 * none is posted */
inline ud_deliver(i, j) {
    b = 0;
    do
    :: (bag[P(i, j)] >> b) & 1 -> break
    :: ((bag[P(i, j)] >> b) & 1) && (bag[P(i, j)] >> (b + 1)) != 0 -> b++
    :: ((bag[P(i, j)] >> b) & 1) == 0 -> b++
    od;
    bag[P(i, j)] = bag[P(i, j)] & ~(1 << b);
    if
    :: !LOSE_AT_SEND && budget > 0 -> SPEND /* lost */
    :: wq[P(i, j)] > 0 -> /* lands in the next posted slot */
        wq[P(i, j)]--;
        cq[P(i, j) * R + cqn[P(i, j)]] = b + 1;
        cqn[P(i, j)]++;
        if
        :: POLL_NOW && MC(i) -> poll(i, j)
        :: else -> skip
        fi
    :: else -> printf("NET: packet %d of %d to %d: no WQE\n", b, j, i)
    fi;
    b = 0
}

#define RC_OPT(s, d) \
    :: atomic { s < NRANK && d < NRANK && rqn[P(s, d)] > 0 -> rc_deliver(s, d) }
#define UD_OPT(i, j) \
    :: atomic { i < NRANK && j < NRANK && bag[P(i, j)] != 0 -> ud_deliver(i, j) }

proctype Net() {
    byte x, y, v, b, t, g;
end_net:
    do
    RC_OPT(0, 1)
    RC_OPT(1, 0)
    RC_OPT(0, 2)
    RC_OPT(2, 0)
    RC_OPT(1, 2)
    RC_OPT(2, 1)
    UD_OPT(0, 1)
    UD_OPT(1, 0)
    UD_OPT(0, 2)
    UD_OPT(2, 0)
    UD_OPT(1, 2)
    UD_OPT(2, 1)
    od
}

/* ---- a rank --------------------------------------------------------------- */

/* steps 1 and 2 of call N = cn[me]: own block into own half N&1 slot me
 * and out; mcast: the UD chain to every peer (each packet sent or lost;
 * the send completes here) and NACKs already in served */
inline begin_call() {
    if
    :: cn[me] < NCALL ->
        assert(rep_src[me * 2 + (cn[me] & 1)] == 0); /* C4: own half slot rewritten under a repair write */
        half[H(me, cn[me] & 1, me)] = D(me, cn[me]);
        t = 0;
        do
        :: t < NPK -> outc[O(me, me, t)] = D(me, cn[me]); t++
        :: else -> break
        od;
        j = 0;
        do
        :: j < NRANK -> got[P(me, j)] = 0; nacked[P(me, j)] = 0; served[P(me, j)] = 0; rcopied[P(me, j)] = 0; j++
        :: else -> break
        od;
        got[P(me, me)] = FULL;
        ready_sent[me] = 0;
        if
        :: ISMC(cn[me]) ->
            /* the chain reads own half slot me, just written (C4) */
            j = 0;
            do
            :: j < NRANK ->
                if
                :: j != me ->
                    t = 0;
                    do
                    :: t < NPK ->
                        if
                        :: bag[P(j, me)] = bag[P(j, me)] | (1 << (ms[me] * NPK + t))
                        :: LOSE_AT_SEND && budget > 0 -> SPEND;
                            printf("R%d: packet (%d,%d) to %d lost\n", me, ms[me], t, j)
                        fi;
                        t++
                    :: else -> break
                    od;
                    if
                    :: SERVE_NOW && nack[P(me, j)] == ms[me] -> serve(me, j)
                    :: else -> skip
                    fi
                :: else -> skip
                fi;
                j++
            :: else -> break
            od
        :: else -> skip
        fi;
        j = 0; t = 0
    :: else -> skip
    fi
}

/* return from call N, then begin N+1 */
inline leave() {
    j = 0;
    do
    :: j < NRANK ->
        t = 0;
        do
        :: t < NPK -> assert(outc[O(me, j, t)] == D(j, cn[me])); t++ /* C1: out at return */
        :: else -> break
        od;
        j++
    :: else -> break
    od;
    printf("R%d: returns from call %d\n", me, cn[me]);
    if
    :: ISMC(cn[me]) -> ms[me]++
    :: else -> skip
    fi;
    /* words and cells never looked at again are cleared (an old value only
     * ever compares unequal; other ranks' cells of half N&1 are read only in
     * the call that wrote them): fewer states, the same behaviour */
    j = 0;
    do
    :: CLEAR_OLD && j < NRANK ->
        if :: nack[P(me, j)] < ms[me] -> nack[P(me, j)] = NONE :: else -> skip fi;
        if :: repair[P(me, j)] < ms[me] -> repair[P(me, j)] = NONE :: else -> skip fi;
        if :: mready[P(me, j)] <= ms[me] -> mready[P(me, j)] = 0 :: else -> skip fi;
        if :: j != me -> half[H(me, cn[me] & 1, j)] = 0 :: else -> skip fi;
        j++
    :: else -> break
    od;
    j = 0;
    cn[me]++;
#ifdef BLOCK_BETWEEN
    begun[me] = 0
#else
    begin_call()
#endif
}

/* an other copy-based call completes: every block into own half N&1, out */
inline other_done() {
    j = 0;
    do
    :: j < NRANK ->
        if
        :: j != me ->
            half[H(me, cn[me] & 1, j)] = D(j, cn[me]);
            t = 0;
            do
            :: t < NPK -> outc[O(me, j, t)] = D(j, cn[me]); t++
            :: else -> break
            od
        :: else -> skip
        fi;
        j++
    :: else -> break
    od;
    j = 0; t = 0
}

/* nothing of p's block of this call left on its way to i: p sent it (p
 * is in mcast call m, or past it), no packet of it in the bag or landed */
#define SENT(p, mm) (ms[p] > (mm) || (MC(p) && ms[p] == (mm)))
#define GONE(i, p) (SENT(p, ms[i]) && ((bag[P(i, p)] >> (ms[i] * NPK)) & FULL) == 0 && \
                    (cqn[P(i, p)] < 1 || (cq[P(i, p) * R] - 1) / NPK != ms[i]) && \
                    (cqn[P(i, p)] < 2 || (cq[P(i, p) * R + 1] - 1) / NPK != ms[i]))
#define PEER_OPTS(p) \
    :: atomic { p != me && p < NRANK && MC(me) && cqn[P(me, p)] > 0 -> poll(me, p) } \
    :: atomic { p != me && p < NRANK && MC(me) && nack[P(me, p)] == ms[me] && !served[P(me, p)] -> serve(me, p) } \
    :: atomic { p != me && p < NRANK && MC(me) && repair[P(me, p)] == ms[me] && !rcopied[P(me, p)] -> take_repair(me, p) } \
    :: atomic { p != me && p < NRANK && MC(me) && got[P(me, p)] != FULL && !nacked[P(me, p)] && \
                (budget > 0 || GONE(me, p)) -> \
        if :: !GONE(me, p) -> SPEND :: else -> skip fi; \
        nacked[P(me, p)] = 1; printf("R%d: timeout, NACK(%d) to %d\n", me, ms[me], p); \
        rc_send(me, p, K_NACK + ms[me]) }

proctype Rank(byte me) {
    byte j, t, x, g;

    do
    :: cn[me] == NCALL -> break
    PEER_OPTS(0)
    PEER_OPTS(1)
    PEER_OPTS(2)
    :: atomic { MC(me) && EXIT_OK(me) -> leave() }
#ifdef BLOCK_BETWEEN
    /* blocked in another MPI call until every rank returned from the last
     * Allgather (a barrier, say): no hotbuf progress in there */
    :: atomic { !begun[me] && cn[me] < NCALL && ALL_RETURNED(cn[me]) -> begun[me] = 1; begin_call() }
#endif
#if OTHER
    :: atomic { BEGUN(me) && cn[me] < NCALL && !ISMC(cn[me]) && ALL_BEGUN(cn[me]) -> other_done(); leave() }
#endif
    od
}

init {
    byte i, me, j, t, x;
    atomic {
        i = 0;
        do
        :: i < NPAIR -> nack[i] = NONE; repair[i] = NONE; wq[i] = R; i++
        :: else -> break
        od;
        i = 0;
        /* every rank begins call 0 (the creation's last collective returned) */
        me = 0;
        do
        :: me < NRANK ->
#ifdef BLOCK_BETWEEN
            begun[me] = 1;
#endif
            begin_call(); me++
        :: else -> break
        od;
        me = 0;
        run Net();
        run Rank(0);
        run Rank(1);
#if NRANK > 2
        run Rank(2);
#endif
    }
}
