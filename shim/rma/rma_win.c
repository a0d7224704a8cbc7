/* Windows: which ones hotbuf serves, their registration and the exchange
 * of (base, size, disp_unit, rkey) among their ranks (see rma.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <unistd.h>

#include "core/comm.h"
#include "core/host.h"
#include "core/note.h"
#include "core/runtime.h"
#include "core/subsys.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "rma.h"
#include "rma_int.h"

/* Module state (see rma_int.h): global, the wrappers' hooks have no context. */
struct hb_rma hb_rma;

static int rdma_here(const struct hb_ctx *ctx)
{
    return ctx->rdma->tr && ctx->rdma->cache;
}

/* Rerouting needs the transport and the cache on some rank, HOTBUF_RMA on
 * all, and no MPI_THREAD_MULTIPLE (the transport is single-threaded).  All
 * ranks must agree: window creation then takes the same collectives
 * everywhere. */
/* Where the windows' tags start and how many windows get distinct ones:
 * MPI_TAG_UB is at least 32767 (Open MPI and MPICH give far more). */
static void tag_space(void)
{
    int *ub = NULL, flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    int top = flag && ub ? *ub : 32767;
    hb_rma.tag_base = top / 2 < HB_RMA_TAG_BASE ? top / 2 : HB_RMA_TAG_BASE;
    hb_rma.tag_slots = (top - hb_rma.tag_base) / HB_RMA_TAGS;
}

/* HOTBUF_TEST_RMA_FAIL=N (test only, not a setting: read here once, not
 * in the report): every Nth RDMA operation of the one-sided path is not
 * posted but reported failed, as if its peer had failed in mid-operation,
 * so that the redo on PMPI can be tested on a healthy device. */
static unsigned long fail_every(void)
{
    const char *v = getenv("HOTBUF_TEST_RMA_FAIL");
    return v ? strtoul(v, NULL, 10) : 0;
}

static int start(const struct hb_ctx *ctx)
{
    memset(&hb_rma, 0, sizeof(hb_rma));
    hb_rma.ctx = ctx;
    hb_rma.node = hb_host_hash();
    tag_space();
    hb_rma.fail_every = fail_every();
    int any_rdma;
    hb_rma.on = hb_subsys_agree(ctx, !ctx->cfg->rma || ctx->lock_needed,
                                rdma_here(ctx), &any_rdma);
    if (ctx->cfg->rma && ctx->lock_needed && any_rdma)
        hb_note(
            "MPI_THREAD_MULTIPLE: hot MPI_Put/MPI_Get stay on MPI (hotbuf's transport is "
            "single-threaded)");
    return 0;
}

struct hb_win *hb_rma_find(MPI_Win win)
{
    struct hb_win *w = NULL;
    HASH_FIND(hh, hb_rma.wins, &win, sizeof(win), w);
    return w;
}

static void win_destroy(struct hb_win *w)
{
    hb_rma_complete(&hb_rma, w, -1);
    for (int r = 0; w->nstart && r < w->size; r++)
        if (w->pscw[r] ==
            HB_PSCW_WAITING) { /* an epoch left open: drop its tokens */
            PMPI_Cancel(&w->tokens[r]);
            PMPI_Request_free(&w->tokens[r]);
        }
    if (w->region)
        hb_regcache_put(hb_rma.ctx->rdma->cache, w->region);
    if (w->group != MPI_GROUP_NULL)
        PMPI_Group_free(&w->group);
    free(w->targets);
    free(w->tokbuf);
    free(w->lock);
    free(w->pscw);
    free(w->tokens);
    free(w->scratch);
    free(w->pend);
    free(w);
}

static void stop(const struct hb_ctx *ctx)
{
    struct hb_win *w, *tmp;
    (void)ctx;
    HASH_ITER(hh, hb_rma.wins, w, tmp)
    {
        HASH_DEL(hb_rma.wins, w);
        win_destroy(w);
    }
    hb_rma.on = 0;
}

/* clang-format off */
const struct hb_subsys hb_rma_subsys = {
    .name = "rma", .start = start, .stop = stop, .section = &hb_rma_section,
    .counters = &hb_rma.stats,
};
/* clang-format on */

void hb_rma_win_unhandled(int reason)
{
    hb_rma.stats.windows++;
    hb_rma.stats.windows_pmpi[reason]++;
}

/* This rank's part of the window: registered, or ok = 0 (the others then
 * leave operations to it on PMPI). */
