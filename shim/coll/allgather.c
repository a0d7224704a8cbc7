/* MPI_Allgather on hotbuf's RDMA: process-wide switch and the entry points
 * the wrappers call (see allgather.h). */
#include "allgather.h"

#include <string.h>

#include "allgather_int.h"
#include "core/runtime.h"
#include "core/track_mpi.h"

struct hb_ag_summary hb_ag_stats;
static int ag_on; /* agreed by every rank at start */
#define HB_SITE_NONE 0xffff /* this rank does not track */

/* Every rank must agree, since the first Allgather on a communicator is
 * then a collective of hotbuf's own: on when no rank switched it off or
 * runs MPI_THREAD_MULTIPLE, and some rank has the transport and cache. */
void hb_ag_start(void)
{
    int local[2] = {!hb_rt.cfg.allgather || hb_rt.lock_needed, hb_rt.rdma.tr && hb_rt.rdma.cache};
    int all[2] = {1, 0};
    memset(&hb_ag_stats, 0, sizeof(hb_ag_stats));
    ag_on = 0;
    if (PMPI_Allreduce(local, all, 2, MPI_INT, MPI_MAX, hb_rt.comm) != MPI_SUCCESS)
        return;
    ag_on = !all[0] && all[1] && hb_ag_keyval_create() == MPI_SUCCESS;
}

void hb_ag_stop(void)
{
    hb_ag_free_all();
    ag_on = 0;
}

void hb_ag_summarize(struct hb_ag_summary *s)
{
    *s = hb_ag_stats;
}

int hb_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm, void *ret)
{
    uint16_t site = hb_should_track() ? hb_track_allgather(rbuf, rcount, rtype, comm, ret)
                                      : HB_SITE_NONE;
    if (!ag_on)
        return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    hb_nested++;
    struct hb_ag_comm *c = hb_ag_comm_get(comm);
    int tsize = 0, done = -1;
    PMPI_Type_size(rtype, &tsize);
    uint64_t block = rcount > 0 && tsize > 0 ? (uint64_t)rcount * (uint64_t)tsize : 0;
    if (!c || c->reason >= 0)
        hb_ag_stats.calls_pmpi[HB_AGP_COMM]++;
    else if (!block)
        hb_ag_stats.calls_pmpi[HB_AGP_EMPTY]++;
    else
        done = hb_ag_run(c, sbuf, scount, stype, rbuf, rcount, rtype, block);
    hb_nested--;
    if (done != 0)
        return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    if (site != HB_SITE_NONE) {
        hb_rt.tracker.cls[HB_OP_ALLGATHER].rerouted_calls++;
        hb_rt.tracker.sites.site[site].rerouted_calls++;
    }
    return MPI_SUCCESS;
}

int hb_iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req, void *ret)
{
    if (hb_should_track())
        hb_track_allgather(rbuf, rcount, rtype, comm, ret);
    if (ag_on)
        hb_ag_stats.calls_pmpi[HB_AGP_NONBLOCKING]++;
    return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
