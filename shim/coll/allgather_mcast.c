/* The multicast Allgather: every rank sends its block once, to its own
 * multicast group, and the network makes the p-1 copies (transport.h,
 * "multicast").  Over RC, recursive doubling or the ring sends every byte
 * p-1 times from somewhere; on rxe each of those costs the sender a copy
 * into the packet and a checksum, which is what kept 64 KiB blocks on 4
 * ranks at 0.80-0.85 of MPI's time (README).  Off by default
 * (HOTBUF_AG_MCAST=0): as built, it measured slower than recursive
 * doubling on rxe, which a throw-away prototype did not (README).
 *
 * Copy-based only: packets land in rings of receive buffers, one ring per
 * sender, and are copied out by the immediate that names them, (call mod
 * 2^20, packet number), never by the order they arrive in.  What UD does
 * not promise, this file makes up for:
 *
 *   loss      a receiver that heard nothing from j for
 *             HOTBUF_AG_MCAST_TIMEOUT asks j for its block (NACK, an RC
 *             immediate); j writes the block over RC into the receiver's
 *             half of the collective buffer, at j's slot, with an
 *             immediate (REPAIR).  A packet of an earlier call arriving
 *             late, or one of a block already complete, is dropped.
 *   credits   UD has no flow control: a packet with no receive posted is
 *             lost.  A rank tells every sender that it has all of call N
 *             and that every receive it consumed is posted again (READY)
 *             and no rank leaves call N before it has every rank's READY
 *             of N.  So when any rank sends call N+1, every ring has room
 *             for a block (rings hold two: late packets of a repaired
 *             block may hold slots until the next call drops them).
 *   staying   That same wait keeps every sender in the call until every
 *             rank has every block, so a NACK of the call is always
 *             served inside it (a sender that left could block in
 *             another MPI call while a receiver waits for its repair);
 *             and a sender also waits for its repair writes to complete,
 *             or one landing late could overwrite the slot that call N+2
 *             (copy-based, any algorithm) fills with its next block, or
 *             read its own slot after call N+2 rewrote it.  NACKs need
 *             no order: the nack word only grows (flag_raise), so an
 *             old NACK never hides a newer one.
 *   early     A rank that has every block stops taking packets: the next
 *             call's may already come (a faster rank starts call N+1 as
 *             soon as it has every READY of N), and taking them now would
 *             drop them as stale.  They wait in the completion queue.
 *
 * The model: tests/model/ag_mcast.pml (spin, `make test`: model/ag_mcast*)
 * checks, with 2 and 3 ranks, any packet lost or late, RC in order or
 * not: C1 every byte copied out is the right rank's block of this call;
 * C2 no rank waits forever; C3 a repair lands only where nobody reads or
 * writes for another call; C4 a rank's own slot is not rewritten while a
 * send or repair still reads it.  The broken variants (no call check on
 * packets, leaving before every READY, not waiting for the repair's
 * completion, a nack word that can shrink with RC out of order) fail.
 * Not in the model: "early" above (it only keeps packets the model may
 * lose anyway) and the 20-bit wrap of the call number.
 *
 * Sources: a rank sends from its own block in half seq&1, which the
 * copy-based calls already fill (place_own_block) and which nothing
 * rewrites before call seq+2, after everyone left this one.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "allgather_int.h"
#include "core/progress.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "transport/transport.h"
#include "util/copy.h"

#define MC_MAX_RANKS 16 /* the groups a host joins per communicator */
#define MC_SEQ_BITS 20  /* immediate: call (mod 2^20), packet number */
#define MC_PKT_BITS 12
#define MC_MAX_SLOTS (1u << MC_PKT_BITS)
#define MC_IMM(seq, k)                                                         \
    ((uint32_t)((seq) & ((1u << MC_SEQ_BITS) - 1)) << MC_PKT_BITS |            \
     (uint32_t)(k))

enum { MC_DONE = 1, MC_NACKED = 2, MC_SERVED = 4 };

