/* hotbuf point-to-point, receiver pull: a Promela model of the protocol of
 * ../shared/P2P-DESIGN.md §5.2-5.13, checked with spin (tests/model/
 * run_spin.sh, `make test`: model/p2p_pull*).  What it must contain is
 * §5.14; where this model departs from it, the comment says why.
 *
 * Processes (one communicator c, receiver B, senders A and C):
 *   SenderA  switchable: REQ, GRANT, first MARKER, ring records with rseq
 *            and mpi_before stamps, MARKER{k} before an MPI run that
 *            follows ring records, credits, after a QP error the RESEND
 *            of its unacknowledged tail (§5.6, §5.11), and a CLOSE when it
 *            frees c (if it saw a GRANT), after which B's real free; a
 *            GONE for a GRANT that comes after its free.
 *   SenderC  MPI only (wildcards, receives MPI still holds).
 *   AppB     a bounded nondeterministic program: Irecv, Recv, Probe+Recv,
 *            Mprobe+Mrecv, one Cancel, one collective ("Blocked": only the
 *            progress hook runs there), entering pull by mode, granting.
 *   HotB     hotbuf's engine at B: claiming with Improbe(ANY,ANY), the CQ
 *            drain, the release merge, matching, the unexpected store,
 *            credits, RESEND dedupe (§5.7, §5.11), and (RNDV) the
 *            rendezvous reads settling.
 *   Net      (FAULT) RC placement in rseq order, A's completions, one QP
 *            error, SYNC_ACK delivery.
 *   Watchdog checks, when nothing else can move, the MPI progress rule and
 *            that nothing of hotbuf's is left behind.
 * MPI's own matching at B (the reference engine of §5.14, "MpiB") is not a
 * process: a message arriving by MPI is matched atomically in the sender's
 * step against receives still posted to PMPI (arrival matches the earliest
 * posted), else queued per sender (FIFO); posting to PMPI takes the
 * earliest queued message that matches; Improbe takes a per-sender head.
 *
 * Ghost state: a message's id is its send order per sender (A: 0..NA-1,
 * C: NA..NM-1); a receive's id is its posting order.  Every match, by MPI
 * or hotbuf, goes through do_match, which asserts N1, N2, exactly once and
 * "cancelled receives get no data".
 *
 * Variants (-D), each run by run_spin.sh, the broken ones must fail:
 *   NO_HOOK        the hook disabled while B sits in the collective (H9):
 *                  a Ssend waits for a match hotbuf owes.
 *   COUNT_GRANT    the DESIGN.md sketch's grant: REQ carries A's MPI send
 *                  count, B grants once that many were received, then A
 *                  sends everything by ring, with no marker and no stamps
 *                  (H1: the count is stale; N1).  Only the grant is the
 *                  sketch's; the receive side stays pull.
 *   BROKEN_RELEASE ring records released without the mpi_before check (N1).
 *   RESET_STAMPS   mpi_before counted since the *latest* marker, not the
 *                  first one of the period (N1; see a_cnt).
 *   RESEND_IN_ORDER  RESENDs handled only at the head of A's pulled queue,
 *                  behind a marker that waits for them (hang).
 *   NAIVE_RESEND   A resends only records without an RC completion and B
 *                  never acknowledges a duplicate: a matched ring Ssend
 *                  never completes, its SYNC_ACK died with the QP.
 *   RESEND_NO_FORCE  B takes a RESEND without first forcing the QP to
 *                  ERROR and draining its CQ, and drops any record not
 *                  above the highest taken (the merge's rule): a record
 *                  placed before the failed one, still in the CQ when the
 *                  RESEND comes, is dropped as a duplicate and lost (the
 *                  code did this until session 15: p2p_random's fault
 *                  runs, a wrong match or a hang).
 *   RECOVER_NO_MARKER  after the QP error, MPI sends without the marker
 *                  rule (§5.4/§5.6 read literally): a resent record is
 *                  overtaken and never released.
 *   MIGRATE_FORWARD  migration cancels and moves one receive at a time,
 *                  oldest first: a younger receive still in PMPI takes a
 *                  message that an older, migrated one matches (N2).
 *   MIGRATE_PARTIAL  migrate only the receives from A or ANY_SOURCE, as
 *                  §5.7 step 3 says, instead of every receive on c, as
 *                  shim/p2p/p2p_comm.c does: N2 fails when a migrated
 *                  ANY_SOURCE receive was posted before a receive left in
 *                  PMPI for C (§5.13 L2 assumes legacy receives are the
 *                  older ones; the migrated ones can be older).
 *   GRANT_MARKER   MARKER{0} at the grant, as hotbuf first did: when
 *                  nothing follows it, B frees c without claiming it and
 *                  it stays in MPI.  Run with NO_CLOSE: the CLOSE that A
 *                  sends once granted follows that marker too, so B
 *                  claims it before its real free.
 *   NO_CLOSE       B frees c in MPI at the application's free, without
 *                  waiting for A's CLOSE: a duplicate RESEND (a record B
 *                  took from the CQ, resent because A's completion failed)
 *                  still on its way is never claimed and stays in MPI.
 *   FAULT          the fault injector (the correct model runs with and
 *                  without it).
 *   REVOKE         revokes (shim/p2p/p2p_revoke.c), up to NREV: B sends
 *                  REVOKE at a wrapper entry; A leaves the ring and, once
 *                  every record it wrote is complete (RC completion, or
 *                  resent after the QP error), answers REVOKED{k = its
 *                  last rseq}; B frees its region (the channel: one per
 *                  process pair; one communicator here) once answered and
 *                  every record <= k is taken (CQ or RESEND), then a new
 *                  REQ gets a new region (epoch); a REQ before that gets
 *                  the same one.  Decision: a revoke leaves the order
 *                  bookkeeping alone (A's stamps and rseq, B's merge): an
 *                  MPI send after ring records goes after MARKER{k} as on
 *                  any live pair, and a new grant sends no new MARKER{0}
 *                  (a_opened), so for order a revoke is a run of MPI
 *                  sends.  Credits of a freed region are not returned to
 *                  the new one (the code: an epoch in the credit).  The
 *                  QP error stays A's to handle when revoked (a_recover:
 *                  a matched ring Ssend's SYNC_ACK may die with the QP;
 *                  with recovery only on GRANTED/LIVE pairs, revoke_fault
 *                  finds an Ssend that never completes).  Leaving PULL
 *                  and several communicators sharing the channel are not
 *                  modelled (the code frees the channel only when every
 *                  pair on it is revoked and answered: the same rule per
 *                  pair, summed).
 *   FREE_EARLY     B frees the region at the REVOKE, without waiting for
 *                  the answer: a record lands in a freed region.
 *   FREE_UNDRAINED B frees it at the answer, without waiting until every
 *                  record up to k is taken: a placed record is lost.
 *   REVOKE_NO_MARKER  after a revoke A sends by MPI without the marker
 *                  rule: an MPI message overtakes a ring record (N1).
 *   RNDV           rendezvous (shim/p2p/p2p_rndv.c): each of A's messages
 *                  is a Send, an Ssend or a large send; a large one by the
 *                  ring is a DATA_RNDV record, a descriptor of A's buffer,
 *                  kept and resent by A like a DATA_SYNC record (m_sync).
 *                  B merges and matches it like any record; at its match
 *                  (a receive, or a matched probe's fetch) B posts an RDMA
 *                  READ (m_rd), which HotB settles later: it completes
 *                  unless the QP error came first, then it fails and B
 *                  fails the peer.  The receive completes (m_got, once)
 *                  when the data is in place, read or from the record's
 *                  RESEND, and the read has settled; only then the
 *                  SYNC_ACK, and A's send completes at it (A reuses its
 *                  buffer: asserted never under a read, never before B
 *                  has the data).  A RESEND of a record still unmatched
 *                  gives it its payload (an ordinary message, acked at
 *                  its match); of one read and acked, a new SYNC_ACK.  The
 *                  Watchdog: a matched rendezvous receive completes.
 *   RNDV_EARLY_ACK B sends the SYNC_ACK at the match, before the read
 *                  completes: A reuses its buffer under the read.
 *   RNDV_DROP_RESEND  B takes the RESEND of a matched rendezvous record
 *                  whose read failed (or will) for a plain duplicate and
 *                  drops its payload: the receive never completes.
 * Bounds and reductions (chosen so run_spin.sh stays within minutes):
 *   NA, NC messages, NR receive slots, SLOTS ring credits; tags are fixed
 *   per message (A: 0 1 0 1, C: 1) while receive patterns vary; C sends
 *   Send only; PAT_SMALL / PAT_FIXED narrow the receive patterns, NO_PROBE,
 *   NO_MPROBE, NO_CANCEL, NO_PULL_MODE drop operations from B's program;
 *   RNDV takes NA <= 3 (one read step per message in HotB).
 * Abstracted away: hot versus cold (zero copy or staging: invisible to
 *   matching), large messages by MPI (they complete at match, like an MPI
 *   Ssend, which the model has; by the ring see RNDV), in RNDV: the
 *   descriptor, registrations, bounce buffers, truncation, empty reads
 *   (no read), a read's send queue full (a delay), and read failures
 *   other than the QP error (a remote access error, a failed
 *   registration: B fails the peer, which A learns as REJ, the same
 *   recovery as the QP error A sees here), Isend/Issend (a nonblocking send
 *   only widens interleavings A already has), leaving PULL (REVOKE: see
 *   above), REFUSE and timeouts (a grant that never comes is a run where B
 *   never grants), several communicators (rseq and k are per pair; one
 *   communicator keeps "records of c <= k" simple), CREDIT messages (a
 *   credit returns at release, immediately: A may always choose MPI, so a
 *   late credit adds no behaviour), the unexpected store's cap, datatypes,
 *   truncation, statuses beyond (source, tag), request handles and
 *   Wait/Test arrays, threads, comm names, Rsend/Bsend.
 */

