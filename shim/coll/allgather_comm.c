/* Per-communicator state of the RDMA Allgather (see allgather.h): made
 * collectively on a communicator's first Allgather, kept as an attribute
 * so that it goes away with the communicator (MPI_Comm_free calls the
 * delete callback), and at finalize for those still alive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "allgather.h"
#include "allgather_int.h"
#include "core/comm.h"
#include "core/host.h"
#include "core/progress.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "transport/transport.h"

/* The area's registration goes back to the cache before the memory goes:
 * the cache may keep it, and the memory monitor drops it if free() gives
 * the pages back to the system. */
static void area_free(struct hb_ag *ag, struct hb_ag_comm *c)
{
    if (c->region)
        hb_regcache_put(ag->ctx->rdma->cache, c->region);
    free(c->area);
    c->region = NULL;
    c->area = NULL;
}

/* A number for the state, the lowest free one, that peers put in their
 * immediates to this rank; HB_AG_IDS when the table cannot hold it. */
static uint32_t id_take(struct hb_ag *ag, struct hb_ag_comm *c)
{
    uint32_t id = 0;
    while (id < ag->nids && ag->by_id[id])
        id++;
    if (id == ag->nids) {
        uint32_t n = ag->nids ? 2 * ag->nids : 16;
        struct hb_ag_comm **t =
            n <= HB_AG_IDS ? realloc(ag->by_id, n * sizeof(*t)) : NULL;
        if (!t)
            return HB_AG_IDS;
        memset(t + ag->nids, 0, (n - ag->nids) * sizeof(*t));
        ag->by_id = t;
        ag->nids = n;
    }
    ag->by_id[id] = c;
    return id;
}

/* The state's immediates all arrived (every one is waited for within its
 * call), so its number can serve another. */
static void id_drop(struct hb_ag *ag, struct hb_ag_comm *c)
{
    if (c->id < ag->nids && ag->by_id[c->id] == c)
        ag->by_id[c->id] = NULL;
    c->id = HB_AG_IDS;
}

/* The full call number of an immediate's 3 bits: the writer is in this
 * rank's current call (c->seq) or the next one, never further (see
 * allgather_int.h); within +-4 of c->seq for safety. */
static uint64_t imm_seq(const struct hb_ag_comm *c, uint32_t low)
{
    uint64_t d = (low - c->seq) & 7;
    return d < 4 ? c->seq + d : c->seq - (8 - d);
}

/* Flag words only grow: a release store, since the waiter may run on
 * another thread than MPI's progress that called this. */
static void flag_raise(volatile uint64_t *w, uint64_t v)
{
    if (v > *w)
        __atomic_store_n(w, v, __ATOMIC_RELEASE);
}

void hb_ag_on_imm(void *ctx, int peer, uint32_t body, uint32_t byte_len)
{
    struct hb_ag *ag = ctx;
    uint32_t id = HB_AG_IMM_ID(body), k = HB_AG_IMM_INDEX(body);
    struct hb_ag_comm *c = id < ag->nids ? ag->by_id[id] : NULL;
    (void)peer, (void)byte_len;
    if (!c || !c->area) {
        ag->stats.imm_stray++;
        return;
    }
    uint64_t seq = imm_seq(c, HB_AG_IMM_SEQ(body));
    uint64_t v = HB_AG_FLAG(seq, HB_AG_IMM_FAIL(body));
    switch (HB_AG_IMM_KIND(body)) {
    case HB_AG_IMM_RD: flag_raise(&c->area->rd[k], v); break;
    case HB_AG_IMM_READY: flag_raise(&c->area->ready[k], v); break;
    case HB_AG_IMM_DIRECT: flag_raise(&c->area->direct[k], v); break;
    case HB_AG_IMM_MREADY: flag_raise(&c->area->mready[k], v); break;
    case HB_AG_IMM_MNACK: flag_raise(&c->area->mnack[k], v); break;
    case HB_AG_IMM_MREPAIR: flag_raise(&c->area->mrepair[k], v); break;
    case HB_AG_IMM_RING: /* one writer, in order: the n-th of a call is step n */
        if (seq != c->ring_seq) {
            c->ring_seq = seq;
            c->ring_next = 0;
        }
        if (c->ring_next < c->data_entries)
            flag_raise(&c->area->data[c->ring_next++], v);
        else
            ag->stats.imm_stray++;
        break;
    default: ag->stats.imm_stray++; break;
    }
}

