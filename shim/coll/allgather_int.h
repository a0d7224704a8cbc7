/* Internals of the RDMA Allgather.  allgather.c owns the module state
 * (struct hb_ag) and hands it down to allgather_comm.c and
 * allgather_algo.c, which never call back up. */
#ifndef HOTBUF_ALLGATHER_INT_H
#define HOTBUF_ALLGATHER_INT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "allgather_stats.h"
#include "core/ctx.h"
#include "transport/transport.h"

struct hb_region;

/* The area of one rank on one communicator, registered: peers write the
 * gathered data and the ready records into it.
 *   slot[k]   zero-copy calls: a peer's receive buffer for this call
 *             (address and rkey), from the step-k partner (recursive
 *             doubling) or, at HB_AG_RING_SLOT, from the right neighbour
 *   buffer    two halves, alternating between calls (copy-based mode)
 * plus the flag words, which no peer writes: each write a peer makes to
 * this rank is one RDMA WRITE WITH IMMEDIATE, and this rank's immediate
 * dispatcher (hb_ag_on_imm, inside its progress) sets the word the
 * immediate names:
 *   ready[k]  "slot[k] holds my receive buffer for this call"
 *   rd[k]     recursive doubling: "the data of step k is in place"
 *   data[s]   ring: "the data of step s is in place"
 *   direct[r] direct (small blocks, at most HB_AG_SLOTS ranks): "rank r's
 *             block is in place"
 * and, for outgoing values, out (this rank's ready record, the source of
 * that write when the device has no inline).
 *
 * What is relied on.  The InfiniBand specification does not order the
 * placement of the bytes within one message: a "last byte" or trailer
 * written by the same RDMA WRITE may become visible before the bytes
 * ahead of it, so it can never say that the data is there.  What it does
 * promise is that the responder generates the receive completion of an
 * RDMA WRITE WITH IMMEDIATE only after the write's data is placed in
 * memory, and that the messages of one reliable connection complete in
 * the order they were sent.  So an immediate taken from the completion
 * queue proves its own data landed, and an earlier message from the same
 * writer too.  Nothing here reads data before its immediate was seen.
 *
 * Flags name their call and their writer.  The call: a flag's value is
 * HB_AG_FLAG(seq, fail), and a wait for call N passes on a value of call
 * N or later.  The writer: each word has exactly one writer for the
 * communicator's life (rd[k]: rank ^ 2^k; data[s]: the left neighbour;
 * ready[k]: the step-k partner; ready[HB_AG_RING_SLOT]: the right one),
 * so its values only grow.  Naming the writer in the value instead would
 * not do: with two writers a word's value of call N could be overwritten
 * by the other writer's call N+1 before the waiter reads it (wrong data
 * with ">=", a hang with "==").  An earlier layout shared data[] between
 * both algorithms: a ring wait of call N then passed on a recursive
 * doubling write of a later call from another rank.  tests/model/
 * ag_flags.py checks the immediates' scheme exhaustively, and that the
 * shared layout fails.
 *
 * The immediate's 28-bit body (the class, HB_IMM_CLASS_AG, is on top):
 *   index (6 bits)  k of rd[k] or ready[k], r of direct[r] and of the
 *                   multicast words; unused for the ring, whose steps
 *                   arrive in order from one writer and are counted
 *   kind (3)        HB_AG_IMM_RD, _RING, _READY, _DIRECT, _MREADY, _MNACK,
 *                   _MREPAIR
 *   fail (1)        the writer's vote (zero-copy calls, allgather_algo.c)
 *   seq (3)         the call number modulo 8: a peer is at most one call
 *                   ahead of this rank and every immediate of a call is
 *                   taken within that call, so 3 bits name it
 *   id (15)         the receiver's number for the communicator (sent at
 *                   creation), which finds the state among all served. */
#define HB_AG_SLOTS 64
#define HB_AG_RING_SLOT (HB_AG_SLOTS - 1)
#define HB_AG_FLAG(seq, fail) ((uint64_t)(seq) << 1 | (uint64_t)(fail))
#define HB_AG_FLAG_SEQ(v) ((v) >> 1)
#define HB_AG_FLAG_FAIL(v) ((int)((v)&1))