#ifndef NA
#define NA 3
#endif
#ifndef NC
#define NC 1
#endif
#define NM (NA + NC)
#ifndef NR
#define NR 3
#endif
#ifndef SLOTS
#define SLOTS 2
#endif

#define SA 0  /* sender A */
#define SC 1  /* sender C */
#define ANY 2 /* MPI_ANY_SOURCE / MPI_ANY_TAG */
#define NONE 255
#define MSRC(m) ((m) < NA -> SA : SC)

/* In-band items in MPI's queues and hotbuf's pulled queue: a data message
 * is its id (< NM); a MARKER{k} is MARK+k; a RESEND of record r is RES+r.
 * Both travel with tag T*, which only an ANY_TAG receive could match. */
#define MARK 16
#define RES 32
/* CLOSE: A's last item on c, sent when A frees c (its records all complete:
 * RC completion, or resent), if it saw B's GRANT on it.  A GRANT that
 * comes after A's free is answered GONE on the private communicator
 * (b_gones below). */
#define CLS 250
#define QL (3 * NA + 3) /* A's MPI items: data, markers, resends, CLOSE */

/* ---- messages (ghost) -------------------------------------------------- */
#define M_UNSENT 0
#define M_SENT 1    /* sent, not matched */
#define M_MATCHED 2 /* matched (by a receive or a matched probe) */
byte m_tag[NM];
bit m_sync[NM];  /* Ssend */
bit m_ring[NM];  /* went by the ring (its SYNC_ACK is hotbuf's) */
bit m_acked[NM]; /* the Ssend completed */
byte m_st[NM];
#ifdef RNDV
/* Rendezvous (shim/p2p/p2p_rndv.c): a DATA_RNDV record carries only a
 * descriptor of A's buffer; B reads the payload at the match.  Sized past
 * NM: HotB's per-message read steps name ids 0..2 whatever NA is. */
#define RD_NONE 0    /* no read (not matched yet, or not a descriptor) */
#define RD_READING 1 /* matched, the RDMA READ in flight */
#define RD_OK 2      /* the read completed: the data is in the receive */
#define RD_FAILED 3  /* the read failed (QP error): settled, no data */
bit m_rndv[NM + 3]; /* went by the ring as a descriptor (a large send) */
bit m_pay[NM + 3];  /* B's message holds its payload after all: the record
                     * came whole by RESEND, or a RESEND gave it to the
                     * still unmatched record (an ordinary message now) */
#if NA > 3
#error "RNDV: HotB settles the reads of A's messages 0..2 only"
#endif
byte m_rd[NM + 3];
bit m_res[NM + 3];  /* a RESEND's payload is in the read's target */
bit m_got[NM + 3];  /* the read's receive completed (data delivered) */
#define RV_OPEN(r) (rv_st[r] == R_DONE && m_rd[rv_msg[r]] != RD_NONE && !m_got[rv_msg[r]])
#endif

/* ---- receives (ghost; index = posting order) ---------------------------- */
#define R_FREE 0
#define R_LEGACY 1  /* posted to PMPI, pending */
#define R_MANAGED 2 /* hotbuf's, pending */
#define R_DONE 3
#define R_CANCELLED 4
#define R_MIGRATING 5 /* cancelled in PMPI, not yet in hotbuf's matcher */
byte rv_src[NR], rv_tag[NR], rv_st[NR], rv_msg[NR];
byte nposted;
#define PENDING(r) (rv_st[r] == R_LEGACY || rv_st[r] == R_MANAGED || \
                    rv_st[r] == R_MIGRATING)
#define PM(s, t, m) (((s) == ANY || (s) == MSRC(m)) && ((t) == ANY || (t) == m_tag[m]))
#define RMATCH(r, m) PM(rv_src[r], rv_tag[r], m)

/* ---- MPI at B: per-sender queues of arrived, unmatched messages ------- */
byte mqA[QL], mqA_n;
byte mqC[NC + 1], mqC_n;

/* ---- hotbuf at B --------------------------------------------------------- */
bit pull;          /* c is in PULL */
byte pq[QL], pq_n; /* A's claimed items, in A's MPI order, not yet released */
byte pq_res;       /* how many of them are RESENDs */
byte ux[6], ux_n; /* unexpected store, in release order (NM <= 5) */
#define B_MPI 0
#define B_PRE 1  /* granted, before A's first marker */
#define B_LIVE 2
byte bA;   /* B's state of the pair (A, c) */
byte b_m;  /* A's MPI data released since the first marker */
byte b_rel;  /* every ring record <= b_rel released (ring head = b_rel+1) */
byte b_seen; /* CQ drained up to here */
#ifdef RESEND_NO_FORCE
byte b_hi;   /* highest record taken (CQ or RESEND) */
#define RK_DROP 7 /* drained and dropped as a duplicate */
bit b_ackmpi; /* a RESEND came: SYNC_ACKs by MPI */
#endif
bit b_dead;  /* B forced the QP to ERROR and drained: "seen" is final */
bit b_blocked; /* AppB inside the collective */
/* B freed c: its program is over and every message was matched (a correct
 * program receives everything before MPI_Comm_free).  hotbuf no longer
 * looks at c: an in-band item of A's that arrives later, or was never
 * claimed, stays in MPI (MPICH hands it to the next communicator that
 * reuses the context id), which the Watchdog's "in-band item never
 * claimed" catches. */
bit b_freed;
/* The application freed c; the real free (b_freed) waits until A's CLOSE
 * was claimed, if B took a record of A's: everything A sent on c before it,
 * a duplicate RESEND among them, is then claimed too (MPI's order per
 * sender).  NO_CLOSE frees at once, as the code did: a duplicate RESEND
 * still on its way stays in MPI, where MPICH hands it to the next
 * communicator that reuses the context id.  B awaits a CLOSE from A if it
 * granted A (not "took a record": then each CLOSE sent finds B holding c,
 * shim/p2p/p2p_comm.c says why). */