static void describe_self(struct hb_win *w, void *base, MPI_Aint size,
                          int disp_unit, struct hb_rma_target *me)
{
    memset(me, 0, sizeof(*me));
    me->base = (uint64_t)(uintptr_t)base;
    me->size = size > 0 ? (uint64_t)size : 0;
    me->disp_unit = disp_unit;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me->world);
    me->node = hb_rma.node;
    me->rdma = rdma_here(hb_rma.ctx);
    me->next_id = hb_rma.next_id;
    if (me->rdma) {
        struct hb_transport_info info;
        hb_transport_get_info(hb_rma.ctx->rdma->tr, &info);
        me->max_msg = info.max_msg;
    }
    if (!w) {
        me->nomem = 1;
        return;
    }
    w->base = base;
    w->bytes = me->size;
    if (!me->rdma || !me->size)
        return;
    if (hb_rdma_register(hb_rma.ctx->rdma, base, me->size, &w->region) == 0) {
        me->rkey = hb_region_mr(w->region)->rkey;
        me->ok = 1;
    } else {
        w->region = NULL;
    }
    w->mytoken.rkey = me->rkey;
    w->mytoken.ok = me->ok;
}

static struct hb_win *win_new(MPI_Win win, MPI_Comm comm)
{
    struct hb_win *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->win = win;
    w->group = MPI_GROUP_NULL;
    PMPI_Comm_rank(comm, &w->rank);
    PMPI_Comm_size(comm, &w->size);
    size_t n = (size_t)w->size;
    w->targets = calloc(n, sizeof(*w->targets));
    w->lock = calloc(n, 1);
    w->pscw = calloc(n, 1);
    w->tokens = calloc(n, sizeof(MPI_Request));
    w->tokbuf = calloc(n, sizeof(*w->tokbuf));
    w->scratch = calloc(2 * n, sizeof(int));
    if (w->targets && w->lock && w->pscw && w->tokens && w->tokbuf &&
        w->scratch && PMPI_Comm_group(comm, &w->group) == MPI_SUCCESS)
        return w;
    win_destroy(w);
    return NULL;
}

/* After the exchange: the window's id (the largest next id any rank
 * offered, so no rank has it yet) and what every rank agrees on. */
static void adopt(struct hb_win *w)
{
    uint32_t id = 0;
    int nomem = 0;
    for (int i = 0; i < w->size; i++) {
        const struct hb_rma_target *t = &w->targets[i];
        id = t->next_id > id ? t->next_id : id;
        w->any_rdma |= (int)t->rdma;
        nomem |= (int)t->nomem;
    }
    hb_rma.next_id = id + 1;
    w->tag =
        hb_rma.tag_base + HB_RMA_TAGS * (int)(id % (uint32_t)hb_rma.tag_slots);
    if (nomem) /* a rank cannot keep the window: nobody serves it */
        w->any_rdma = 0;
    w->rdma = w->any_rdma && w->targets[w->rank].rdma;
}

static void count_window(const struct hb_win *w)
{
    const struct hb_rma_target *me = &w->targets[w->rank];
    hb_rma.stats.windows++;
    if (w->rdma && (me->ok || !me->size))
        hb_rma.stats.windows_rdma++;
    else
        hb_rma.stats
            .windows_pmpi[w->rdma ? HB_WIN_REGISTRATION : HB_WIN_NO_RDMA]++;
}

/* The exchange of the records runs on the window's own communicator: the
 * window creation is a collective call on comm, so every rank of comm
 * makes this allgather at the same point of its sequence of collectives
 * on comm (right after the creation, before returning to the
 * application), which is all MPI asks for matching collectives.  Later
 * traffic goes on ctx->comm: comm may be freed once the window exists. */
static int exchange(struct hb_win *w, const struct hb_rma_target *me,
                    MPI_Comm comm)
{
    int n = 0;
    PMPI_Comm_size(comm, &n);
    struct hb_rma_target *all = w ? w->targets : calloc(n, sizeof(*me));
    if (!all) /* no memory at all: the others wait in vain (never seen) */
        return -1;
    PMPI_Allgather(me, sizeof(*me), MPI_BYTE, all, sizeof(*me), MPI_BYTE, comm);
    if (!w)
        free(all);
    return w ? 0 : -1;
}

/* Collective over comm.  A window hotbuf cannot serve is simply not
 * entered in the table: every operation on it goes to PMPI.  The checks
 * before the exchange give the same verdict on every rank. */
static void win_add(MPI_Win win, void *base, MPI_Aint size, int disp_unit,
                    MPI_Comm comm)
{
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        hb_rma_win_unhandled(HB_WIN_INTERCOMM);
        return;
    }
    if (!hb_comm_one_world(comm)) { /* world ranks alias: see core/comm.h */
        hb_rma_win_unhandled(HB_WIN_WORLDS);
        return;
    }
    if (!hb_rma.on) {
        hb_rma_win_unhandled(HB_WIN_NO_RDMA);
        return;
    }
    struct hb_win *w = win_new(win, comm);
    struct hb_rma_target me;
    describe_self(w, base, size, disp_unit, &me);
    if (exchange(w, &me, comm)) {
        hb_rma_win_unhandled(HB_WIN_NO_RDMA);
        return;
    }
    adopt(w);
    count_window(w);
    HASH_ADD(hh, hb_rma.wins, win, sizeof(w->win), w);
}

