/* One MPI_Allgather on hotbuf's RDMA (see allgather.h).
 *
 * Every call gathers size blocks of B bytes into one contiguous array
 * `buf` on every rank: the receive buffer itself (zero-copy), or one half
 * of the communicator's registered collective buffer (copy-based: the
 * blocks are copied out at the end).
 *
 * Copy-based calls need no handshake: the halves' addresses are known
 * since the creation, and half N&1 is free at every peer when call N
 * writes into it.  Why: finishing call N-1 needs every rank's block of
 * N-1, so a rank in call N knows that every rank has started N-1, hence
 * finished N-2, the last call that used the same half.  Zero-copy calls
 * write into each peer's own receive buffer, so each rank first tells the
 * peers that write to it where that buffer is (a "ready" record).
 *
 *   recursive doubling (2^k ranks): at step k exchange the 2^k blocks held
 *       so far with rank ^ 2^k: one RDMA write, then its data flag;
 *   ring (other sizes, large blocks): size-1 steps, each forwarding to the
 *       right neighbour the block received from the left one.
 *
 * Writes on one reliable connection are placed in order, so a peer that
 * sees a flag also sees the data written before it.  A peer that fails in
 * the middle of a collective cannot be worked around (the other ranks are
 * inside the same call): hotbuf says so in one line and aborts the job.
 */
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "allgather_int.h"
#include "core/progress.h"
#include "core/track_mpi.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "transport/transport.h"

struct ag_call {
    struct hb_ag *ag;
    struct hb_ag_comm *c;
    struct hb_transport *t;
    uint64_t seq, block;
    int zcopy;
    char *buf;                   /* size x block bytes, this rank's gathered array */
    uint32_t lkey, rkey;         /* of buf */
    unsigned small;              /* flags for the 8/16-byte writes (inline when possible) */
    struct hb_tr_op last[HB_AG_SLOTS + 1]; /* last write to each destination */
    int dest[HB_AG_SLOTS + 1], ndest;
};

static void fatal(const struct ag_call *a, int to, const char *what)
{
    fprintf(stderr, "hotbuf: rank %d: MPI_Allgather on RDMA: %s (rank %d of the communicator: %s); "
                    "aborting, the other ranks are inside the same call\n",
            a->ag->ctx->rank, what, to, hb_transport_peer_reason(a->t, a->c->peers[to].world));
    PMPI_Abort(a->c->comm, 1);
}

/* Remembers the last write to each destination: waited for at the end. */
static struct hb_tr_op *slot_for(struct ag_call *a, int to)
{
    for (int i = 0; i < a->ndest; i++)
        if (a->dest[i] == to)
            return &a->last[i];
    a->dest[a->ndest] = to;
    return &a->last[a->ndest++];
}

static void post(struct ag_call *a, int to, const void *src, size_t len, uint32_t lkey,
                 uint64_t raddr, uint32_t rkey, unsigned flags)
{
    struct hb_tr_op *op = slot_for(a, to);
    for (;;) {
        int rc = hb_transport_write(a->t, a->c->peers[to].world, src, len, lkey, raddr, rkey,
                                    flags, op);
        if (rc == HB_TR_OK)
            return;
        if (rc != HB_TR_BUSY)
            fatal(a, to, "a write failed");
        hb_progress(); /* send queue full: completions free it */
    }
}

/* A small value from this rank's area to a field of rank to's area. */
/* Flags are signaled: the last write to each destination is a flag, and
 * waiting for its own completion is cheaper than a fence write. */
static void post_small(struct ag_call *a, int to, const void *src, size_t len, size_t field,
                       unsigned signal)
{
    const struct hb_ag_peer *p = &a->c->peers[to];
    post(a, to, src, len, a->c->lkey, p->area + field, p->rkey, a->small | signal);
}

/* Waits until a peer's write of this call has landed in *flag.  No time
 * limit: a peer may enter the collective much later; only its failure
 * ends the wait. */