bit b_freeing, b_closed;
/* GRANTs B sent A, and GONEs A answered (a GRANT that came after A's
 * free: no CLOSE follows it).  A CLOSE is on its way while none came and
 * some GRANT has no GONE: A sends one if it saw any GRANT.  NO_GONE: A
 * drops such a GRANT (the first closing code) and B holds c for good
 * (Watchdog: "c held for good").  GONE_CLOSES: B takes a GONE for the
 * CLOSE, and frees c while A's CLOSE (sent under an earlier GRANT) and
 * what precedes it are still in MPI. */
byte b_grants, b_gones;
bit gone_wire; /* A's GONE on the private communicator */
#ifdef NO_HOOK
#define HOT_ON (!b_blocked && !b_freed)
#else
#define HOT_ON (!b_freed)
#endif

/* ---- the ring (index = rseq, 1..NA) ------------------------------------- */
#define RK_NONE 0
#define RK_WIRE 1   /* written by A, not placed */
#define RK_PLACED 2 /* in B's memory, completion in B's CQ */
#define RK_SEEN 3   /* drained by B (or received as RESEND) */
#define RK_REL 4    /* released into matching */
byte r_msg[NA + 2], r_before[NA + 2], r_st[NA + 2];
#ifdef REVOKE
byte r_ep[NA + 2]; /* the region the record was written to */
#endif
byte credits = SLOTS;

/* ---- A's pair state ----------------------------------------------------- */
#define P_MPI 0
#define P_REQ 1
/* GRANT seen, no ring record yet: MARKER{0} goes right before the first
 * one (shim/p2p/p2p_pair.h), never alone at the grant, where nothing may
 * follow it and it is left in MPI when c is freed. */
#define P_GRANTED 2
#define P_LIVE 3
/* After the QP error: MPI for good.  Decision: the marker rule still holds
 * (the next MPI data message is fenced by MARKER{k = last rseq}), and B
 * keeps the pair in its LIVE merge.  §5.4 says RECOVER -> MPI, and §5.6
 * step 1 sends "not LIVE" pairs straight to PMPI, which would drop that
 * marker: the next MPI message is then released before a record that
 * comes back as RESEND, overtakes it, and the record's stamp can never
 * equal m again, so it is never delivered (RECOVER_NO_MARKER fails). */
#define P_DEAD 4
byte pa;
bit req, granted;
#ifdef REVOKE
/* Off the ring after a REVOKE (TX_IDLE in shim/p2p/p2p_revoke.c): MPI
 * sends keep the marker rule and, once A sent its MARKER{0}, the stamps'
 * count (the pair's p2p_pair.h state stays LIVE); A may ask again, and a
 * new grant needs no new MARKER{0} (a_opened). */
#define P_OFF 5
#ifndef NREV
#define NREV 2
#endif
bit a_opened;  /* MARKER{0} sent: A's stamps run */
bit rvk_wire;  /* REVOKE, B -> A, on the private communicator */
bit rack_wire; /* REVOKED{rack_k}, A -> B: A's last record, all complete */
byte rack_k;
byte a_ep;     /* the region A writes to (its GRANT's) */
byte g_ep;     /* the region a GRANT in flight names */
byte nrev;     /* revokes so far (bounded) */
/* B's channel for A (one per process pair; one communicator here) */
#define CH_NONE 0
#define CH_UP 1
#define CH_REVOKING 2 /* REVOKE sent, not answered */
#define CH_WAIT 3     /* answered: records up to b_need must be taken */
byte ch;
bit bg;        /* B: the pair is granted and not revoked */
byte b_need;
byte ep;       /* B's regions freed so far: the current one's epoch */
#endif
#ifdef COUNT_GRANT
byte req_cnt;       /* A's MPI sends at REQ */
byte a_mpi_matched; /* A's MPI messages received at B */
#endif
byte a_rseq;     /* last ring record written */
/* mpi_since_marker (§5.6), stamped as mpi_before.  Decision: it counts
 * A's MPI data messages since the *first* marker of the LIVE period and is
 * never reset at later markers, because B's m counts the same (§5.7
 * Release).  §5.5's "since c's marker" reads as "since the latest"; reset
 * at every marker (on both sides), a record stamped after marker 2 can be
 * released while marker 2 is still in flight: RESET_STAMPS fails. */
byte a_cnt;
bit a_unfenced;  /* a ring record since the last marker */
bit a_coll;      /* A entered the collective */
bit a_closed;    /* A freed c (CLOSE sent if it saw a GRANT) */
bit a_closedue;  /* A saw a GRANT: B awaits its CLOSE */

/* ---- faults --------------------------------------------------------------- */
bit qp_fail;
byte net_next = 1; /* next record the network may place */
byte a_acked;      /* RC completions at A: records 1..a_acked */
bit ack_wire[NM];  /* a SYNC_ACK written into A's control area, in flight */
byte n_ackwire;

hidden byte j, k, kr, found, it, fa, fc;

/* ---- matching: every match, by MPI or by hotbuf, goes through here ------ */
inline do_match(mm, rr) {
    assert(PENDING(rr));          /* cancelled or completed receives get nothing */
    assert(m_st[mm] == M_SENT);   /* exactly once */
    k = (MSRC(mm) == SA -> 0 : NA);
    do /* N1: no earlier unmatched message of the same sender matches rr */
    :: k < mm -> assert(!(m_st[k] == M_SENT && RMATCH(rr, k))); k++ /* N1 */
    :: else -> break
    od;
    k = 0;
    do /* N2: no earlier-posted pending receive matches mm */
    :: k < rr -> assert(!(PENDING(k) && RMATCH(k, mm))); k++ /* N2 */
    :: else -> break
    od;
    printf("B: match msg %d -> recv %d\n", mm, rr);
    m_st[mm] = M_MATCHED;
    rv_st[rr] = R_DONE;
    rv_msg[rr] = mm;
#ifdef RNDV
    /* a descriptor matched (a receive, or a matched probe's hand-out):
     * the receive is matched, its data not there; B posts the read */
    if
    :: m_rndv[mm] && !m_pay[mm] -> m_rd[mm] = RD_READING; printf("B: read of msg %d posted\n", mm)
    :: else -> skip
    fi;
#endif
#ifdef COUNT_GRANT
    if
    :: MSRC(mm) == SA && !m_ring[mm] -> a_mpi_matched++
    :: else -> skip
    fi
#endif
}

/* Ssend acknowledgement when hotbuf matches: an MPI message's comes from
 * PMPI_Imrecv (issued at match), a ring message's is a SYNC_ACK, written
 * by RDMA, or on the private communicator once B's QP is dead (decision:
 * the design does not say how a SYNC_ACK travels after a fault). */
inline hot_ack(mm) {
#if defined(RNDV) && !defined(RNDV_EARLY_ACK)
    /* a read in flight: its receive is not done, the ack waits (rv_done) */
    if :: m_rd[mm] == RD_READING -> skip :: else ->
#endif
    if
    :: m_sync[mm] && m_ring[mm] ->
#ifdef FAULT
        if
#ifdef RESEND_NO_FORCE
        :: b_dead || b_ackmpi -> m_acked[mm] = 1
#else
        :: b_dead -> m_acked[mm] = 1
#endif
        :: else -> ack_wire[mm] = 1; n_ackwire++
        fi
#else
        m_acked[mm] = 1
#endif
    :: m_sync[mm] && !m_ring[mm] -> m_acked[mm] = 1
    :: else -> skip
    fi
#if defined(RNDV) && !defined(RNDV_EARLY_ACK)
    fi
#endif
}

/* A released item goes to the earliest-posted pending managed receive that
 * matches it, else to the unexpected store (§5.7 Matching). */
inline release(mm) {
    j = 0; found = NONE;
    do
    :: j < NR -> if
                 :: rv_st[j] == R_MANAGED && RMATCH(j, mm) -> found = j; break
                 :: else -> j++
                 fi
    :: else -> break
    od;
    if
    :: found != NONE -> do_match(mm, found); hot_ack(mm)
    :: else -> printf("B: msg %d -> unexpected store\n", mm); ux[ux_n] = mm; ux_n++
    fi
}

/* ---- MPI at B ------------------------------------------------------------- */
/* An item from sender s arrives: MPI matches the earliest-posted receive
 * still in PMPI that matches it, else queues it. */
