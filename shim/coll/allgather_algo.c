/* One MPI_Allgather on hotbuf's RDMA (see allgather.h).
 *
 * Every call gathers size blocks of B bytes into one contiguous array
 * `buf` on every rank: the receive buffer itself (zero-copy), or one half
 * of the communicator's registered collective buffer (copy-based: the
 * blocks are copied out as they come in, copy_out).
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
 *       so far with rank ^ 2^k;
 *   ring (other sizes, large blocks): size-1 steps, each forwarding to the
 *       right neighbour the block received from the left one;
 *   direct (small blocks, copy-based, up to 64 ranks): one step, this
 *       rank's block to every other rank.  More operations than recursive
 *       doubling (size-1 against log2(size)), but no chain of steps: a
 *       rank waits for no one before it writes, which is what counts when
 *       a write costs little next to a peer's turn to run.
 *
 * Every step is one RDMA WRITE WITH IMMEDIATE: the data, and in its
 * immediate the flag the receiver waits for (allgather_int.h says what the
 * specification promises about it).  A data write followed by a flag
 * write, as before, took two operations per step where MPI sends one
 * message, which made small blocks slower than MPI.  A peer that fails in
 * the middle of a collective cannot be worked around (the other ranks are
 * inside the same call): hotbuf says so in one line and aborts the job.
 *
 * A receive array one rank cannot register (memory the monitor cannot
 * watch: .data, MAP_HUGETLB, private file mappings; or no room under the
 * cap) must send every rank to PMPI_Allgather, on every rank alike.
 * Where the answer is known everywhere, nothing is asked: copy-based
 * calls register nothing, and a call over the communicator's zcopy_max
 * goes to PMPI everywhere.  Otherwise it cannot be known remotely: a
 * rank's memory of "this (address, length) registered fine last time"
 * says nothing to the others, and whether to skip a vote must itself be
 * agreed.  So every zero-copy call votes, at no cost in messages: each
 * flag carries a fail bit, the OR of what its writer knows.  A rank that
 * cannot register sets it in its ready records and flags; every rank ORs
 * in what it waits for.  Recursive doubling is then an allreduce of the
 * bit (after step k a rank knows the bits of its 2^(k+1) group), the ring
 * too (after step s one knows ranks left .. left-s, and the right one
 * from its ready record), so after the last step every rank holds the
 * same OR.  Once a rank knows of a failure it writes no more data (the
 * failed rank has nowhere to receive it and nothing registered to send
 * from), only flags (zero-length writes with their immediate); then all
 * call PMPI_Allgather.  What was written into
 * receive arrays meanwhile is overwritten by it (a rank's own block, the
 * MPI_IN_PLACE input, is never written by a peer).  A flag of a later
 * call cannot stand in for a failed one: after a failed call every rank
 * enters PMPI_Allgather, which no rank leaves before all entered.
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
#include "util/copy.h"

struct ag_call {
    struct hb_ag *ag;
    struct hb_ag_comm *c;
    struct hb_transport *t;
    uint64_t seq, block;
    int zcopy;
    int fail;            /* zero-copy: some rank known not registered */
    char *buf;           /* size x block bytes, this rank's gathered array */
    char *out;           /* copy-based, contiguous receive type: rbuf */
    uint32_t lkey, rkey; /* of buf */
    uint32_t max_inline; /* the device's: smaller writes go inline */
    struct hb_tr_op last[HB_AG_SLOTS + 1]; /* last write to each destination */
    int dest[HB_AG_SLOTS + 1], ndest;
    char sourced[HB_AG_SLOTS + 1]; /* a write to dest[i] read our memory */
};

static void fatal(const struct ag_call *a, int to, const char *what)
{
    hb_ag_abort(a->ag, a->c, to, "on RDMA", what);
}

static void fatal_world(const struct ag_call *a, int world)
{
    for (int i = 0; i < a->c->size; i++)
        if (a->c->peers[i].world == world)
            fatal(a, i, "a write did not complete");
}

/* Our sources stay untouched until read.  A zero-copy call's are the
 * application's: waited for now.  A copy-based call's are a half of the
 * collective buffer: the call after next, which writes that half again,
 * waits (hb_ag_settle), so this one returns as soon as its data is in, not
 * one acknowledgement later; writes that were all inline read nothing of
 * ours after their post and are not kept. */