static void state_free(struct hb_ag *ag, struct hb_ag_comm *c)
{
    hb_ag_mc_close(ag, c);
    id_drop(ag, c);
    area_free(ag, c);
    free(c->peers);
    free(c);
}

int hb_ag_settle(struct hb_ag *ag, struct hb_ag_comm *c, int half)
{
    int failed = -1;
    for (int h = half < 0 ? 0 : half; h <= (half < 0 ? 1 : half); h++) {
        for (int i = 0; i < c->npend[h]; i++)
            if (hb_transport_wait(ag->ctx->rdma->tr, &c->pend[h][i],
                                  hb_progress_yield, NULL) != HB_TR_OK)
                failed = c->pend[h][i].peer;
        c->npend[h] = 0;
    }
    return failed;
}

/* Every rank has finished the last Allgather on the communicator: its
 * peers' writes into this area all landed (it waited for their flags) and
 * its own writes completed, so the area can go.  extra is the module
 * state (given at keyval creation). */
static int delete_attr(MPI_Comm comm, int key, void *value, void *extra)
{
    struct hb_ag *ag = extra;
    struct hb_ag_comm *c = value;
    (void)comm, (void)key;
    hb_ag_settle(ag, c, -1); /* a failed peer's QP is gone: no DMA either way */
    if (c->prev)
        c->prev->next = c->next;
    else if (ag->live == c)
        ag->live = c->next;
    if (c->next)
        c->next->prev = c->prev;
    state_free(ag, c);
    return MPI_SUCCESS;
}

int hb_ag_keyval_create(struct hb_ag *ag)
{
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_attr,
                                   &ag->keyval, ag);
}

void hb_ag_free_all(struct hb_ag *ag)
{
    while (ag->live)
        PMPI_Comm_delete_attr(ag->live->comm, ag->keyval); /* unlinks it */
    if (ag->keyval != MPI_KEYVAL_INVALID)
        PMPI_Comm_free_keyval(&ag->keyval);
    free(ag->by_id);
    ag->by_id = NULL;
    ag->nids = 0;
}

/* The area: flags, slots, data flags, two buffer halves; registered
 * through the registration cache like every other buffer (charged to its
 * caps) and held until the state is freed. */
static int area_create(struct hb_ag *ag, struct hb_ag_comm *c)
{
    c->data_entries = (size_t)(c->size > HB_AG_SLOTS ? c->size : HB_AG_SLOTS);
    c->half = (size_t)ag->ctx->cfg->ag_buffer;
    size_t head =
        sizeof(struct hb_ag_area) + c->data_entries * sizeof(uint64_t);
    head = (head + 63) & ~(size_t)63;
    c->area_len = head + 2 * c->half;
    if (posix_memalign((void **)&c->area, 4096, c->area_len)) {
        c->area = NULL;
        return -1;
    }
    memset(c->area, 0, head);
    c->buffer = (char *)c->area + head;
    if (hb_rdma_register(ag->ctx->rdma, c->area, c->area_len, &c->region)) {
        c->region = NULL;
        area_free(ag, c);
        return -1;
    }
    c->lkey = hb_region_mr(c->region)->lkey;
    c->rkey = hb_region_mr(c->region)->rkey;
    return 0;
}