inline mpi_arrive(s, itm) {
    j = 0; found = NONE;
    do
    :: j < NR -> if
                 :: rv_st[j] == R_LEGACY && (rv_src[j] == ANY || rv_src[j] == s) &&
                    (rv_tag[j] == ANY || (itm < NM && rv_tag[j] == m_tag[itm])) ->
                    found = j; break
                 :: else -> j++
                 fi
    :: else -> break
    od;
    if
    :: found != NONE ->
        assert(itm < NM); /* an in-band MARKER/RESEND reached a user receive */
        do_match(itm, found);
        if :: m_sync[itm] -> m_acked[itm] = 1 :: else -> skip fi
    :: else ->
        if
        :: s == SA -> mqA[mqA_n] = itm; mqA_n++
        :: else -> mqC[mqC_n] = itm; mqC_n++
        fi
    fi
}

inline mqA_del(ix) {
    j = ix;
    do
    :: j + 1 < mqA_n -> mqA[j] = mqA[j + 1]; j++
    :: else -> break
    od;
    mqA_n--; mqA[mqA_n] = 0
}
inline mqC_del(ix) {
    j = ix;
    do
    :: j + 1 < mqC_n -> mqC[j] = mqC[j + 1]; j++
    :: else -> break
    od;
    mqC_n--; mqC[mqC_n] = 0
}
inline ux_del(ix) {
    j = ix;
    do
    :: j + 1 < ux_n -> ux[j] = ux[j + 1]; j++
    :: else -> break
    od;
    ux_n--; ux[ux_n] = 0
}

/* The earliest message in MPI's queues matching (s, t): fa in mqA, fc in
 * mqC (NONE if none).  While c is not in pull the queues hold data only. */
inline mpi_find(s, t) {
    fa = NONE; fc = NONE;
    if
    :: s != SC -> j = 0;
        do
        :: j < mqA_n -> if
                        :: mqA[j] < NM && (t == ANY || t == m_tag[mqA[j]]) -> fa = j; break
                        :: else -> j++
                        fi
        :: else -> break
        od
    :: else -> skip
    fi;
    if
    :: s != SA -> j = 0;
        do
        :: j < mqC_n -> if
                        :: t == ANY || t == m_tag[mqC[j]] -> fc = j; break
                        :: else -> j++
                        fi
        :: else -> break
        od
    :: else -> skip
    fi
}

/* The earliest unexpected item matching (s, t) in hotbuf's store, in found. */
inline ux_find(s, t) {
    j = 0; found = NONE;
    do
    :: j < ux_n -> if
                   :: PM(s, t, ux[j]) -> found = j; break
                   :: else -> j++
                   fi
    :: else -> break
    od
}

/* Guards for blocking probes: some message matching (s, t) is there. */
#define UXH(s, t) ((ux_n > 0 && PM(s, t, ux[0])) || (ux_n > 1 && PM(s, t, ux[1])) || \
                   (ux_n > 2 && PM(s, t, ux[2])) || (ux_n > 3 && PM(s, t, ux[3])) || \
                   (ux_n > 4 && PM(s, t, ux[4])))
#define QAM(t, i) (mqA_n > i && mqA[i] < NM && ((t) == ANY || (t) == m_tag[mqA[i]]))
#define QCM(t, i) (mqC_n > i && ((t) == ANY || (t) == m_tag[mqC[i]]))
#define MQH(s, t) (((s) != SC && (QAM(t, 0) || QAM(t, 1) || QAM(t, 2) || QAM(t, 3))) || \
                   ((s) != SA && (QCM(t, 0) || QCM(t, 1))))
#define PROBE_READY(s, t) ((pull && UXH(s, t)) || (!pull && MQH(s, t)))

/* ---- B: entering pull, migration, grant (wrapper entry only) ----------- */
/* Every receive still posted to PMPI on c becomes hotbuf's with its
 * posting order (§5.7 step 3), as shim/p2p/p2p_comm.c does it: each is
 * cancelled, newest first; then, oldest first, each cancel is waited for
 * and a cancelled receive enters hotbuf's matcher (taking the earliest
 * unexpected message it matches).  A matched one is not pending any more.
 * Waiting runs MPI's progress (a matched receive's data may still be
 * coming), so messages arrive, and hotbuf may claim, between any two of
 * these steps; c is pulled from the first one.  MIGRATE_FORWARD cancels
 * and moves one receive at a time, oldest first, as hotbuf first did.  mk
 * is AppB's (the only caller). */
#ifdef MIGRATE_PARTIAL
#define MIGRATES(r) (rv_st[r] == R_LEGACY && rv_src[r] != SC)
#else
#define MIGRATES(r) (rv_st[r] == R_LEGACY)
#endif
inline adopt(rr) {
    ux_find(rv_src[rr], rv_tag[rr]);
    rv_st[rr] = R_MANAGED;
    if
    :: found != NONE -> it = ux[found]; ux_del(found); do_match(it, rr); hot_ack(it)
    :: else -> skip
    fi;
    it = 0
}

inline enter_pull() {
    atomic { printf("B: c enters pull, PMPI receives migrated\n"); pull = 1; mk = 0 };
#ifdef MIGRATE_FORWARD
    do
    :: mk < NR -> atomic { if :: MIGRATES(mk) -> adopt(mk) :: else -> skip fi; mk++ }
    :: else -> break
    od
#else
    mk = NR;
    do
    :: mk > 0 -> atomic { mk--; if :: MIGRATES(mk) -> rv_st[mk] = R_MIGRATING :: else -> skip fi }
    :: else -> break
    od;
    do
    :: mk < NR -> atomic { if :: rv_st[mk] == R_MIGRATING -> adopt(mk) :: else -> skip fi; mk++ }
    :: else -> break
    od
#endif
}

#ifdef COUNT_GRANT
/* The sketch: grant once B has received as many of A's MPI messages as the
 * REQ counted (and no PMPI receive could match A: migration). */
#define GRANT_OK (req && bA == B_MPI && a_mpi_matched >= req_cnt)
inline grant() {
    printf("B: GRANT (count)\n");
    bA = B_LIVE;
    granted = 1; b_grants++
}
#else
#ifdef REVOKE
/* Again after a revoke: REVOKED and REQ come in that order (one sender,
 * one communicator), so an answer is taken before the REQ behind it.  A
 * region not freed yet is granted again as it is (same epoch). */
#define GRANT_OK (req && !bg && !rack_wire && ch != CH_REVOKING)
inline grant() {
    printf("B: GRANT (epoch %d)\n", ep);
    if :: bA == B_MPI -> bA = B_PRE :: else -> skip fi;
    req = 0; bg = 1; ch = CH_UP; g_ep = ep;
    granted = 1; b_grants++
}
#else
#define GRANT_OK (req && bA == B_MPI)
inline grant() {
    printf("B: GRANT\n");
    bA = B_PRE;
    granted = 1; b_grants++
}
#endif

#ifdef REVOKE
/* B's region may go once the answer came and every record up to its k
 * was taken: drained from the CQ, or received as RESEND (§5.11). */
#define TAKEN(x) ((x) > b_need || r_st[x] >= RK_SEEN)
#ifdef FREE_UNDRAINED
#define FREE_OK (ch == CH_WAIT) /* the answer alone */
#else
#define FREE_OK (ch == CH_WAIT && TAKEN(1) && TAKEN(2) && TAKEN(3) && TAKEN(4) && TAKEN(5))
#endif
inline free_chan() {
    k = 1;
    do
    :: k <= a_rseq -> assert(r_st[k] != RK_WIRE && r_st[k] != RK_PLACED); k++ /* channel freed with records in flight */
    :: else -> break
    od;
    printf("B: channel freed (epoch %d)\n", ep);
    ep++; ch = CH_NONE; credits = SLOTS
}
/* REVOKE (never blocks).  FREE_EARLY frees the region right away, without
 * waiting for A's answer and its records. */
#define REVOKE_OK (bg && ch == CH_UP && nrev < NREV)
inline revoke() {
    printf("B: REVOKE\n");
    bg = 0; ch = CH_REVOKING; rvk_wire = 1; nrev++;
#ifdef FREE_EARLY
    free_chan()
#else
    skip
#endif
}
#endif
#endif

