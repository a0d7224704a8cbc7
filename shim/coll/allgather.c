/* MPI_Allgather on hotbuf's RDMA: process-wide switch and the entry points
 * the wrappers call (see allgather.h). */
#include "allgather.h"

#include <string.h>

#include "allgather_int.h"
#include "core/note.h"
#include "core/runtime.h"
#include "core/subsys.h"
#include "core/track_mpi.h"

/* Module state.  Static: the wrappers that reach it have no context. */
static struct hb_ag ag = {.keyval = MPI_KEYVAL_INVALID};

/* Whether MPI_Pack of a non-contiguous type yields the plain bytes of its
 * type map, as the algorithms assume when ranks' types differ. */
static int pack_is_plain(void)
{
    int in[4] = {1, 2, 3, 4}, out[2] = {0, 0}, pos = 0;
    MPI_Datatype every_other;
    if (PMPI_Type_vector(2, 1, 2, MPI_INT, &every_other) != MPI_SUCCESS)
        return 0;
    PMPI_Type_commit(&every_other);
    int rc =
        PMPI_Pack(in, 1, every_other, out, sizeof(out), &pos, MPI_COMM_SELF);
    PMPI_Type_free(&every_other);
    return rc == MPI_SUCCESS && pos == (int)sizeof(out) && out[0] == 1 &&
           out[1] == 3;
}

/* Every rank must agree, since the first Allgather on a communicator is
 * then a collective of hotbuf's own: on when no rank switched it off or
 * runs MPI_THREAD_MULTIPLE, and some rank has the transport and cache.
 * Under MPI_THREAD_MULTIPLE (on any rank) every call is counted under
 * "threads": no state can be made (the transport is single-threaded). */
static int start(const struct hb_ctx *ctx)
{
    int any_rdma = 0,
        off = !ctx->cfg->allgather || ctx->lock_needed || !pack_is_plain();
    memset(&ag, 0, sizeof(ag));
    ag.ctx = ctx;
    ag.keyval = MPI_KEYVAL_INVALID;
    /* the dispatcher first: a peer may write as soon as it agreed */
    if (!off && ctx->rdma->tr &&
        hb_rdma_imm_register(ctx->rdma, HB_IMM_CLASS_AG, hb_ag_on_imm, &ag))
        off = 1; /* the class is taken: a bug, but never a hang */
    ag.on = hb_subsys_agree(ctx, off, ctx->rdma->tr && ctx->rdma->cache,
                            &any_rdma) &&
            hb_ag_keyval_create(&ag) == MPI_SUCCESS;
    ag.threads =
        ctx->cfg->allgather && !hb_subsys_agree(ctx, ctx->lock_needed, 1, NULL);
    if (ag.threads && any_rdma)
        hb_note("MPI_THREAD_MULTIPLE: MPI_Allgather stays on MPI "
                "(hotbuf's transport is single-threaded)");
    return 0;
}

static void stop(const struct hb_ctx *ctx)
{
    hb_ag_free_all(&ag);
    if (ctx->rdma->tr)
        hb_rdma_imm_register(ctx->rdma, HB_IMM_CLASS_AG, NULL, NULL);
    ag.on = 0;
}

/* clang-format off */
const struct hb_subsys hb_ag_subsys = {
    .name = "allgather", .start = start, .stop = stop,
    .section = &hb_ag_section, .counters = &ag.stats,
};
/* clang-format on */

int hb_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, MPI_Comm comm, void *ret)
{
    uint16_t site = hb_should_track()
                        ? hb_track_allgather(rbuf, rcount, rtype, comm, ret)
                        : HB_SITE_NONE;
    if (ag.threads) /* calls may be concurrent */
        __atomic_fetch_add(&ag.stats.calls_pmpi[HB_AGP_THREADS], 1,
                           __ATOMIC_RELAXED);
    if (!ag.on)
        return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    hb_nested++;
    struct hb_ag_comm *c = hb_ag_comm_get(&ag, comm);
    int tsize = 0, done = -1;
    PMPI_Type_size(rtype, &tsize);
    uint64_t block =
        rcount > 0 && tsize > 0 ? (uint64_t)rcount * (uint64_t)tsize : 0;
    if (!c || c->reason >= 0)
        ag.stats.calls_pmpi[HB_AGP_COMM]++;
    else if (!block)
        ag.stats.calls_pmpi[HB_AGP_EMPTY]++;
    else
        done =
            hb_ag_run(&ag, c, sbuf, scount, stype, rbuf, rcount, rtype, block);
    hb_nested--;
    if (done != 0)
        return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    if (site != HB_SITE_NONE)
        hb_tracker_count_rerouted(ag.ctx->tracker, HB_OP_ALLGATHER, site);
    return MPI_SUCCESS;
}

int hb_iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                  int rcount, MPI_Datatype rtype, MPI_Comm comm,
                  MPI_Request *req, void *ret)
{
    if (hb_should_track())
        hb_track_allgather(rbuf, rcount, rtype, comm, ret);
    if (ag.threads)
        __atomic_fetch_add(&ag.stats.calls_pmpi[HB_AGP_THREADS], 1,
                           __ATOMIC_RELAXED);
    else if (ag.on)
        ag.stats.calls_pmpi[HB_AGP_NONBLOCKING]++;
    return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
