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

struct hb_region;

/* The registered area of one rank on one communicator.  Peers write into
 * it; nothing is ever cleared.
 *   ready[k]  zero-copy calls: "my receive buffer for this call is in
 *             slot[k]": from the step-k partner (recursive doubling) or,
 *             at HB_AG_RING_SLOT, from the right neighbour (ring)
 *   slot[k]   that buffer's address and rkey
 *   rd[k]     recursive doubling: "the data of step k is in place"
 *   data[s]   ring: "the data of step s is in place"
 *   buffer    two halves, alternating between calls (copy-based mode)
 * plus, for outgoing values, out (this rank's ready record and flag, the
 * source of the small writes when the device has no inline).
 *
 * Flags name their call and their writer.  The call: a flag's value is
 * HB_AG_FLAG(seq, fail), and a wait for call N passes on a value of call
 * N or later.  The writer: each flag word has exactly one writer for the
 * communicator's life (rd[k]: rank ^ 2^k; data[s]: the left neighbour;
 * ready[k]: the step-k partner; ready[HB_AG_RING_SLOT]: the right one),
 * so its values only grow and a writer's later value, arriving on the
 * same in-order connection, proves its earlier data landed.  Naming the
 * writer in the value instead would not do: with two writers a word's
 * value of call N could be overwritten by the other writer's call N+1
 * before the waiter reads it (wrong data with ">=", a hang with "==").
 * An earlier layout shared data[] between both algorithms: a ring wait of
 * call N then passed on a recursive doubling write of a later call from
 * another rank (tests/model/ag_flags.py finds it; it checks this one).
 *
 * fail (zero-copy calls) is the vote on whether every rank registered its
 * receive array: see allgather_algo.c. */
#define HB_AG_SLOTS 64
#define HB_AG_RING_SLOT (HB_AG_SLOTS - 1)
#define HB_AG_FLAG(seq, fail) ((uint64_t)(seq) << 1 | (uint64_t)(fail))
#define HB_AG_FLAG_SEQ(v) ((v) >> 1)
#define HB_AG_FLAG_FAIL(v) ((int)((v)&1))

struct hb_ag_record {
    uint64_t addr;
    uint32_t rkey, pad;
};

struct hb_ag_area {
    volatile uint64_t ready[HB_AG_SLOTS];
    volatile struct hb_ag_record slot[HB_AG_SLOTS];
    volatile uint64_t rd[HB_AG_SLOTS];
    struct hb_ag_record out;
    uint64_t out_flag;
    uint64_t pad[5];
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
    uint32_t ok; /* enum hb_ag_peer_state */
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
    struct hb_ag_comm *next, *prev; /* live states, for finalize */
};

/* Process-wide state of the RDMA Allgather (module state). */
struct hb_ag {
    const struct hb_ctx *ctx; /* from start */
    int on;                   /* agreed by every rank at start */
    int threads;              /* off for MPI_THREAD_MULTIPLE (any rank) */
    int keyval; /* the attribute that carries a communicator's state */
    struct hb_ag_comm *live; /* states with an attribute, for stop */
    struct hb_ag_summary stats;
};

/* allgather_comm.c: the attribute key, and freeing every state left. */
int hb_ag_keyval_create(struct hb_ag *ag);
void hb_ag_free_all(struct hb_ag *ag);

/* Returns the communicator's state, creating it collectively on first use. */
struct hb_ag_comm *hb_ag_comm_get(struct hb_ag *ag, MPI_Comm comm);

/* allgather_algo.c: one Allgather of block bytes per rank on a served
 * communicator: 0, or -1 when this call must go to PMPI (decided the same
 * on every rank). */
int hb_ag_run(struct hb_ag *ag, struct hb_ag_comm *c, const void *sbuf,
              int scount, MPI_Datatype stype, void *rbuf, int rcount,
              MPI_Datatype rtype, uint64_t block);

#endif