static void wait_flag(struct ag_call *a, volatile uint64_t *flag, int from)
{
    for (unsigned spins = 1; *flag < a->seq; spins++) {
        hb_progress();
        if ((spins & 63) == 0)
            sched_yield(); /* oversubscribed: the peer may need this CPU */
        if ((spins & 1023) == 0) {
            hb_progress_yield(NULL);
            if (hb_transport_peer_state(a->t, a->c->peers[from].world) == HB_PEER_FAILED)
                fatal(a, from, "a peer failed");
        }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

/* Tells rank to where this rank's array is, in its slot k. */
static void send_ready(struct ag_call *a, int to, int k)
{
    post_small(a, to, &a->c->area->out, sizeof(a->c->area->out),
               offsetof(struct hb_ag_area, slot) + (size_t)k * sizeof(struct hb_ag_record), 0);
    post_small(a, to, &a->c->area->out_seq, sizeof(uint64_t),
               offsetof(struct hb_ag_area, ready) + (size_t)k * sizeof(uint64_t), HB_TR_F_SIGNAL);
}

/* Where rank peer's array is for this call: its half of the collective
 * buffer (copy-based), or what its ready record says (zero-copy). */
static struct hb_ag_record destination(struct ag_call *a, int peer, int k)
{
    const struct hb_ag_comm *c = a->c;
    if (!a->zcopy) {
        uint64_t offset = (uint64_t)(c->buffer - (char *)c->area) + (a->seq & 1) * c->half;
        return (struct hb_ag_record){c->peers[peer].area + offset, c->peers[peer].rkey, 0};
    }
    wait_flag(a, &c->area->ready[k], peer);
    return (struct hb_ag_record){c->area->slot[k].addr, c->area->slot[k].rkey, 0};
}

/* Bytes [off, off+len) of the array to the same place at rank to, then the
 * step's data flag. */
static void send_blocks(struct ag_call *a, int to, const struct hb_ag_record *dst, uint64_t off,
                        uint64_t len, int step)
{
    post(a, to, a->buf + off, len, a->lkey, dst->addr + off, dst->rkey, 0);
    post_small(a, to, &a->c->area->out_seq, sizeof(uint64_t),
               offsetof(struct hb_ag_area, data) + (size_t)step * sizeof(uint64_t), HB_TR_F_SIGNAL);
}

static void recursive_doubling(struct ag_call *a)
{
    const struct hb_ag_comm *c = a->c;
    for (int k = 0; a->zcopy && (1 << k) < c->size; k++)
        send_ready(a, c->rank ^ (1 << k), k);
    for (int k = 0; (1 << k) < c->size; k++) {
        int partner = c->rank ^ (1 << k);
        struct hb_ag_record dst = destination(a, partner, k);
        uint64_t first = (uint64_t)((c->rank >> k) << k);
        send_blocks(a, partner, &dst, first * a->block, ((uint64_t)1 << k) * a->block, k);
        wait_flag(a, &c->area->data[k], partner);
    }
}

static void ring(struct ag_call *a)
{
    const struct hb_ag_comm *c = a->c;
    int p = c->size, right = (c->rank + 1) % p, left = (c->rank + p - 1) % p;
    if (a->zcopy)
        send_ready(a, left, HB_AG_RING_SLOT);
    struct hb_ag_record dst = destination(a, right, HB_AG_RING_SLOT);
    for (int s = 0; s < p - 1; s++) {
        uint64_t blk = (uint64_t)((c->rank - s + p) % p);
        send_blocks(a, right, &dst, blk * a->block, a->block, s);
        wait_flag(a, &c->area->data[s], left);
    }
}

/* count x type at src into bytes contiguous bytes at dst (or back with
 * unpack): memcpy for packed predefined types, MPI's own copy otherwise. */
static void pack(const void *src, int count, MPI_Datatype type, void *dst, uint64_t bytes)
{
    if (hb_dt_contiguous_bytes(count, type) == bytes)
        memcpy(dst, src, bytes);
    else
        PMPI_Sendrecv(src, count, type, 0, 0, dst, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_SELF,
                      MPI_STATUS_IGNORE);
}

static void unpack(const void *src, uint64_t bytes, void *dst, int count, MPI_Datatype type)
{
    if (hb_dt_contiguous_bytes(count, type) == bytes)
        memcpy(dst, src, bytes);
    else
        PMPI_Sendrecv(src, (int)bytes, MPI_BYTE, 0, 0, dst, count, type, 0, 0, MPI_COMM_SELF,
                      MPI_STATUS_IGNORE);
}

/* This rank's own block into its place in the array. */
static void place_own_block(struct ag_call *a, const void *sbuf, int scount, MPI_Datatype stype,
                            void *rbuf, int rcount, MPI_Datatype rtype)
{
    char *mine = a->buf + (uint64_t)a->c->rank * a->block;
    if (sbuf != MPI_IN_PLACE) {
        pack(sbuf, scount, stype, mine, a->block);
    } else if (a->buf != rbuf) {
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(rtype, &lb, &extent);
        pack((char *)rbuf + (MPI_Aint)a->c->rank * rcount * extent, rcount, rtype, mine, a->block);
    }
}

/* Where the array lives for this call.  A receive buffer that cannot be
 * registered stops the job (see fatal()); hb_ag_run keeps that unlikely by
 * going zero-copy only below half of every rank's registration cap. */
static void choose_buffer(struct ag_call *a, int zcopy, void *rbuf, int direct,
                          struct hb_region **reg, char **tmp)
{
    struct hb_ag_comm *c = a->c;
    uint64_t total = (uint64_t)c->size * a->block;
    if (!zcopy) {
        a->buf = c->buffer + (a->seq & 1) * c->half;
        a->lkey = c->lkey;
        a->rkey = c->rkey;
        return;
    }
    a->buf = direct ? rbuf : (*tmp = malloc(total));
    if (!a->buf || hb_rdma_register(a->ag->ctx->rdma, a->buf, total, reg))
        fatal(a, c->rank, "the receive buffer cannot be registered");
    a->lkey = hb_region_mr(*reg)->lkey;
    a->rkey = hb_region_mr(*reg)->rkey;
}

int hb_ag_run(struct hb_ag *ag, struct hb_ag_comm *c, const void *sbuf, int scount,
              MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, uint64_t block)
{
    const struct hb_config *cfg = ag->ctx->cfg;
    uint64_t total = (uint64_t)c->size * block;
    int zcopy = block >= cfg->ag_zcopy || total > c->half;
    if (total > 0x7fffffff || (zcopy && total > c->zcopy_max))
        return -1; /* the same on every rank: total and zcopy_max are shared */
    int use_ring = !c->pow2 || block >= cfg->ag_ring;
    int direct = hb_dt_contiguous_bytes(rcount, rtype) == block;
    struct ag_call a = {.ag = ag, .c = c, .t = ag->ctx->rdma->tr, .seq = ++c->seq, .block = block,
                        .zcopy = zcopy};
    struct hb_transport_info info;
    hb_transport_get_info(a.t, &info);
    a.small = info.max_inline >= sizeof(struct hb_ag_record) ? HB_TR_F_INLINE : 0;

    struct hb_region *reg = NULL;
    char *tmp = NULL;
    choose_buffer(&a, zcopy, rbuf, direct, &reg, &tmp);
    c->area->out = (struct hb_ag_record){(uint64_t)(uintptr_t)a.buf, a.rkey, 0};
    c->area->out_seq = a.seq;
    place_own_block(&a, sbuf, scount, stype, rbuf, rcount, rtype);

    if (use_ring)
        ring(&a);
    else
        recursive_doubling(&a);
    for (int i = 0; i < a.ndest; i++) /* our sources stay untouched until read */
        if (hb_transport_wait(a.t, &a.last[i], hb_progress_yield, NULL) != HB_TR_OK)
            fatal(&a, a.dest[i], "a write did not complete");

    if (a.buf != rbuf)
        unpack(a.buf, total, rbuf, rcount * c->size, rtype);
    if (reg)
        hb_regcache_put(ag->ctx->rdma->cache, reg);
    free(tmp);
    ag->stats.algos[use_ring ? (zcopy ? HB_AG_RING_ZCOPY : HB_AG_RING_COPY)
                             : (zcopy ? HB_AG_RD_ZCOPY : HB_AG_RD_COPY)]++;
    ag->stats.calls_rdma++;
    ag->stats.bytes_rdma += total;
    return 0;
}