/* A new receive rr on c. */
inline post(rr) {
    printf("B: post recv %d (src %d, tag %d; 2 = ANY)\n", rr, rv_src[rr], rv_tag[rr]);
    if
    :: pull -> adopt(rr)
    :: else -> /* PMPI_Irecv: MPI takes the earliest queued match, any sender */
        mpi_find(rv_src[rr], rv_tag[rr]);
        rv_st[rr] = R_LEGACY;
        if
        :: fa != NONE -> it = mqA[fa]; mqA_del(fa); do_match(it, rr);
                         if :: m_sync[it] -> m_acked[it] = 1 :: else -> skip fi
        :: fc != NONE -> it = mqC[fc]; mqC_del(fc); do_match(it, rr);
                         if :: m_sync[it] -> m_acked[it] = 1 :: else -> skip fi
        :: fa == NONE && fc == NONE -> skip
        fi
    fi;
    it = 0
}

/* QP error at B (own detection or first RESEND): force ERROR, drain the CQ.
 * Records placed so far are "seen" for good; nothing is placed after. */
inline force() {
    k = 1;
    do
#ifdef RESEND_NO_FORCE
    :: k <= a_rseq -> if :: r_st[k] == RK_PLACED -> r_st[k] = RK_SEEN; b_hi = (k > b_hi -> k : b_hi) :: else -> skip fi; k++
#else
    :: k <= a_rseq -> if :: r_st[k] == RK_PLACED -> r_st[k] = RK_SEEN :: else -> skip fi; k++
#endif
    :: else -> break
    od;
    b_seen = a_rseq;
    printf("B: QP forced to ERROR, CQ drained\n");
    b_dead = 1
}

/* A message's tag and mode (Send or Ssend). */
inline pick_msg(x) {
#ifdef ANY_TAGS
    if :: m_tag[x] = 0 :: m_tag[x] = 1 fi;
#else
    /* fixed tags (A: 0 1 0 1, C: 1); receive patterns vary instead: what
     * matters is how a message's tag relates to the receives' */
    m_tag[x] = (x < NA -> x % 2 : 1);
#endif
#ifdef NO_SSEND
    m_sync[x] = 0
#elif defined(RNDV)
    /* A: Send, Ssend, or a large send, which by the ring is a rendezvous
     * (kept, resent and acknowledged like an Ssend's record) and by MPI is
     * MPI's own rendezvous (complete at the match: an Ssend's behaviour,
     * so SenderA clears m_rndv there) */
    if
    :: x < NA -> if
                 :: m_sync[x] = 0
                 :: m_sync[x] = 1
                 :: m_sync[x] = 1; m_rndv[x] = 1
                 fi
    :: else -> m_sync[x] = 0
    fi
#else
    if
    :: x < NA -> if :: m_sync[x] = 0 :: m_sync[x] = 1 fi
    :: else -> m_sync[x] = 0 /* C: Send (C's Ssends add nothing to check) */
    fi
#endif
}

/* ---- sender A ------------------------------------------------------------- */
inline a_mpi_send(itm) {
    mpi_arrive(SA, itm)
}

/* On a QP error: every record without an RC completion, in rseq order, by
 * MPI as RESEND (§5.11).  Decision: also every DATA_SYNC record whose
 * SYNC_ACK has not come, even if RC-completed, because the SYNC_ACK itself
 * may have died with the QP; B answers a duplicate of a matched DATA_SYNC
 * with a new SYNC_ACK on the private communicator.  Then MPI for good, but
 * the marker rule still holds: the next MPI data message is fenced. */
inline a_recover() {
    kr = 1;
    do
    :: kr <= a_rseq ->
#ifdef NAIVE_RESEND
        if :: kr > a_acked -> a_mpi_send(RES + kr) :: else -> skip fi;
#else
        if
        :: kr > a_acked || (m_sync[r_msg[kr]] && !m_acked[r_msg[kr]]) -> a_mpi_send(RES + kr)
        :: else -> skip
        fi;
#endif
        kr++
    :: else -> break
    od;
    printf("A: QP error seen; unacknowledged records resent by MPI\n");
    pa = P_DEAD
}

#ifdef COUNT_GRANT
/* the sketch: once granted, everything through the ring (waits for credits) */
#define SEND_OK (pa != P_LIVE || credits > 0)
#define RING_OK (pa == P_LIVE)
#define MPI_OK (pa != P_LIVE)
#else
#define SEND_OK 1
#define RING_OK ((pa == P_GRANTED || pa == P_LIVE) && credits > 0)
#define MPI_OK 1
#endif
#ifdef RECOVER_NO_MARKER
#define MARKER_DUE (pa != P_DEAD) /* §5.4/§5.6 read literally */
#elif defined(REVOKE_NO_MARKER)
#define MARKER_DUE (pa == P_LIVE || pa == P_DEAD) /* none once revoked */
#else
#define MARKER_DUE 1
#endif

#ifdef REVOKE
#define A_OPENED a_opened = 1
/* MPI data counts in the stamps once A's stamps run (p2p_pair.h: LIVE or
 * DEAD), also while the pair is off the ring or asking again */
#define A_COUNTS (pa == P_LIVE || pa == P_DEAD || a_opened)
#ifdef FAULT
#define A_QUIET (a_acked == a_rseq || pa == P_DEAD)
#else
#define A_QUIET 1
#endif
/* The QP error is A's to handle also once revoked (or asking again): a
 * matched ring Ssend's SYNC_ACK may have died with the QP, and only the
 * RESEND of its record brings a new one (the fault config finds the
 * Ssend that never completes when a revoke stops A's recovery). */
#define A_RECOVERS (qp_fail && pa != P_DEAD && a_rseq > 0)
#else
#define A_OPENED skip
#define A_COUNTS (pa >= P_LIVE)
#define A_RECOVERS (qp_fail && (pa == P_GRANTED || pa == P_LIVE))
#endif

#ifdef FAULT
#define A_CLOSE_OK (a_acked == a_rseq || pa == P_DEAD)
#else
#define A_CLOSE_OK 1
#endif