enum {
    HB_AG_IMM_RD = 0,
    HB_AG_IMM_RING = 1,
    HB_AG_IMM_READY = 2,
    HB_AG_IMM_DIRECT = 3,
    /* multicast (allgather_mcast.c), index: the writer's rank */
    HB_AG_IMM_MREADY = 4,  /* "I have every block of this call" */
    HB_AG_IMM_MNACK = 5,   /* "send me your block of this call over RC" */
    HB_AG_IMM_MREPAIR = 6, /* "my block of this call is in your half" */
};
#define HB_AG_IDS (1u << 15)
#define HB_AG_IMM_BODY(id, seq, fail, kind, index)                             \
    ((uint32_t)(id) << 13 | ((uint32_t)(seq)&7) << 10 |                        \
     (uint32_t)(fail) << 9 | (uint32_t)(kind) << 6 | (uint32_t)(index))
#define HB_AG_IMM_ID(b) ((b) >> 13)
#define HB_AG_IMM_SEQ(b) (((b) >> 10) & 7)
#define HB_AG_IMM_FAIL(b) ((int)(((b) >> 9) & 1))
#define HB_AG_IMM_KIND(b) (((b) >> 6) & 7)
#define HB_AG_IMM_INDEX(b) ((b)&63)

struct hb_ag_record {
    uint64_t addr;
    uint32_t rkey, pad;
};

struct hb_ag_area {
    volatile uint64_t ready[HB_AG_SLOTS];
    volatile struct hb_ag_record slot[HB_AG_SLOTS];
    volatile uint64_t rd[HB_AG_SLOTS];
    volatile uint64_t direct[HB_AG_SLOTS];
    /* multicast calls (allgather_mcast.c), by the writer's rank */
    volatile uint64_t mready[HB_AG_SLOTS];
    volatile uint64_t mnack[HB_AG_SLOTS];
    volatile uint64_t mrepair[HB_AG_SLOTS];
    struct hb_ag_record out;
    uint64_t pad[6];
    volatile uint64_t
        data[]; /* max(size, HB_AG_SLOTS) entries, then the buffer */
};

/* Whether a rank can take part, as it tells the others at creation. */
enum hb_ag_peer_state {
    HB_AG_PEER_OFF = 0,   /* no transport or cache, or HOTBUF_ALLGATHER=0 */
    HB_AG_PEER_READY = 1, /* transport, cache and area ready */
    HB_AG_PEER_NO_MEMORY =
        2, /* its area could not be allocated or registered */
};

/* What every rank learns about each other rank at creation. */
struct hb_ag_peer {
    uint64_t area;      /* address of its struct hb_ag_area */
    uint64_t zcopy_max; /* bytes it can register for a receive buffer */
    uint32_t rkey;
    int32_t world; /* transport peer */
    uint32_t node;
    uint32_t ok;      /* enum hb_ag_peer_state */
    uint32_t id;      /* its number for the communicator, in its immediates */
    uint32_t msg_max; /* its device's largest message (one write) */
    uint32_t mc_mtu;  /* 0: no multicast; else its packets' size at most */
    struct hb_tr_mgroup group; /* the multicast group it sends to */
};

struct hb_ag_comm {
    MPI_Comm comm; /* the application's (the state is its attribute) */
    int rank, size, pow2;
    int reason; /* -1: served; else enum hb_ag_comm_reason */
    struct hb_ag_peer *peers;
    struct hb_ag_area *area;
    size_t area_len, data_entries, half;
    char *buffer; /* the two halves */
    struct hb_region
        *region;         /* the area's registration (from the cache), held */
    uint32_t lkey, rkey; /* of the area */
    uint64_t seq;        /* calls on this communicator so far */
    uint64_t zcopy_max;  /* the smallest zcopy_max of all ranks */
    uint64_t msg_max;    /* the smallest msg_max of all ranks */
    uint32_t id;         /* this rank's number for it (HB_AG_IDS: none) */
    /* The last writes of the copy-based calls, one per destination that
     * was sent something not inline, by half: call N's source is half
     * N&1, written again by call N+2 at the earliest, which waits for
     * them (hb_ag_settle) before it places its own block; so does the
     * state's end.  Call N+1 need not: waiting for N's acknowledgements
     * there put a round trip of the NIC's into every call.  Inline
     * writes are not kept: their source was free when they were posted. */
    struct hb_tr_op pend[2][HB_AG_SLOTS + 1];
    int npend[2];
    uint32_t max_inline; /* the transport's, read once at creation */
    uint64_t ring_seq;   /* the ring call whose data immediates arrive */
    size_t ring_next;    /* ... and how many of them arrived */
    struct hb_ag_mc *mc; /* multicast (allgather_mcast.c); NULL: not used */
    struct hb_ag_comm *next, *prev; /* live states, for finalize */
};