static void finish_writes(struct ag_call *a)
{
    if (!a->zcopy) {
        int h = (int)(a->seq & 1), n = 0;
        for (int i = 0; i < a->ndest; i++)
            if (a->sourced[i])
                a->c->pend[h][n++] = a->last[i];
        a->c->npend[h] = n;
        return;
    }
    for (int i = 0; i < a->ndest; i++)
        if (hb_transport_wait(a->t, &a->last[i], hb_progress_yield, NULL) !=
            HB_TR_OK)
            fatal(a, a->dest[i], "a write did not complete");
}

/* Remembers the last write to each destination, and whether any of them
 * read our memory (not inline): waited for at the end. */
static struct hb_tr_op *slot_for(struct ag_call *a, int to, int sourced)
{
    int i = 0;
    while (i < a->ndest && a->dest[i] != to)
        i++;
    if (i == a->ndest) {
        a->dest[a->ndest++] = to;
        a->sourced[i] = 0;
    }
    a->sourced[i] |= (char)sourced;
    return &a->last[i];
}

/* One write with its immediate; signaled when it is the last one to that
 * destination in this call (the call's end waits for it: our sources stay
 * untouched until read; the transport signals one in 16 anyway). */
static void post(struct ag_call *a, int to, const void *src, size_t len,
                 uint32_t lkey, uint64_t raddr, uint32_t rkey, uint32_t body,
                 unsigned signal)
{
    unsigned flags =
        signal | (len && len <= a->max_inline ? HB_TR_F_INLINE : 0);
    struct hb_tr_op *op = slot_for(a, to, len && !(flags & HB_TR_F_INLINE));
    uint32_t imm = HB_IMM(HB_IMM_CLASS_AG, body);
    a->ag->stats.ops++;
    for (;;) {
        int rc = hb_transport_write_imm(a->t, a->c->peers[to].world, src, len,
                                        lkey, raddr, rkey, imm, flags, op);
        if (rc == HB_TR_OK)
            return;
        if (rc != HB_TR_BUSY)
            fatal(a, to, "a write failed");
        hb_progress(); /* send queue full: completions free it */
    }
}

/* The immediate's body for rank to: its number for the communicator,
 * this call, what this rank knows of the vote, the word to raise. */
static uint32_t body_for(const struct ag_call *a, int to, unsigned kind,
                         unsigned index)
{
    return HB_AG_IMM_BODY(a->c->peers[to].id, a->seq, a->fail, kind, index);
}

/* Waits until a peer's write of this call (or a later one) has raised
 * *flag, and takes in its fail bit.  No time limit: a peer may enter the
 * collective much later; only its failure ends the wait.  The flag is
 * raised by this rank's own immediate dispatcher, inside hb_progress. */