active proctype SenderA() {
    byte i = 0;  /* next message */
    byte w = NONE; /* the Ssend A waits for */
end_a:
    do
#ifdef REVOKE
    /* A asks on a send: never after its free */
    :: atomic { (pa == P_MPI || pa == P_OFF) && !a_closed -> pa = P_REQ; req = 1; printf("A: REQ\n") }
    :: atomic { pa == P_REQ && granted && !a_closed ->
        granted = 0; a_ep = g_ep; a_closedue = 1;
        if
        :: a_opened -> pa = P_LIVE; printf("A: GRANT seen again, LIVE\n")
        :: else -> pa = P_GRANTED; printf("A: GRANT seen\n")
        fi }
    /* REVOKE (after the GRANT before it): off the ring; the answer waits
     * until every record is complete (RC completion, or resent after the
     * QP error) */
    :: atomic { rvk_wire && pa != P_REQ && A_QUIET ->
        rvk_wire = 0;
        if :: pa == P_GRANTED || pa == P_LIVE -> pa = P_OFF :: else -> skip fi;
        rack_k = a_rseq; rack_wire = 1;
        printf("A: REVOKE seen, REVOKED k=%d\n", a_rseq) }
#endif
    :: atomic { pa == P_MPI && !a_closed -> pa = P_REQ; req = 1; printf("A: REQ\n");
#ifdef COUNT_GRANT
        req_cnt = i
#endif
       }
    /* GRANT seen.  Decision: the first marker (k = 0) goes before the
     * first ring record (B holds ring records until it, so a pair that only
     * sends by ring after the grant would otherwise hang; §5.6 sends
     * markers only before MPI runs that follow ring records), and not
     * earlier: MPI data sent in between is before the marker, plain. */
#ifndef REVOKE
    :: atomic { pa == P_REQ && granted && !a_closed -> a_closedue = 1;
#if defined(COUNT_GRANT)
        pa = P_LIVE; printf("A: GRANT seen, LIVE\n")
#elif defined(GRANT_MARKER)
        pa = P_LIVE; printf("A: GRANT seen, LIVE\n"); a_mpi_send(MARK + 0)
#else
        pa = P_GRANTED; printf("A: GRANT seen\n")
#endif
       }
#endif
#ifdef FAULT
    :: atomic { A_RECOVERS -> a_recover() }
#endif
    :: atomic { w != NONE && m_acked[w] -> assert(m_st[w] == M_MATCHED); /* Ssend completes only after its match */
#ifdef RNDV
        /* A's buffer is free again: no read of it may be in flight, and B
         * must have the data (read, or a RESEND's payload) */
        assert(!m_rndv[w] || (m_rd[w] != RD_READING && (m_rd[w] == RD_OK || m_res[w] || m_pay[w]))); /* rendezvous send completes before B has its data */
#endif
        w = NONE }
    :: atomic { i < NA && w == NONE && SEND_OK ->
        pick_msg(i);
        m_st[i] = M_SENT;
        if
        :: RING_OK -> /* ring */
            if
            :: pa == P_GRANTED -> /* the first record: MARKER{0} first */
                printf("A: MARKER k=0\n"); a_mpi_send(MARK + 0); pa = P_LIVE; A_OPENED
            :: else -> skip
            fi;
#ifdef REVOKE
            assert(a_ep == ep); /* a record written into a freed channel */
            r_ep[a_rseq + 1] = a_ep;
#endif
            credits--;
            printf("A: msg %d (tag %d, ssend %d) by ring, rseq %d, mpi_before %d\n", i, m_tag[i], m_sync[i], a_rseq + 1, a_cnt);
#ifdef RNDV
            if :: m_rndv[i] -> printf("A: msg %d is a rendezvous (descriptor only)\n", i) :: else -> skip fi;
#endif
            a_rseq++;
            r_msg[a_rseq] = i;
            r_before[a_rseq] = a_cnt;
#ifdef FAULT
            r_st[a_rseq] = RK_WIRE;
#else
            r_st[a_rseq] = RK_PLACED;
#endif
            m_ring[i] = 1;
            a_unfenced = 1
        :: MPI_OK -> /* MPI (any size, no credits, or just chosen) */
            if
            :: a_unfenced && MARKER_DUE -> printf("A: MARKER k=%d\n", a_rseq); a_mpi_send(MARK + a_rseq); a_unfenced = 0;
#ifdef RESET_STAMPS
                a_cnt = 0
#endif
            :: else -> skip
            fi;
#ifdef RNDV
            m_rndv[i] = 0;
#endif
            printf("A: msg %d (tag %d, ssend %d) by MPI\n", i, m_tag[i], m_sync[i]);
            a_mpi_send(i);
            if :: A_COUNTS -> a_cnt++ :: else -> skip fi
        fi;
        if :: m_sync[i] -> w = i :: else -> skip fi;
        i++
       }
    :: atomic { i == NA && w == NONE && !a_coll -> a_coll = 1; printf("A: enters the collective\n") }
    /* A frees c once every send completed and every record is complete
     * (the code: hb_p2p_chan_send waits for its write's completion, and a
     * kept record's send completes at its SYNC_ACK) */
    :: atomic { i == NA && w == NONE && !a_closed && A_CLOSE_OK ->
        a_closed = 1;
        if :: a_closedue -> printf("A: frees c, CLOSE\n"); a_mpi_send(CLS) :: else -> skip fi }
#ifndef NO_GONE
    /* a GRANT after A's free: its pair is gone, GONE (the code: p2p_grant.c) */
    :: atomic { pa == P_REQ && granted && a_closed ->
        granted = 0; gone_wire = 1; printf("A: GRANT after the free, GONE\n");
#ifdef REVOKE
        pa = P_OFF; /* a REVOKE of the pair is still answered */
#endif
       }
#endif
    od
}

/* ---- sender C: MPI only ----------------------------------------------------- */
active proctype SenderC() {
    byte i = NA;
    byte w = NONE;
end_c:
    do
    :: atomic { i < NM && w == NONE ->
        pick_msg(i);
        m_st[i] = M_SENT;
        printf("C: msg %d (tag %d) by MPI\n", i, m_tag[i]);
        mpi_arrive(SC, i);
        if :: m_sync[i] -> w = i :: else -> skip fi;
        i++
       }
    :: atomic { w != NONE && m_acked[w] -> assert(m_st[w] == M_MATCHED); w = NONE } /* Ssend completes only after its match */
    od
}

/* ---- hotbuf's engine at B ----------------------------------------------------- */
#if defined(BROKEN_RELEASE) || defined(COUNT_GRANT)
#define STAMP_OK(x) 1
#else
#define STAMP_OK(x) (r_before[x] == b_m)
#endif

/* The release merge (§5.7 Release), B-local steps:
 * - A's pulled queue, head first: data is released (and counted once A is
 *   LIVE); MARKER{k} is consumed when every record <= k is released;
 * - the ring head is released iff its stamp equals A's MPI data released
 *   since the first marker; its slot's credit goes back. */
#define PQ_HEAD_OK (pq_n > 0 && pq[0] < RES && \
                    (pq[0] < MARK || bA != B_LIVE || b_rel >= pq[0] - MARK))
#define RING_HEAD_OK (b_rel < a_rseq && r_st[b_rel + 1] == RK_SEEN && bA == B_LIVE && \
                      STAMP_OK(b_rel + 1))

inline pq_head() {
    it = pq[0];
    j = 0;
    do
    :: j + 1 < pq_n -> pq[j] = pq[j + 1]; j++
    :: else -> break
    od;
    pq_n--; pq[pq_n] = 0;
    if
    :: it < NM ->
        if :: bA == B_LIVE -> b_m++ :: else -> skip fi;
        release(it)
    :: else -> /* a marker */
        printf("B: MARKER k=%d consumed\n", it - MARK);
        assert(bA != B_MPI); /* a marker from a sender never granted */
        if
        :: bA == B_PRE -> bA = B_LIVE; b_m = 0; printf("B: first MARKER, pair LIVE\n")
        :: else ->
#ifdef RESET_STAMPS
            b_m = 0
#else
            skip
#endif
        fi
    fi;
    it = 0
}

inline ring_head() {
    b_rel++;
    r_st[b_rel] = RK_REL;
    printf("B: ring record %d released\n", b_rel);
#ifdef REVOKE
    if :: r_ep[b_rel] == ep -> credits++ :: else -> skip fi; /* a freed region's slot */
#else
    credits++;
#endif
    release(r_msg[b_rel])
}

/* Every step of the engine is one event that other processes can see
 * (a claim, a CQ completion, a RESEND, the QP forced), followed by the
 * B-local releases it enables, in every order (nondeterministic).  Doing
 * the local steps at once, inside the same pass, is what a progress pass
 * does (it loops until nothing moves) and keeps the state space small;
 * the order among them stays adversarial. */
inline closure() {
    do
    :: PQ_HEAD_OK -> pq_head()
    :: RING_HEAD_OK -> ring_head()
    :: else -> break
    od
}

#ifdef RNDV
/* The read's receive completes (hb_p2p_req_deliver_ring from rv_done):
 * once, with data in place (read, or a RESEND's payload), and only then
 * the SYNC_ACK (by MPI once B's QP is dead).  RNDV_EARLY_ACK sent it at
 * the match already. */
inline rv_done(x) {
    assert(!m_got[x]); /* rendezvous data delivered twice */
    assert(m_rd[x] == RD_OK || m_res[x]); /* rendezvous receive completes without its data */
    m_got[x] = 1;
    printf("B: rendezvous receive of msg %d complete\n", x);
#ifndef RNDV_EARLY_ACK
    hot_ack(x)
#else
    skip
#endif
}

/* A read in flight settles: it completes (the data placed) unless the QP
 * error came first, then it fails, and B fails the peer (forced ERROR,
 * hb_p2p_chan_rx_failed); the receive then waits for the RESEND's
 * payload, unless it came already. */
