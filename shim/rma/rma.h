/* Hot MPI_Put / MPI_Get on hotbuf's own queue pairs (Rashti & Afsahi
 * 2011, section 3.2): a reused origin buffer is registered once (through
 * the registration cache), Put becomes an RDMA write straight from it into
 * the target's window and Get an RDMA read straight into it.  Everything
 * else goes to PMPI unchanged.
 *
 *   rma_win.c    windows: registration of the window memory and one
 *                allgather of (base, size, disp_unit, rkey) per window
 *   rma_route.c  per call: is this operation ours?  post it, or PMPI
 *   rma_epoch.c  synchronization: complete our operations before each
 *                PMPI synchronization call, and know when a target's
 *                epoch allows a direct write (fence, PSCW, locks)
 *   rma_pending.c  the operations in flight: remember, complete, redo on
 *                PMPI when their peer failed
 *   rma_stats.c  counters, reasons and the report section
 *
 * Why mixing our writes with MPI's own operations keeps MPI's semantics:
 * MPI leaves the result of conflicting accesses within one epoch
 * undefined (except accumulates, which hotbuf never touches), so two
 * operations of one epoch may complete in any order and by any path.  What
 * must hold is the epoch boundary: an operation may reach the target only
 * once the target's exposure epoch has begun, and must be complete at the
 * origin before the closing synchronization call.  hotbuf completes every
 * outstanding RDMA operation before it calls the PMPI synchronization
 * function (so MPI's own closing handshake orders them before the target
 * sees the epoch end), and routes an operation only when it knows the
 * target's epoch has begun (see rma_epoch.c); otherwise it uses PMPI.
 *
 * Not used under MPI_THREAD_MULTIPLE (the transport is single-threaded);
 * the report says so.
 */
#ifndef HOTBUF_RMA_H
#define HOTBUF_RMA_H

#include <mpi.h>

#include "rma_stats.h"

/* The subsystem (core/subsys_list.h) is hb_rma_subsys: its start agrees on
 * whether rerouting is on (every rank must take the same window
 * collectives); its stop releases the windows the application never
 * freed. */

/* Windows (collective, like the MPI calls they follow). */
void hb_rma_win_created(MPI_Win win, void *base, MPI_Aint size, int disp_unit, MPI_Comm comm);
void hb_rma_win_allocated(MPI_Win win, void *baseptr, MPI_Aint size, int disp_unit,
                          MPI_Comm comm);
void hb_rma_win_unhandled(int reason); /* enum hb_rma_win_reason */
void hb_rma_win_free(MPI_Win win);     /* before PMPI_Win_free */

/* The operations: track the origin buffer, then RDMA or PMPI.  req is NULL
 * for Put/Get.  Return what the MPI call returns. */
int hb_rma_put(const void *obuf, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp,
               int tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req, void *ret);
int hb_rma_get(void *obuf, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp,
               int tcount, MPI_Datatype ttype, MPI_Win win, MPI_Request *req, void *ret);

/* Synchronization.  "before" hooks complete hotbuf's operations; "after"
 * hooks record the epoch the PMPI call opened.  target -1 = every target. */
void hb_rma_before_sync(MPI_Win win, int target);
void hb_rma_after_fence(MPI_Win win, int assert);
void hb_rma_after_lock(MPI_Win win, int target, int assert);
void hb_rma_after_unlock(MPI_Win win, int target);
void hb_rma_after_post(MPI_Win win, MPI_Group group);
void hb_rma_after_start(MPI_Win win, MPI_Group group);
void hb_rma_before_complete(MPI_Win win);

#endif