/* This rank's entry of the creation allgather. */
static void describe_self(struct hb_ag *ag, struct hb_ag_comm *c,
                          struct hb_ag_peer *me)
{
    const struct hb_ctx *ctx = ag->ctx;
    memset(me, 0, sizeof(*me));
    PMPI_Comm_rank(MPI_COMM_WORLD, &me->world);
    me->node = hb_host_hash();
    me->ok = HB_AG_PEER_OFF;
    if (!ctx->rdma->tr || !ctx->rdma->cache || !ctx->cfg->allgather)
        return;
    /* the number goes out with the entry below, before any peer writes */
    if ((c->id = id_take(ag, c)) == HB_AG_IDS || area_create(ag, c)) {
        me->ok = HB_AG_PEER_NO_MEMORY;
        return;
    }
    struct hb_transport_info info;
    hb_transport_get_info(ctx->rdma->tr, &info);
    c->max_inline = info.max_inline;
    me->msg_max = info.max_msg;
    me->id = c->id;
    me->area = (uint64_t)(uintptr_t)c->area;
    me->rkey = c->rkey;
    size_t cap = hb_regcache_default_max_bytes();
    if (ctx->cfg->regcache_bytes)
        cap = (size_t)ctx->cfg->regcache_bytes;
    /* half of what the cache may pin, so one receive buffer always fits */
    me->zcopy_max = cap ? cap / 2 : ((uint64_t)1 << 40);
    hb_ag_mc_describe(ag, me);
    me->ok = HB_AG_PEER_READY;
}

/* The same verdict on every rank, from the allgathered entries. */
static int verdict(const struct hb_ag *ag, struct hb_ag_comm *c)
{
    c->zcopy_max = c->msg_max = UINT64_MAX;
    for (int i = 0; i < c->size; i++) {
        if (c->peers[i].ok == HB_AG_PEER_NO_MEMORY)
            return HB_AGC_MEMORY;
        if (c->peers[i].ok != HB_AG_PEER_READY)
            return HB_AGC_NO_RDMA;
        if (c->peers[i].zcopy_max < c->zcopy_max)
            c->zcopy_max = c->peers[i].zcopy_max;
        if (c->peers[i].msg_max < c->msg_max)
            c->msg_max = c->peers[i].msg_max;
    }
    for (int i = 0; !ag->ctx->cfg->intranode && i < c->size; i++)
        for (int j = i + 1; j < c->size; j++)
            if (c->peers[i].node == c->peers[j].node)
                return HB_AGC_INTRANODE;
    return -1;
}

/* Connects to every peer the algorithms use (all ranks are in this call,
 * so every connection gets both sides' progress): the ring's neighbours,
 * the recursive doubling partners, and every rank when direct or
 * multicast may run (HOTBUF_AG_DIRECT, at most HB_AG_SLOTS ranks;
 * multicast's READY, NACK and repair go to every rank).  1 when all are
 * up. */
static int connect_peers(const struct hb_ag *ag, struct hb_ag_comm *c, int mc)
{
    struct hb_transport *t = ag->ctx->rdma->tr;
    int need[2 * 64 + 2 + HB_AG_SLOTS], n = 0;
    need[n++] = (c->rank + 1) % c->size;
    need[n++] = (c->rank + c->size - 1) % c->size;
    for (int k = 1; c->pow2 && k < c->size; k <<= 1)
        need[n++] = c->rank ^ k;
    for (int i = 0; (ag->ctx->cfg->ag_direct || mc) && c->size <= HB_AG_SLOTS &&
                    i < c->size;
         i++)
        if (i != c->rank)
            need[n++] = i;
    double deadline = MPI_Wtime() + ag->ctx->cfg->connect_timeout;
    for (;;) {
        int up = 0, failed = 0;
        for (int i = 0; i < n; i++) {
            int rc = hb_transport_connect(t, c->peers[need[i]].world);
            up += rc == HB_TR_OK;
            failed += rc == HB_TR_FAILED;
        }
        if (up == n || failed || MPI_Wtime() > deadline)
            return up == n;
        hb_progress();
    }
}

/* 1 when this rank's multicast is ready.  A rank that cannot says why
 * once per process (the others may stay silent: the vote tells them). */