struct hb_ag_mc {
    struct hb_tr_mcast *m;
    uint32_t mtu;        /* packet size: the smallest of every rank's */
    uint32_t slot_bytes; /* a receive buffer: this rank's device MTU */
    uint32_t slots;      /* receives per sender, at most MC_MAX_SLOTS */
    char *rings;         /* (size - 1) x slots x slot_bytes */
    struct hb_region *region;
    uint32_t lkey;
    /* this call's state, by rank */
    uint32_t *got;  /* packets in */
    uint8_t *have;  /* size x slots: packet k of rank j in */
    uint8_t *flags; /* MC_* */
    double *heard;  /* the last packet from rank j, or the call's start */
    struct hb_tr_op *repair;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void hb_ag_mc_describe(struct hb_ag *ag, struct hb_ag_peer *me)
{
    struct hb_transport *t = ag->ctx->rdma->tr;
    struct hb_transport_info info;
    me->mc_mtu = 0;
    if (!ag->ctx->cfg->ag_mcast || hb_tr_mcast_supported(t, NULL, 0))
        return;
    hb_transport_get_info(t, &info);
    hb_tr_mcast_group_new(t, &me->group);
    me->mc_mtu = (uint32_t)info.active_mtu;
}

uint64_t hb_ag_mc_block_max(const struct hb_ag_comm *c)
{
    return c->mc ? (uint64_t)(c->mc->slots / 2) * c->mc->mtu : 0;
}

/* Queue index of rank j's group at this rank (the others' ranks, in order). */
static int queue_of(const struct hb_ag_comm *c, int j)
{
    return j < c->rank ? j : j - 1;
}

static char *slot_addr(const struct hb_ag_comm *c, int q, uint64_t s)
{
    return c->mc->rings + ((size_t)q * c->mc->slots + s) * c->mc->slot_bytes;
}

static int post_slot(const struct hb_ag_comm *c, int q, uint64_t s)
{
    struct hb_ag_mc *mc = c->mc;
    return hb_tr_mcast_post_recv(mc->m, q, s, slot_addr(c, q, s),
                                 mc->slot_bytes, mc->lkey);
}

static int rings_create(struct hb_ag *ag, struct hb_ag_comm *c)
{
    struct hb_ag_mc *mc = c->mc;
    size_t len = (size_t)(c->size - 1) * mc->slots * mc->slot_bytes;
    if (posix_memalign((void **)&mc->rings, 4096, len)) {
        mc->rings = NULL;
        return -1;
    }
    if (hb_rdma_register(ag->ctx->rdma, mc->rings, len, &mc->region)) {
        mc->region = NULL;
        return -1;
    }
    mc->lkey = hb_region_mr(mc->region)->lkey;
    for (int q = 0; q < c->size - 1; q++)
        for (uint64_t s = 0; s < mc->slots; s++)
            if (post_slot(c, q, s))
                return -1;
    return 0;
}

/* Every rank offers multicast, with the same settings: the packet size is
 * the smallest, the block the most a half of the collective buffer holds
 * per rank (a repair lands there).  The rings hold two such blocks per
 * sender: after a repair, the block's packets may still come, late, and
 * they sit in the ring until the next call drops them; with one block's
 * room, those would push the same number of the next call's packets out
 * (lost, repaired, late again: a chain). */
static int mc_params(const struct hb_ag_comm *c, uint32_t *mtu, uint32_t *slots)
{
    *mtu = UINT32_MAX;
    if (c->size < 3 || c->size > MC_MAX_RANKS) /* 2: one RC write is cheaper */
        return -1;
    for (int i = 0; i < c->size; i++) {
        if (!c->peers[i].mc_mtu)
            return -1;
        if (c->peers[i].mc_mtu < *mtu)
            *mtu = c->peers[i].mc_mtu;
    }
    uint64_t per_rank = c->half / (uint64_t)c->size, n = per_rank / *mtu;
    *slots = (uint32_t)(2 * (n < MC_MAX_SLOTS / 2 ? n : MC_MAX_SLOTS / 2));
    return *slots ? 0 : -1;
}

int hb_ag_mc_possible(const struct hb_ag_comm *c)
{
    uint32_t mtu, slots;
    return mc_params(c, &mtu, &slots) == 0;
}

int hb_ag_mc_open(struct hb_ag *ag, struct hb_ag_comm *c, char *why, size_t len)
{
    struct hb_transport *t = ag->ctx->rdma->tr;
    struct hb_tr_mgroup groups[MC_MAX_RANKS];
    struct hb_transport_info info;
    struct hb_ag_mc *mc = calloc(1, sizeof(*mc));
    size_t p = (size_t)c->size;
    if (!(c->mc = mc) || mc_params(c, &mc->mtu, &mc->slots)) {
        snprintf(why, len, "%s",
                 mc ? "not every rank offers it" : "out of memory");
        return -1;
    }
    hb_transport_get_info(t, &info);
    mc->slot_bytes = (uint32_t)info.active_mtu;
    mc->got = calloc(p, sizeof(*mc->got));
    mc->have = calloc(p * mc->slots, 1);
    mc->flags = calloc(p, 1);
    mc->heard = calloc(p, sizeof(*mc->heard));
    mc->repair = calloc(p, sizeof(*mc->repair));
    if (!mc->got || !mc->have || !mc->flags || !mc->heard || !mc->repair) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    for (int j = 0; j < c->size; j++)
        if (j != c->rank)
            groups[queue_of(c, j)] = c->peers[j].group;
    if (hb_tr_mcast_open(t, &c->peers[c->rank].group, groups, c->size - 1,
                         mc->slots, &mc->m, why, len))
        return -1;
    /* HOTBUF_TEST_AG_MCAST_DROP=N (test only, not a setting): the sender
     * skips every N-th packet, as if the network lost it; the repairs
     * must make up for it (tests/rdma/allgather_rdma.sh) */
    const char *drop = getenv("HOTBUF_TEST_AG_MCAST_DROP");
    if (drop)
        hb_tr_mcast_debug_drop(mc->m, (unsigned)atoi(drop));
    if (rings_create(ag, c)) {
        snprintf(
            why, len,
            "cannot allocate, register or post %u receives of %u B per rank",
            mc->slots, mc->slot_bytes);
        return -1;
    }
    return 0;
}

void hb_ag_mc_close(struct hb_ag *ag, struct hb_ag_comm *c)
{
    struct hb_ag_mc *mc = c->mc;
    if (!mc)
        return;
    hb_tr_mcast_close(mc->m); /* the device writes no ring after this */
    if (mc->region)
        hb_regcache_put(ag->ctx->rdma->cache, mc->region);
    free(mc->rings);
    free(mc->got);
    free(mc->have);
    free(mc->flags);
    free(mc->heard);
    free(mc->repair);
    free(mc);
    c->mc = NULL;
}

/* ---- one call ------------------------------------------------------------ */

struct mc_call {
    struct hb_ag *ag;
    struct hb_ag_comm *c;
    struct hb_transport *t;
    const struct hb_ag_mc_call *a;
    char *target; /* where the blocks go: out, or the half (unpacked later) */
    uint32_t npk; /* packets per block */
    int done;     /* blocks complete, this rank's own included */
    int readied;  /* READY sent to every rank */
    double now;   /* the clock, read every MC_CLOCK_EVERY passes: under
                     the emulator clock_gettime reads the HPET, a trap
                     that took 8% of the samples when read every pass */
};

#define MC_CLOCK_EVERY 64

static void fatal(const struct mc_call *k, int to, const char *what)
{
    hb_ag_abort(k->ag, k->c, to, "by multicast", what);
}

/* An RC write with its immediate to rank to: len bytes from src (this
 * rank's half) to raddr, or the immediate alone (len 0, to its area). */
static void post(struct mc_call *k, int to, unsigned kind, const void *src,
                 uint64_t len, uint64_t raddr, struct hb_tr_op *op)
{
    const struct hb_ag_peer *p = &k->c->peers[to];
    uint32_t body =
        HB_AG_IMM_BODY(p->id, k->a->seq, 0, kind, (unsigned)k->c->rank);
    struct hb_tr_op scratch;
    k->ag->stats.ops++;
    k->ag->stats.writes++;
    for (;;) {
        int rc = hb_transport_write_imm(
            k->t, p->world, src, len, len ? k->a->lkey : 0,
            len ? raddr : p->area, p->rkey, HB_IMM(HB_IMM_CLASS_AG, body),
            op ? HB_TR_F_SIGNAL : 0, op ? op : &scratch);
        if (rc == HB_TR_OK)
            return;
        if (rc != HB_TR_BUSY)
            fatal(k, to, "a write failed");
        hb_progress();
    }
}

static void block_done(struct mc_call *k, int j)
{
    k->c->mc->flags[j] |= MC_DONE;
    k->done++;
}

/* One packet: copied out if it is packet kk of this call from a rank
 * whose block is incomplete and it was not in yet; dropped otherwise.
 * Its receive is posted again either way. */
static void on_packet(struct mc_call *k, const struct hb_tr_mcast_event *e)
{
    struct hb_ag_comm *c = k->c;
    struct hb_ag_mc *mc = c->mc;
    int q = e->q, j = q < c->rank ? q : q + 1;
    uint32_t kk = e->imm & (MC_MAX_SLOTS - 1);
    uint64_t off = (uint64_t)kk * mc->mtu;
    uint64_t len = kk < k->npk && k->a->block - off < mc->mtu
                       ? k->a->block - off
                       : mc->mtu;
    uint8_t *have = &mc->have[(size_t)j * mc->slots + kk];
    if (e->ok && e->has_imm &&
        e->imm >> MC_PKT_BITS == MC_IMM(k->a->seq, 0) >> MC_PKT_BITS &&
        kk < k->npk && e->len == len && !(mc->flags[j] & MC_DONE) && !*have) {
        hb_copy(k->target + (uint64_t)j * k->a->block + off,
                slot_addr(c, q, e->wr_id), len);
        *have = 1;
        mc->heard[j] = k->now;
        if (++mc->got[j] == k->npk)
            block_done(k, j);
    } else {
        k->ag->stats.mc_stale++;
    }
    if (post_slot(c, q, e->wr_id))
        fatal(k, j, "a multicast receive could not be posted again");
}

/* What the RC immediates said about rank j (flags set by hb_ag_on_imm). */
static void on_flags(struct mc_call *k, int j)
{
    struct hb_ag_comm *c = k->c;
    struct hb_ag_mc *mc = c->mc;
    const struct hb_ag_mc_call *a = k->a;
    volatile struct hb_ag_area *area = c->area;
    uint8_t f = mc->flags[j];
    if (!(f & MC_DONE) && HB_AG_FLAG_SEQ(area->mrepair[j]) == a->seq) {
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (k->target != a->buf) /* the repair landed in the half */
            hb_copy(k->target + (uint64_t)j * a->block,
                    a->buf + (uint64_t)j * a->block, a->block);
        block_done(k, j);
    }
    if (!(f & MC_SERVED) && HB_AG_FLAG_SEQ(area->mnack[j]) == a->seq) {
        uint64_t to = c->peers[j].area +
                      (uint64_t)(c->buffer - (char *)c->area) +
                      (a->seq & 1) * c->half + (uint64_t)c->rank * a->block;
        post(k, j, HB_AG_IMM_MREPAIR, a->buf + (uint64_t)c->rank * a->block,
             a->block, to, &mc->repair[j]);
        mc->flags[j] |= MC_SERVED;
        k->ag->stats.mc_repairs++;
    }
    if (!(mc->flags[j] & (MC_DONE | MC_NACKED)) &&
        k->now - mc->heard[j] > k->ag->ctx->cfg->ag_mcast_timeout) {
        post(k, j, HB_AG_IMM_MNACK, NULL, 0, 0, NULL);
        mc->flags[j] |= MC_NACKED;
        k->ag->stats.mc_nacks++;
    }
}

/* Every rank's READY of this call in, the multicast sent, every repair
 * landed: the call may end. */
static int finished(struct mc_call *k)
{
    struct hb_ag_comm *c = k->c;
    if (!k->readied)
        return 0;
    int idle = hb_tr_mcast_send_idle(c->mc->m);
    if (idle < 0)
        fatal(k, c->rank, "the multicast send failed");
    if (!idle)
        return 0;
    for (int j = 0; j < c->size; j++) {
        if (j == c->rank)
            continue;
        if (HB_AG_FLAG_SEQ(c->area->mready[j]) < k->a->seq)
            return 0;
        if (c->mc->flags[j] & MC_SERVED) {
            int rc = hb_transport_test(k->t, &c->mc->repair[j]);
            if (rc == HB_TR_AGAIN)
                return 0;
            if (rc != HB_TR_OK)
                fatal(k, j, "a repair write did not complete");
        }
    }
    return 1;
}

static void start(struct mc_call *k)
{
    struct hb_ag_comm *c = k->c;
    struct hb_ag_mc *mc = c->mc;
    const struct hb_ag_mc_call *a = k->a;
    double t = k->now = now();
    k->npk = (uint32_t)((a->block + mc->mtu - 1) / mc->mtu);
    for (int j = 0; j < c->size; j++) {
        mc->got[j] = 0;
        mc->flags[j] = 0;
        mc->heard[j] = t;
        memset(&mc->have[(size_t)j * mc->slots], 0, k->npk);
    }
    const char *own = a->buf + (uint64_t)c->rank * a->block;
    int rc;
    while ((rc = hb_tr_mcast_send(mc->m, own, a->block, a->lkey,
                                  MC_IMM(a->seq, 0))) == HB_TR_BUSY) {
        struct hb_tr_mcast_event ev[16];
        int n = hb_tr_mcast_poll(mc->m, ev, 16);
        for (int i = 0; i < n; i++)
            if (ev[i].q >= 0)
                on_packet(k, &ev[i]);
    }
    if (rc != HB_TR_OK)
        fatal(k, c->rank, "the multicast send failed");
    k->ag->stats.ops++;
    k->ag->stats.writes++;
    if (a->out)
        hb_copy(a->out + (uint64_t)c->rank * a->block, own, a->block);
    block_done(k, c->rank);
}

void hb_ag_mc_run(struct hb_ag *ag, struct hb_ag_comm *c,
                  const struct hb_ag_mc_call *a)
{
    struct mc_call k = {.ag = ag,
                        .c = c,
                        .t = ag->ctx->rdma->tr,
                        .a = a,
                        .target = a->out ? a->out : a->buf};
    start(&k);
    unsigned idle = 0;
    for (unsigned spins = 1;; spins++) {
        struct hb_tr_mcast_event ev[16];
        /* Once every block is in, packets are left in the queue: the next
         * call's may come now (a sender starts call N+1 as soon as every
         * rank has all of N, and may leave N before this rank does), and
         * taking them here would drop them as stale. */
        int n = k.done < c->size ? hb_tr_mcast_poll(c->mc->m, ev, 16) : 0;
        if (n < 0)
            fatal(&k, c->rank, "the multicast completion queue failed");
        for (int i = 0; i < n; i++)
            on_packet(&k, &ev[i]);
        hb_progress();
        if ((spins % MC_CLOCK_EVERY) == 0)
            k.now = now();
        for (int j = 0; j < c->size; j++)
            if (j != c->rank)
                on_flags(&k, j);
        if (k.done == c->size && !k.readied) {
            for (int j = 0; j < c->size; j++)
                if (j != c->rank)
                    post(&k, j, HB_AG_IMM_MREADY, NULL, 0, 0, NULL);
            k.readied = 1;
        }
        if (finished(&k))
            return;
        /* oversubscribed: the peer may need this CPU (as wait_flag).
         * Sleeping 20 or 100 us after 64 empty polls instead was no
         * better (README) */
        if (n)
            idle = 0;
        else if ((++idle & 7) == 0)
            sched_yield();
        if ((spins & 1023) == 0) {
            hb_progress_yield(NULL);
            for (int j = 0; j < c->size; j++)
                if (hb_transport_peer_state(k.t, c->peers[j].world) ==
                    HB_PEER_FAILED)
                    fatal(&k, j, "a peer failed");
        }
    }
}
