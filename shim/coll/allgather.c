/* MPI_Allgather on hotbuf's RDMA: process-wide switch and the entry points
 * the wrappers call (see allgather.h). */
#include "allgather.h"

#include <string.h>

#include "allgather_int.h"
#include "core/runtime.h"
#include "core/subsys.h"
#include "core/track_mpi.h"

/* Module state.  Static: the wrappers that reach it have no context. */
static struct hb_ag ag = {.keyval = MPI_KEYVAL_INVALID};
#define HB_SITE_NONE 0xffff /* this rank does not track */

/* Every rank must agree, since the first Allgather on a communicator is
 * then a collective of hotbuf's own: on when no rank switched it off or
 * runs MPI_THREAD_MULTIPLE, and some rank has the transport and cache. */
static int start(const struct hb_ctx *ctx)
{
    memset(&ag, 0, sizeof(ag));
    ag.ctx = ctx;
    ag.keyval = MPI_KEYVAL_INVALID;
    ag.on = hb_subsys_agree(ctx, !ctx->cfg->allgather || ctx->lock_needed,
                            ctx->rdma->tr && ctx->rdma->cache, NULL) &&
            hb_ag_keyval_create(&ag) == MPI_SUCCESS;
    return 0;
}

static void stop(const struct hb_ctx *ctx)
{
    (void)ctx;
    hb_ag_free_all(&ag);
    ag.on = 0;
}

const struct hb_subsys hb_ag_subsys = {
    .name = "allgather",
    .start = start,
    .stop = stop,
    .section = &hb_ag_section,
    .counters = &ag.stats,
};

int hb_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm, void *ret)
{
    uint16_t site = hb_should_track() ? hb_track_allgather(rbuf, rcount, rtype, comm, ret)
                                      : HB_SITE_NONE;
    if (!ag.on)
        return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    hb_nested++;
    struct hb_ag_comm *c = hb_ag_comm_get(&ag, comm);
    int tsize = 0, done = -1;
    PMPI_Type_size(rtype, &tsize);
    uint64_t block = rcount > 0 && tsize > 0 ? (uint64_t)rcount * (uint64_t)tsize : 0;
    if (!c || c->reason >= 0)
        ag.stats.calls_pmpi[HB_AGP_COMM]++;
    else if (!block)
        ag.stats.calls_pmpi[HB_AGP_EMPTY]++;
    else
        done = hb_ag_run(&ag, c, sbuf, scount, stype, rbuf, rcount, rtype, block);
    hb_nested--;
    if (done != 0)
        return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    if (site != HB_SITE_NONE)
        hb_tracker_count_rerouted(ag.ctx->tracker, HB_OP_ALLGATHER, site);
    return MPI_SUCCESS;
}

int hb_iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req, void *ret)
{
    if (hb_should_track())
        hb_track_allgather(rbuf, rcount, rtype, comm, ret);
    if (ag.on)
        ag.stats.calls_pmpi[HB_AGP_NONBLOCKING]++;
    return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