/* Process-wide state of the RDMA Allgather (module state). */
struct hb_ag {
    const struct hb_ctx *ctx; /* from start */
    int on;                   /* agreed by every rank at start */
    int threads;              /* off for MPI_THREAD_MULTIPLE (any rank) */
    int keyval; /* the attribute that carries a communicator's state */
    struct hb_ag_comm *live;   /* states with an attribute, for stop */
    struct hb_ag_comm **by_id; /* states by id, for the immediates */
    uint32_t nids;             /* entries of by_id */
    struct hb_ag_summary stats;
    int mc_warned; /* a multicast set-up failure was told */
};

/* allgather_comm.c: the attribute key, and freeing every state left. */
/* Waits for c's pending writes from half (0 or 1; -1: both); -1, or the
 * transport peer of one that failed. */
int hb_ag_settle(struct hb_ag *ag, struct hb_ag_comm *c, int half);
int hb_ag_keyval_create(struct hb_ag *ag);
void hb_ag_free_all(struct hb_ag *ag);

/* The immediate dispatcher's entry for HB_IMM_CLASS_AG (ctx: the module
 * state): sets the flag word the immediate names.  An immediate for no
 * live state (a protocol error) is counted as stray. */
void hb_ag_on_imm(void *ctx, int peer, uint32_t body, uint32_t byte_len);

/* Returns the communicator's state, creating it collectively on first use. */
struct hb_ag_comm *hb_ag_comm_get(struct hb_ag *ag, MPI_Comm comm);

/* A call that cannot go on (a write failed, a peer died) inside a
 * collective the other ranks are in too: says what (how names the
 * algorithm) and which peer, with the transport's reason, once, and
 * aborts c's job.  Falling back is not possible there: the others would
 * wait for data this rank will never send. */
_Noreturn void hb_ag_abort(const struct hb_ag *ag, const struct hb_ag_comm *c,
                           int to, const char *how, const char *what);

/* allgather_mcast.c.  hb_ag_mc_possible: whether c's creation entries
 * allow multicast (every rank offers it, 3..16 ranks; the same answer on
 * every rank).  hb_ag_mc_open, on every rank where it is possible: joins
 * the others' groups and posts every receive; 0, or -1 and why (the
 * creation's vote then turns it off everywhere).  hb_ag_mc_close undoes
 * it (c->mc NULL is fine). */
int hb_ag_mc_possible(const struct hb_ag_comm *c);
int hb_ag_mc_open(struct hb_ag *ag, struct hb_ag_comm *c, char *why,
                  size_t len);
void hb_ag_mc_close(struct hb_ag *ag, struct hb_ag_comm *c);
/* This rank's group and packet size for its creation entry. */
void hb_ag_mc_describe(struct hb_ag *ag, struct hb_ag_peer *me);
/* The largest block a multicast call takes on c (0: none). */
uint64_t hb_ag_mc_block_max(const struct hb_ag_comm *c);
/* One call (copy-based: a->buf is half seq&1 with this rank's block in
 * place; out the contiguous receive buffer or NULL).  Never fails: a
 * lost packet is asked for again; a failed peer aborts the job. */
struct hb_ag_mc_call {
    uint64_t seq, block;
    char *buf, *out;
    uint32_t lkey;
};
void hb_ag_mc_run(struct hb_ag *ag, struct hb_ag_comm *c,
                  const struct hb_ag_mc_call *a);

/* allgather_algo.c: one Allgather of block bytes per rank on a served
 * communicator: 0, or -1 when this call must go to PMPI (decided the same
 * on every rank). */
int hb_ag_run(struct hb_ag *ag, struct hb_ag_comm *c, const void *sbuf,
              int scount, MPI_Datatype stype, void *rbuf, int rcount,
              MPI_Datatype rtype, uint64_t block);

#endif