inline rd_settle(x) {
    if
    :: !qp_fail -> m_rd[x] = RD_OK; printf("B: read of msg %d complete\n", x); rv_done(x)
    :: else -> m_rd[x] = RD_FAILED; printf("B: read of msg %d failed\n", x);
        if :: !b_dead -> force() :: else -> skip fi;
        if :: m_res[x] -> rv_done(x) :: else -> skip fi
    fi;
    closure()
}
#endif

active proctype HotB() {
end_h:
    do
    /* Improbe(ANY_SOURCE, ANY_TAG): a per-sender head.  C is never switched
     * on: released at once.  A's go through its pulled queue. */
    :: atomic { HOT_ON && pull && mqC_n > 0 -> it = mqC[0]; mqC_del(0); release(it); it = 0 }
    :: atomic { HOT_ON && pull && mqA_n > 0 ->
        it = mqA[0]; mqA_del(0);
        printf("B: pulled A's item %d (>=%d marker, >=%d resend)\n", it, MARK, RES);
        if
        :: it == CLS -> b_closed = 1 /* A sends nothing on c after it */
        :: else ->
            if
            :: it >= RES -> pq_res++
            :: else -> skip
            fi;
            pq[pq_n] = it; pq_n++
        fi;
        it = 0;
        closure() }
    /* the real free of c, once A's CLOSE is in (if one is due) */
#ifdef GONE_CLOSES
    :: atomic { gone_wire -> gone_wire = 0; b_gones++; b_closed = 1 }
#else
    :: atomic { gone_wire -> gone_wire = 0; b_gones++ }
#endif
    :: atomic { b_freeing && !b_freed && (b_closed || b_gones == b_grants) ->
        b_freed = 1; printf("B: frees c in MPI\n") }
#ifdef FAULT
    /* RESEND{r}: decision: handled wherever it sits in A's pulled queue,
     * not at its head.  A marker sent before A knew of the error may wait
     * for exactly this record, and it sits ahead of it (§5.11 says "they
     * satisfy pending MARKER gates", which needs this).  Order holds:
     * the record enters the ring queue and is released by its stamp. */
#ifdef RESEND_IN_ORDER
    :: atomic { HOT_ON && pq_n > 0 && pq[0] >= RES ->
        found = 0;
#else
    :: atomic { HOT_ON && pq_res > 0 ->
        found = 0;
        do
        :: pq[found] < RES -> found++
        :: else -> break
        od;
#endif
        it = pq[found] - RES;
        j = found;
        do
        :: j + 1 < pq_n -> pq[j] = pq[j + 1]; j++
        :: else -> break
        od;
        pq_n--; pq[pq_n] = 0; pq_res--;
#ifdef RESEND_NO_FORCE
        b_ackmpi = 1; /* its SYNC_ACKs by MPI from now, as before */
        if
        :: it <= b_hi -> /* duplicate, by the merge's rule */
#else
        if :: !b_dead -> force() :: else -> skip fi;
        if
        :: r_st[it] == RK_SEEN || r_st[it] == RK_REL -> /* duplicate */
#endif
#ifdef RNDV
            /* a rendezvous record's RESEND carries the payload
             * (hb_p2p_sync_rx_dup, hb_p2p_rndv_resent): unmatched, the
             * record takes it along (an ordinary message from now, acked
             * at its match); matched with its read in flight or failed,
             * it goes into the read's target, and the receive completes
             * once the read has settled too; read and acked already, a
             * new SYNC_ACK (below) */
            fa = r_msg[it];
            if
            :: m_rndv[fa] && m_st[fa] == M_SENT -> m_pay[fa] = 1;
                printf("B: RESEND gives unmatched msg %d its payload\n", fa)
            :: m_rndv[fa] && m_st[fa] == M_MATCHED && m_rd[fa] != RD_NONE && !m_got[fa] ->
#ifdef RNDV_DROP_RESEND
                printf("B: RESEND of matched msg %d dropped as a duplicate\n", fa)
#else
                m_res[fa] = 1; printf("B: RESEND payload of msg %d into the read's target\n", fa);
                if :: m_rd[fa] == RD_FAILED -> rv_done(fa) :: else -> skip fi
#endif
            :: else ->
#endif
#ifndef NAIVE_RESEND
            if
            :: m_sync[r_msg[it]] && m_st[r_msg[it]] == M_MATCHED -> m_acked[r_msg[it]] = 1
            :: else -> skip
            fi
#else
            skip
#endif
#ifdef RNDV
            fi;
            fa = 0
#endif
        :: else -> r_st[it] = RK_SEEN; /* lost on the ring: now seen */
#ifdef RESEND_NO_FORCE
            b_hi = it;
#endif
#ifdef RNDV
            m_pay[r_msg[it]] = 1; /* by MPI whole: an ordinary record */
#endif
            printf("B: RESEND of record %d taken\n", it)
        fi;
        it = 0;
        closure() }
    :: atomic { HOT_ON && qp_fail && !b_dead -> force(); closure() }
#endif
    /* the CQ, in rseq order */
#ifdef RESEND_NO_FORCE
    /* a record not above the highest taken is dropped as a duplicate (the
     * code's rule, hb_mg_ring), also when that one came by RESEND */
    :: atomic { HOT_ON && !b_dead && b_seen < a_rseq && r_st[b_seen + 1] == RK_PLACED ->
        b_seen++;
        if
        :: b_seen <= b_hi -> r_st[b_seen] = RK_DROP;
            printf("B: ring record %d dropped (%d taken)\n", b_seen, b_hi)
        :: else -> r_st[b_seen] = RK_SEEN; b_hi = b_seen;
            printf("B: ring record %d seen\n", b_seen)
        fi;
        closure() }
#else
    :: atomic { HOT_ON && !b_dead && b_seen < a_rseq && r_st[b_seen + 1] == RK_PLACED ->
        b_seen++; r_st[b_seen] = RK_SEEN;
        printf("B: ring record %d seen\n", b_seen);
        closure() }
#endif
    /* local steps enabled by someone else (a grant; the end of the
     * collective without the hook) */
    :: atomic { HOT_ON && (PQ_HEAD_OK || RING_HEAD_OK) -> closure() }
#ifdef RNDV
    /* reads, each settling in its own step, in any order (A's messages
     * 0..2: the rndv configurations have NA <= 3) */
    :: atomic { HOT_ON && m_rd[0] == RD_READING -> rd_settle(0) }
    :: atomic { HOT_ON && m_rd[1] == RD_READING -> rd_settle(1) }
    :: atomic { HOT_ON && m_rd[2] == RD_READING -> rd_settle(2) }
#endif
    od
}

/* ---- B's program ------------------------------------------------------------ */
/* A receive slot's pattern: source in {A, C, ANY}, tag in {0, 1, ANY}. */
#if defined(PAT_FIXED)
inline pick(s, t) {
    s = ANY; t = ANY
}
#elif defined(PAT_SMALL)
/* fewer programs: C is only reached by wildcards */
inline pick(s, t) {
    if :: s = SA :: s = ANY fi;
    if :: t = 0 :: t = ANY fi
}
#else
inline pick(s, t) {
    if :: s = SA :: s = SC :: s = ANY fi;
    if :: t = 0 :: t = 1 :: t = ANY fi
}
#endif

active proctype AppB() {
    byte r = NONE, ps, pt, pm = NONE, mk;
    bit cancelled, coll_done;
    do
    /* wrapper entries that change hotbuf's state */
    :: GRANT_OK -> if :: !pull -> enter_pull() :: else -> skip fi; atomic { grant() }
#ifdef REVOKE
    /* revokes (idle channel, the test switch, Comm_free), their answers,
     * and the region freed once its records are taken */
    :: atomic { REVOKE_OK -> revoke() }
    :: atomic { rack_wire -> rack_wire = 0; b_need = rack_k; ch = CH_WAIT;
                printf("B: REVOKED k=%d\n", b_need) }
    :: atomic { FREE_OK -> free_chan() }
#endif
#ifndef NO_PULL_MODE
    :: !pull -> enter_pull() /* HOTBUF_P2P_PULL=all / after:N */
#endif
    /* Irecv (a blocking Recv is an Irecv followed by the final wait, or the
     * Recv after a Probe below) */
    :: atomic { nposted < NR -> r = nposted; nposted++;
                pick(rv_src[r], rv_tag[r]); post(r) };
       r = NONE
#ifndef NO_PROBE
    /* Probe (blocking), then Recv with the status's source and tag */
    :: nposted < NR ->
        atomic { pick(ps, pt) };
end_probe:
        atomic { PROBE_READY(ps, pt) ->
            if
            :: pull -> ux_find(ps, pt); pm = ux[found]
            :: else -> mpi_find(ps, pt);
                if
                :: fa != NONE -> pm = mqA[fa]
                :: fc != NONE -> pm = mqC[fc]
                fi
            fi;
            printf("B: Probe -> msg %d\n", pm);
            ps = 0; pt = 0 };
        /* the Recv's wrapper entry may grant first */
        if
        :: GRANT_OK -> if :: !pull -> enter_pull() :: else -> skip fi; atomic { grant() }
        :: true -> skip
        fi;
        atomic {
            r = nposted; nposted++;
            rv_src[r] = MSRC(pm); rv_tag[r] = m_tag[pm];
            post(r) };
end_precv:
#ifdef RNDV
        atomic { rv_st[r] == R_DONE && !RV_OPEN(r) -> assert(rv_msg[r] == pm); r = NONE; pm = NONE } /* Probe then Recv */
#else
        atomic { rv_st[r] == R_DONE -> assert(rv_msg[r] == pm); r = NONE; pm = NONE } /* Probe then Recv */
#endif
#endif
#ifndef NO_MPROBE
    /* Mprobe (blocking), then Mrecv: a matched probe is a match */
    :: nposted < NR ->
        atomic { r = nposted; nposted++; pick(rv_src[r], rv_tag[r]) };
end_mprobe:
        atomic { PROBE_READY(rv_src[r], rv_tag[r]) ->
            if
            :: pull -> ux_find(rv_src[r], rv_tag[r]); pm = ux[found]; ux_del(found);
                rv_st[r] = R_MANAGED
            :: else -> mpi_find(rv_src[r], rv_tag[r]);
                if
                :: fa != NONE -> pm = mqA[fa]; mqA_del(fa)
                :: fc != NONE -> pm = mqC[fc]; mqC_del(fc)
                fi;
                rv_st[r] = R_LEGACY
            fi;
            printf("B: Mprobe recv %d\n", r);
            do_match(pm, r) };
        /* Mrecv: the handle's message (an MPI item keeps its MPI_Message; a
         * ring item became a real one by a self-send); the ack comes now. */
#ifdef RNDV
        /* a descriptor is read first (hb_p2p_rndv_fetch, inside the
         * Mprobe), and its SYNC_ACK goes at the read's completion */
end_fetch:
        atomic { m_rd[pm] == RD_NONE || m_got[pm] ->
            assert(rv_msg[r] == pm); /* Mrecv gets Mprobe's */
#ifdef RNDV_EARLY_ACK
            hot_ack(pm); /* the hand-out is a matched probe's match */
#else
            if :: m_rd[pm] == RD_NONE -> hot_ack(pm) :: else -> skip fi;
#endif
            r = NONE; pm = NONE }
#else
        atomic { assert(rv_msg[r] == pm); hot_ack(pm); r = NONE; pm = NONE } /* Mrecv gets Mprobe's */
#endif
#endif
#ifndef NO_CANCEL
    /* Cancel the latest receive if it is still pending */
    :: atomic { !cancelled && nposted > 0 && PENDING(nposted - 1) ->
        printf("B: cancel recv %d\n", nposted - 1);
        cancelled = 1; rv_st[nposted - 1] = R_CANCELLED }
#endif
    /* a collective with A: only the hook runs hotbuf in here */
    :: atomic { !coll_done -> b_blocked = 1; printf("B: enters the collective\n") };
end_coll:
        atomic { a_coll -> b_blocked = 0; coll_done = 1; printf("B: leaves the collective\n") }
    :: coll_done -> break
    od;
    /* wait for every receive still pending, in posting order */
    r = 0;
    do
    :: r < NR ->
end_wait:
#ifdef RNDV
        !PENDING(r) && !RV_OPEN(r); r++ /* a matched descriptor: its read too */
#else
        !PENDING(r); r++
#endif
    :: else -> break
    od;
    /* MPI_Comm_free, once every message was matched */
    r = 0;
    do
    :: r < NM && m_st[r] == M_MATCHED -> r++
    :: r == NM -> break
    :: else -> goto end_free
    od;
#ifdef NO_CLOSE
    b_freed = 1;
#else
    b_freeing = 1;
#endif
    printf("B: frees c\n");
end_free:
    skip
}

#ifdef FAULT
/* ---- the network ------------------------------------------------------------ */
active proctype Net() {
end_n:
    do
    /* RC places records in rseq order, until B forces the QP to ERROR */
    :: atomic { !b_dead && net_next <= a_rseq && r_st[net_next] == RK_WIRE ->
        printf("NET: record %d placed\n", net_next);
        r_st[net_next] = RK_PLACED; net_next++ }
    /* A's completions, in order, only for placed records, before the error */
    :: atomic { !qp_fail && a_acked + 1 < net_next -> a_acked++ }
    /* one QP error, once A has written a record */
    :: atomic { !qp_fail && a_rseq > 0 -> qp_fail = 1; printf("NET: QP error\n") }
    /* SYNC_ACKs in flight land unless the QP failed first */
    :: atomic { !qp_fail && n_ackwire > 0 ->
        k = 0;
        do
        :: k < NM -> if :: ack_wire[k] -> m_acked[k] = 1; ack_wire[k] = 0 :: else -> skip fi; k++
        :: else -> break
        od;
        n_ackwire = 0 }
    od
}
#endif

/* ---- when nothing can move --------------------------------------------------- */
/* Every execution of this model is finite (every step consumes a bounded
 * resource: messages, receive slots, ring records, one fault, one grant),
 * so "a matching send and receive both started eventually complete" (MPI's
 * progress rule, §3.5) holds iff it holds in every state where nothing can
 * move, which spin's timeout marks.  The rule is checked there; the
 * processes' blocking points are valid end states (a program can hang by
 * itself: a receive nobody sends to), so a hang is accepted only when MPI
 * would hang as well. */
active proctype Watchdog() {
    timeout -> printf("quiescent: nothing can move\n");
    d_step {
        k = 0;
        do
        :: k < NR ->
            j = 0;
            do
            :: j < NM -> assert(!(PENDING(k) && m_st[j] == M_SENT && RMATCH(k, j))); j++ /* progress rule */
            :: else -> break
            od;
            k++
        :: else -> break
        od;
#ifdef RNDV
        /* a matched rendezvous receive completes (read, or RESEND) */
        j = 0;
        do
        :: j < NM -> assert(!(m_st[j] == M_MATCHED && m_rd[j] != RD_NONE && !m_got[j])); j++ /* matched rendezvous receive never completes */
        :: else -> break
        od;
#endif
        /* a matched Ssend completes (its acknowledgement is not lost) */
        j = 0;
        do
        :: j < NM -> assert(!(m_sync[j] && m_st[j] == M_MATCHED && !m_acked[j])); j++ /* matched Ssend never completes */
        :: else -> break
        od;
        /* nothing of hotbuf's left: in-band items consumed, every ring
         * record released (after a fault: resent and deduplicated) */
        assert(pq_n == 0 || b_freed); /* hotbuf left in-band items (freeing c drops them) */
        /* the application freed c on both sides: MPI frees it too */
        assert(!b_freeing || !a_closed || b_freed); /* c held for good */
        j = 0;
        do
        :: j < mqA_n -> assert(mqA[j] < NM); j++ /* in-band item never claimed */
        :: else -> break
        od;
        k = 1;
        do
        :: k <= a_rseq -> assert(r_st[k] == RK_REL); k++ /* ring record never released */
        :: else -> break
        od
    }
}