/* ---- renewal of a window's registration (see rma.h) ------------------ */

int hb_rma_win_renew(struct hb_win *w, struct hb_region **old)
{
    struct hb_rdma *rdma = hb_rma.ctx->rdma;
    struct hb_region *now = NULL;
    *old = NULL;
    if (!w->region) /* never registered: the others never route to us */
        return 0;
    /* the cache (after hb_memmon_sync) hands out only a registration of
     * the pages mapped now: ours unless the range changed */
    if (hb_rdma_register(rdma, w->base, w->bytes, &now) != 0)
        now = NULL;
    if (now == w->region) {
        hb_regcache_put(rdma->cache, now);
        return 0;
    }
    *old = w->region;
    w->region = now;
    w->mytoken.rkey = now ? hb_region_mr(now)->rkey : 0;
    w->mytoken.ok = now != NULL;
    w->targets[w->rank].rkey = w->mytoken.rkey;
    w->targets[w->rank].ok = w->mytoken.ok;
    w->dirty = 1;
    hb_rma.stats.republished++;
    return 1;
}

void hb_rma_win_release(struct hb_region *old)
{
    if (old)
        hb_regcache_put(hb_rma.ctx->rdma->cache, old);
}

static int peer(const struct hb_win *w, int k)
{
    return w->targets[((w->rank + k) % w->size + w->size) % w->size].world;
}

/* Dissemination: after round k every rank holds the OR of 2^k ranks'
 * values, so ceil(log2 size) rounds of one int each. */
int hb_rma_win_agree(struct hb_win *w, int mine)
{
    MPI_Comm comm = hb_rma.ctx->comm;
    int any = mine != 0, tag = w->tag + HB_RMA_TAG_AGREE;
    for (int k = 1; k < w->size; k <<= 1) {
        int in = 0;
        PMPI_Sendrecv(&any, 1, MPI_INT, peer(w, k), tag, &in, 1, MPI_INT,
                      peer(w, -k), tag, comm, MPI_STATUS_IGNORE);
        any |= in;
    }
    return any;
}

/* Rare (a window's memory changed): size - 1 pairwise rounds, no memory
 * to allocate, cannot deadlock. */
void hb_rma_win_republish(struct hb_win *w)
{
    MPI_Comm comm = hb_rma.ctx->comm;
    int tag = w->tag + HB_RMA_TAG_RECORD, n = (int)sizeof(*w->targets);
    for (int k = 1; k < w->size; k++) {
        int from = ((w->rank - k) % w->size + w->size) % w->size;
        PMPI_Sendrecv(&w->targets[w->rank], n, MPI_BYTE, peer(w, k), tag,
                      &w->targets[from], n, MPI_BYTE, peer(w, -k), tag, comm,
                      MPI_STATUS_IGNORE);
    }
}

void hb_rma_win_created(MPI_Win win, void *base, MPI_Aint size, int disp_unit,
                        MPI_Comm comm)
{
    hb_nested++;
    win_add(win, base, size, disp_unit, comm);
    hb_nested--;
}

/* The MPI allocated this window's memory, often shared among the node's
 * ranks (Open MPI's osc sm): the monitor may watch it (hb_rdma_trust)
 * until the window is freed. */
void hb_rma_win_allocated(MPI_Win win, void *baseptr, MPI_Aint size,
                          int disp_unit, MPI_Comm comm)
{
    void *base;
    struct hb_win *w;
    struct hb_rdma *rdma = hb_rma.ctx ? hb_rma.ctx->rdma : NULL;
    int trusted;
    memcpy(&base, baseptr,
           sizeof(base)); /* baseptr is a void ** passed as void * */
    trusted = size > 0 && hb_rdma_trust(rdma, base, (size_t)size) == 0;
    hb_rma_win_created(win, base, size, disp_unit, comm);
    if ((w = hb_rma_find(win)) != NULL)
        w->trusted = trusted;
    else if (trusted)
        hb_rdma_untrust(rdma, base, (size_t)size);
}

void hb_rma_win_free(MPI_Win win)
{
    struct hb_win *w = hb_rma_find(win);
    if (!w)
        return;
    hb_nested++;
    HASH_DEL(hb_rma.wins, w);
    if (w->trusted)
        hb_rdma_untrust(hb_rma.ctx->rdma, w->base, (size_t)w->bytes);
    win_destroy(w);
    hb_nested--;
}
