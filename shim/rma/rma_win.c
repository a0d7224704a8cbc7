/* Windows: which ones hotbuf serves, their registration and the exchange
 * of (base, size, disp_unit, rkey) among their ranks (see rma.h). */
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <unistd.h>

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
static int start(const struct hb_ctx *ctx)
{
    memset(&hb_rma, 0, sizeof(hb_rma));
    hb_rma.ctx = ctx;
    hb_rma.node = hb_host_hash();
    int any_rdma;
    hb_rma.on = hb_subsys_agree(ctx, !ctx->cfg->rma || ctx->lock_needed, rdma_here(ctx),
                                &any_rdma);
    if (ctx->cfg->rma && ctx->lock_needed && any_rdma)
        hb_note("MPI_THREAD_MULTIPLE: hot MPI_Put/MPI_Get stay on MPI (hotbuf's transport is "
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
        if (w->pscw[r] == HB_PSCW_WAITING) { /* an epoch left open: drop its tokens */
            PMPI_Cancel(&w->tokens[r]);
            PMPI_Request_free(&w->tokens[r]);
        }
    if (w->region)
        hb_regcache_put(hb_rma.ctx->rdma->cache, w->region);
    PMPI_Comm_free(&w->comm);
    free(w->targets);
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
    HASH_ITER(hh, hb_rma.wins, w, tmp) {
        HASH_DEL(hb_rma.wins, w);
        win_destroy(w);
    }
    hb_rma.on = 0;
}

const struct hb_subsys hb_rma_subsys = {
    .name = "rma",
    .start = start,
    .stop = stop,
    .section = &hb_rma_section,
    .counters = &hb_rma.stats,
};

void hb_rma_win_unhandled(int reason)
{
    hb_rma.stats.windows++;
    hb_rma.stats.windows_pmpi[reason]++;
}

/* This rank's part of the window: registered, or ok = 0 (the others then
 * leave operations to it on PMPI). */
static void describe_self(struct hb_win *w, void *base, MPI_Aint size, int disp_unit,
                          struct hb_rma_target *me)
{
    memset(me, 0, sizeof(*me));
    me->base = (uint64_t)(uintptr_t)base;
    me->size = size > 0 ? (uint64_t)size : 0;
    me->disp_unit = disp_unit;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me->world);
    me->node = hb_rma.node;
    me->rdma = rdma_here(hb_rma.ctx);
    if (!me->rdma || !me->size)
        return;
    if (hb_rdma_register(hb_rma.ctx->rdma, base, me->size, &w->region) == 0) {
        me->rkey = hb_region_mr(w->region)->rkey;
        me->ok = 1;
    } else {
        w->region = NULL;
    }
}

static int alloc_state(struct hb_win *w)
{
    size_t n = (size_t)w->size;
    w->targets = calloc(n, sizeof(*w->targets));
    w->lock = calloc(n, 1);
    w->pscw = calloc(n, 1);
    w->tokens = calloc(n, sizeof(MPI_Request));
    w->scratch = calloc(2 * n, sizeof(int));
    return w->targets && w->lock && w->pscw && w->tokens && w->scratch ? 0 : -1;
}

/* Collective over comm.  A window hotbuf cannot serve is simply not
 * entered in the table: every operation on it goes to PMPI. */
static void win_add(MPI_Win win, void *base, MPI_Aint size, int disp_unit, MPI_Comm comm)
{
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) {
        hb_rma_win_unhandled(HB_WIN_INTERCOMM);
        return;
    }
    if (!hb_rma.on) {
        hb_rma_win_unhandled(HB_WIN_NO_RDMA);
        return;
    }
    struct hb_win *w = calloc(1, sizeof(*w));
    if (!w || PMPI_Comm_dup(comm, &w->comm) != MPI_SUCCESS) {
        free(w); /* the others' allgather below would hang: cannot happen short of OOM */
        hb_rma_win_unhandled(HB_WIN_NO_RDMA);
        return;
    }
    w->win = win;
    PMPI_Comm_rank(w->comm, &w->rank);
    PMPI_Comm_size(w->comm, &w->size);
    struct hb_rma_target me, *all;
    int ok = alloc_state(w) == 0;
    if (ok)
        describe_self(w, base, size, disp_unit, &me);
    else
        memset(&me, 0, sizeof(me)); /* no memory: take part in the exchange, serve nothing */
    all = ok ? w->targets : calloc(w->size, sizeof(me));
    PMPI_Allgather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE, w->comm);
    for (int i = 0; all && i < w->size; i++)
        w->any_rdma |= all[i].rdma;
    if (!ok) /* keep the window (the others' synchronization needs it), never route */
        free(all);
    w->rdma = me.rdma;
    hb_rma.stats.windows++;
    if (w->rdma && (me.ok || !me.size))
        hb_rma.stats.windows_rdma++;
    else
        hb_rma.stats.windows_pmpi[w->rdma ? HB_WIN_REGISTRATION : HB_WIN_NO_RDMA]++;
    HASH_ADD(hh, hb_rma.wins, win, sizeof(w->win), w);
}

void hb_rma_win_created(MPI_Win win, void *base, MPI_Aint size, int disp_unit, MPI_Comm comm)
{
    hb_nested++;
    win_add(win, base, size, disp_unit, comm);
    hb_nested--;
}

void hb_rma_win_allocated(MPI_Win win, void *baseptr, MPI_Aint size, int disp_unit,
                          MPI_Comm comm)
{
    void *base;
    memcpy(&base, baseptr, sizeof(base)); /* baseptr is a void ** passed as void * */
    hb_rma_win_created(win, base, size, disp_unit, comm);
}

void hb_rma_win_free(MPI_Win win)
{
    struct hb_win *w = hb_rma_find(win);
    if (!w)
        return;
    hb_nested++;
    HASH_DEL(hb_rma.wins, w);
    win_destroy(w);
    hb_nested--;
}