static int mc_open(struct hb_ag *ag, struct hb_ag_comm *c)
{
    char why[200] = "";
    if (hb_ag_mc_open(ag, c, why, sizeof(why)) == 0)
        return 1;
    hb_ag_mc_close(ag, c);
    if (!ag->mc_warned++)
        fprintf(
            stderr,
            "hotbuf: rank %d: no multicast Allgather on a communicator of %d "
            "ranks (%s); its calls use the other algorithms\n",
            ag->ctx->rank, c->size, why);
    return 0;
}

static struct hb_ag_comm *create(struct hb_ag *ag, MPI_Comm comm)
{
    struct hb_ag_comm *c = calloc(1, sizeof(*c));
    int inter = 0;
    if (!c)
        return NULL;
    c->comm = comm;
    c->id = HB_AG_IDS;
    c->reason = HB_AGC_NO_RDMA;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    /* Verdicts every rank reaches alone, before any collective of ours:
     * peers are named by world rank, which aliases across worlds. */
    if (inter || c->size == 1 || !hb_comm_one_world(comm)) {
        c->reason = inter          ? HB_AGC_INTERCOMM
                    : c->size == 1 ? HB_AGC_SINGLE_RANK
                                   : HB_AGC_WORLDS;
        return c;
    }
    c->pow2 = (c->size & (c->size - 1)) == 0;
    c->peers = calloc((size_t)c->size, sizeof(*c->peers));
    if (!c->peers) { /* the others are entering the allgather below */
        fprintf(stderr,
                "hotbuf: out of memory for a communicator's allgather state\n");
        PMPI_Abort(comm, 1);
    }
    struct hb_ag_peer me;
    describe_self(ag, c, &me);
    PMPI_Allgather(&me, sizeof(me), MPI_BYTE, c->peers, sizeof(me), MPI_BYTE,
                   comm);
    c->reason = verdict(ag, c);
    int mc = c->reason < 0 && hb_ag_mc_possible(c);
    /* {connections up, multicast open}: the rings are all posted before
     * any rank leaves the vote, so a first multicast call finds them */
    int mine[2] = {c->reason < 0 ? connect_peers(ag, c, mc) : 1, 0}, all[2];
    if (c->reason <
        0) { /* everyone took the same verdict, so everyone is here */
        mine[1] = mc && mine[0] ? mc_open(ag, c) : 0;
        PMPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, comm);
        if (!all[0])
            c->reason = HB_AGC_UNREACHABLE;
        if (!all[1] || !all[0])
            hb_ag_mc_close(ag, c);
    }
    return c;
}

struct hb_ag_comm *hb_ag_comm_get(struct hb_ag *ag, MPI_Comm comm)
{
    struct hb_ag_comm *c = NULL;
    int found = 0;
    if (ag->keyval == MPI_KEYVAL_INVALID)
        return NULL;
    PMPI_Comm_get_attr(comm, ag->keyval, &c, &found);
    if (found)
        return c;
    if (!(c = create(ag, comm)))
        return NULL; /* out of memory before any collective of ours */
    ag->stats.comms++;
    if (c->reason < 0)
        ag->stats.comms_rdma++;
    else
        ag->stats.comms_pmpi[c->reason]++;
    if (c->reason >= 0) { /* not served: give the memory back now */
        hb_ag_mc_close(ag, c);
        id_drop(ag, c);
        area_free(ag, c);
    }
    PMPI_Comm_set_attr(comm, ag->keyval, c);
    c->next = ag->live;
    if (ag->live)
        ag->live->prev = c;
    ag->live = c;
    return c;
}

_Noreturn void hb_ag_abort(const struct hb_ag *ag, const struct hb_ag_comm *c,
                           int to, const char *how, const char *what)
{
    fprintf(stderr,
            "hotbuf: rank %d: MPI_Allgather %s: %s "
            "(rank %d of the communicator: %s); "
            "aborting, the other ranks are inside the same call\n",
            ag->ctx->rank, how, what, to,
            hb_transport_peer_reason(ag->ctx->rdma->tr, c->peers[to].world));
    PMPI_Abort(c->comm, 1);
    abort(); /* PMPI_Abort does not return */
}