static void wait_flag(struct ag_call *a, volatile uint64_t *flag, int from)
{
    for (unsigned spins = 1; HB_AG_FLAG_SEQ(*flag) < a->seq; spins++) {
        hb_progress();
        /* oversubscribed: the peer may need this CPU.  Every 8 empty
         * polls: every one was slower (1.26-1.71 against 0.87-1.31 at 4
         * ranks, 4 B..1 KiB), every 64 slower at 8 ranks (README) */
        if ((spins & 7) == 0)
            sched_yield();
        if ((spins & 1023) == 0) {
            hb_progress_yield(NULL);
            if (hb_transport_peer_state(a->t, a->c->peers[from].world) ==
                HB_PEER_FAILED)
                fatal(a, from, "a peer failed");
        }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    uint64_t v = *flag;
    if (HB_AG_FLAG_SEQ(v) == a->seq) /* a later call's: this one succeeded */
        a->fail |= HB_AG_FLAG_FAIL(v);
}

/* Tells rank to where this rank's array is, in its slot k. */
static void send_ready(struct ag_call *a, int to, int k, unsigned signal)
{
    const struct hb_ag_peer *p = &a->c->peers[to];
    a->ag->stats.writes++;
    post(a, to, &a->c->area->out, sizeof(a->c->area->out), a->c->lkey,
         p->area + offsetof(struct hb_ag_area, slot) +
             (size_t)k * sizeof(struct hb_ag_record),
         p->rkey, body_for(a, to, HB_AG_IMM_READY, (unsigned)k), signal);
}

/* Where rank peer's array is for this call: its half of the collective
 * buffer (copy-based), or what its ready record says (zero-copy). */
static struct hb_ag_record destination(struct ag_call *a, int peer, int k)
{
    const struct hb_ag_comm *c = a->c;
    if (!a->zcopy) {
        uint64_t offset =
            (uint64_t)(c->buffer - (char *)c->area) + (a->seq & 1) * c->half;
        return (struct hb_ag_record){c->peers[peer].area + offset,
                                     c->peers[peer].rkey, 0};
    }
    wait_flag(a, &c->area->ready[k], peer);
    return (struct hb_ag_record){c->area->slot[k].addr, c->area->slot[k].rkey,
                                 0};
}

/* Bytes [off, off+len) of the array to the same place at rank to, with
 * the immediate that raises the receiver's flag.  Once the call is known
 * to fail, the immediate alone (a zero-length write: to the peer's area,
 * whose key is always good, unlike a failed rank's buffer). */
static void send_blocks(struct ag_call *a, int to,
                        const struct hb_ag_record *dst, uint64_t off,
                        uint64_t len, uint32_t body, unsigned signal)
{
    a->ag->stats.writes++;
    if (!a->fail)
        post(a, to, a->buf + off, len, a->lkey, dst->addr + off, dst->rkey,
             body, signal);
    else
        post(a, to, NULL, 0, 0, a->c->peers[to].area, a->c->peers[to].rkey,
             body, signal);
}

/* Blocks [first, first+n) are in and final: a copy-based call with a
 * contiguous receive type copies them out now, while the next step's
 * data is on the wire, rather than the whole array after the last wait
 * (which is on the call's critical path).  Other calls leave it to the
 * end (unpack). */
static void copy_out(const struct ag_call *a, uint64_t first, uint64_t n)
{
    if (a->out)
        hb_copy(a->out + first * a->block, a->buf + first * a->block,
                n * a->block);
}

static void recursive_doubling(struct ag_call *a)
{
    const struct hb_ag_comm *c = a->c;
    for (int k = 0; a->zcopy && (1 << k) < c->size; k++)
        send_ready(a, c->rank ^ (1 << k), k, 0);
    uint64_t in = (uint64_t)c->rank, nin = 1; /* the last blocks to come */
    for (int k = 0; (1 << k) < c->size; k++) {
        int partner = c->rank ^ (1 << k);
        struct hb_ag_record dst = destination(a, partner, k);
        uint64_t first = (uint64_t)((c->rank >> k) << k);
        /* the body is made after destination(): it carries the vote
         * learnt so far, as the flag did */
        send_blocks(
            a, partner, &dst, first * a->block, ((uint64_t)1 << k) * a->block,
            body_for(a, partner, HB_AG_IMM_RD, (unsigned)k), HB_TR_F_SIGNAL);
        copy_out(a, in, nin);
        in = (uint64_t)((partner >> k) << k);
        nin = (uint64_t)1 << k;
        wait_flag(a, &c->area->rd[k], partner);
    }
    copy_out(a, in, nin);
}

/* Chunks per ring step: blocks of HOTBUF_AG_CHUNK bytes or more are cut
 * so that a rank forwards a block's first chunk while the rest arrive;
 * the same on every rank (shared settings, block, size).  Each chunk is
 * one immediate: the receiver's data[] words must hold them all. */
static uint64_t ring_chunks(const struct ag_call *a)
{
    uint64_t chunk = a->ag->ctx->cfg->ag_chunk, n;
    uint64_t most = a->c->data_entries / (uint64_t)(a->c->size - 1);
    if (!chunk || a->block < 2 * chunk)
        return 1;
    n = a->block / chunk;
    return n < most ? n : most;
}

static void ring(struct ag_call *a)
{
    const struct hb_ag_comm *c = a->c;
    int p = c->size, right = (c->rank + 1) % p, left = (c->rank + p - 1) % p;
    uint64_t n = ring_chunks(a), len = a->block / n;
    /* on 2 ranks left is right: the data's last write is signaled */
    if (a->zcopy)
        send_ready(a, left, HB_AG_RING_SLOT, p == 2 ? 0 : HB_TR_F_SIGNAL);
    struct hb_ag_record dst = destination(a, right, HB_AG_RING_SLOT);
    /* step s forwards chunk j of the block that chunk j of step s-1
     * brought (at step 0, this rank's own); the last chunk takes the rest */
    for (int s = 0; s < p - 1; s++) {
        uint64_t blk = (uint64_t)((c->rank - s + p) % p);
        for (uint64_t j = 0; j < n; j++) {
            if (s > 0)
                wait_flag(a, &c->area->data[(uint64_t)(s - 1) * n + j], left);
            send_blocks(a, right, &dst, blk * a->block + j * len,
                        j == n - 1 ? a->block - j * len : len,
                        body_for(a, right, HB_AG_IMM_RING, 0),
                        s == p - 2 && j == n - 1 ? HB_TR_F_SIGNAL : 0);
        }
        copy_out(a, blk, 1);
    }
    for (uint64_t j = 0; j < n; j++)
        wait_flag(a, &c->area->data[(uint64_t)(p - 2) * n + j], left);
    copy_out(a, (uint64_t)right, 1); /* the last to come: right's own */
}

static void direct_to_all(struct ag_call *a)
{
    const struct hb_ag_comm *c = a->c;
    uint64_t off = (uint64_t)c->rank * a->block;
    for (int i = 1; i < c->size; i++) {
        int to = (c->rank + i) % c->size;
        struct hb_ag_record dst = destination(a, to, 0);
        send_blocks(a, to, &dst, off, a->block,
                    body_for(a, to, HB_AG_IMM_DIRECT, (unsigned)c->rank),
                    HB_TR_F_SIGNAL);
    }
    copy_out(a, (uint64_t)c->rank, 1);
    for (int i = 1; i < c->size; i++) {
        int from = (c->rank + c->size - i) % c->size;
        wait_flag(a, &c->area->direct[from], from);
        copy_out(a, (uint64_t)from, 1);
    }
}

/* count x type at src into bytes contiguous bytes at dst (or back with
 * unpack): hb_copy for packed predefined types, else MPI_Pack, which is a
 * local copy.  Never a message to self: a receive the application has
 * pending on MPI_COMM_SELF could match it.  Packed bytes are the plain
 * bytes of the type map on a homogeneous job (start checks that MPI packs
 * so), so ranks with different types of one signature agree. */
static void pack(const void *src, int count, MPI_Datatype type, void *dst,
                 uint64_t bytes)
{
    int pos = 0;
    if (hb_dt_contiguous_bytes(count, type) == bytes)
        hb_copy(dst, src, bytes);
    else
        PMPI_Pack(src, count, type, dst, (int)bytes, &pos, MPI_COMM_SELF);
}

static void unpack(const void *src, uint64_t bytes, void *dst, int count,
                   MPI_Datatype type)
{
    int pos = 0;
    if (hb_dt_contiguous_bytes(count, type) == bytes)
        hb_copy(dst, src, bytes);
    else
        PMPI_Unpack(src, (int)bytes, &pos, dst, count, type, MPI_COMM_SELF);
}

/* This rank's own block into its place in the array. */
static void place_own_block(struct ag_call *a, const void *sbuf, int scount,
                            MPI_Datatype stype, void *rbuf, int rcount,
                            MPI_Datatype rtype)
{
    char *mine = a->buf + (uint64_t)a->c->rank * a->block;
    if (sbuf != MPI_IN_PLACE) {
        pack(sbuf, scount, stype, mine, a->block);
    } else if (a->buf != rbuf) {
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(rtype, &lb, &extent);
        pack((char *)rbuf + (MPI_Aint)a->c->rank * rcount * extent, rcount,
             rtype, mine, a->block);
    }
}

/* Where the array lives for this call.  Zero-copy: the receive buffer
 * or, for a non-contiguous receive type, a temporary, registered.  When
 * that fails the call fails on every rank (see the vote above). */
static void choose_buffer(struct ag_call *a, void *rbuf, int direct,
                          struct hb_region **reg, char **tmp)
{
    struct hb_ag_comm *c = a->c;
    uint64_t total = (uint64_t)c->size * a->block;
    if (!a->zcopy) {
        a->buf = c->buffer + (a->seq & 1) * c->half;
        a->lkey = c->lkey;
        a->rkey = c->rkey;
        return;
    }
    a->buf = direct ? rbuf : (*tmp = malloc(total));
    if (!a->buf || hb_rdma_register(a->ag->ctx->rdma, a->buf, total, reg)) {
        *reg = NULL;
        a->fail = 1;
        a->lkey = a->rkey = 0;
        return;
    }
    a->lkey = hb_region_mr(*reg)->lkey;
    a->rkey = hb_region_mr(*reg)->rkey;
}

enum { ALGO_RD, ALGO_RING, ALGO_DIRECT, ALGO_MCAST };

/* The same on every rank: from the shared thresholds and the block (c->mc
 * was agreed at creation). */
static int choose_algo(const struct hb_config *cfg, const struct hb_ag_comm *c,
                       uint64_t block, int zcopy)
{
    if (!zcopy && c->mc && cfg->ag_mcast && block >= cfg->ag_mcast &&
        block <= hb_ag_mc_block_max(c))
        return ALGO_MCAST;
    if (!zcopy && block < cfg->ag_direct && c->size <= HB_AG_SLOTS)
        return ALGO_DIRECT;
    return !c->pow2 || block >= cfg->ag_ring ? ALGO_RING : ALGO_RD;
}

static void count_call(struct hb_ag *ag, const struct ag_call *a, int algo,
                       uint64_t total)
{
    static const int ids[4][2] = {{HB_AG_RD_COPY, HB_AG_RD_ZCOPY},
                                  {HB_AG_RING_COPY, HB_AG_RING_ZCOPY},
                                  {HB_AG_DIRECT_COPY, HB_AG_DIRECT_COPY},
                                  {HB_AG_MCAST, HB_AG_MCAST}};
    ag->stats.algos[ids[algo][a->zcopy]]++;
    ag->stats.calls_rdma++;
    ag->stats.bytes_rdma += total;
}

/* The longest single write of a call: recursive doubling's last step
 * writes half the array, the ring, direct and a multicast repair one
 * block at most. */
static uint64_t longest_write(const struct hb_ag_comm *c, int algo,
                              uint64_t block)
{
    return algo == ALGO_RD ? (uint64_t)(c->size / 2) * block : block;
}

int hb_ag_run(struct hb_ag *ag, struct hb_ag_comm *c, const void *sbuf,
              int scount, MPI_Datatype stype, void *rbuf, int rcount,
              MPI_Datatype rtype, uint64_t block)
{
    const struct hb_config *cfg = ag->ctx->cfg;
    uint64_t total = (uint64_t)c->size * block;
    int zcopy = block >= cfg->ag_zcopy || total > c->half;
    int algo = choose_algo(cfg, c, block, zcopy);
    /* the same on every rank: total, zcopy_max and msg_max are shared.  A
     * write longer than a device's largest message fails (rxe: 8 MiB),
     * which in the middle of a collective aborts the job */
    if (total > 0x7fffffff || (zcopy && total > c->zcopy_max) ||
        longest_write(c, algo, block) > c->msg_max) {
        ag->stats.calls_pmpi[HB_AGP_TOO_LARGE]++;
        return -1;
    }
    int direct = hb_dt_contiguous_bytes(rcount, rtype) == block;
    struct ag_call a = {.ag = ag,
                        .c = c,
                        .t = ag->ctx->rdma->tr,
                        .seq = ++c->seq,
                        .block = block,
                        .zcopy = zcopy};
    a.max_inline = c->max_inline;

    struct hb_region *reg = NULL;
    char *tmp = NULL;
    /* before half seq&1 is written again (zero-copy calls write none) */
    int failed = zcopy ? -1 : hb_ag_settle(ag, c, (int)(a.seq & 1));
    if (failed >= 0)
        fatal_world(&a, failed);
    choose_buffer(&a, rbuf, direct, &reg, &tmp);
    a.out = !zcopy && direct ? rbuf : NULL;
    c->area->out = (struct hb_ag_record){(uint64_t)(uintptr_t)a.buf, a.rkey, 0};
    if (!a.fail)
        place_own_block(&a, sbuf, scount, stype, rbuf, rcount, rtype);

    if (algo == ALGO_MCAST) {
        struct hb_ag_mc_call m = {a.seq, block, a.buf, a.out, a.lkey};
        hb_ag_mc_run(ag, c, &m);
    } else if (algo == ALGO_DIRECT)
        direct_to_all(&a);
    else if (algo == ALGO_RING)
        ring(&a);
    else
        recursive_doubling(&a);
    finish_writes(&a);

    if (a.buf != rbuf && !a.fail && !a.out)
        unpack(a.buf, total, rbuf, rcount * c->size, rtype);
    if (reg)
        hb_regcache_put(ag->ctx->rdma->cache, reg);
    free(tmp);
    if (a.fail) { /* every rank knows it: all go to PMPI together */
        ag->stats.calls_pmpi[HB_AGP_UNREGISTERED]++;
        return -1;
    }
    count_call(ag, &a, algo, total);
    return 0;
}
