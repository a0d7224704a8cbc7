/* Hot MPI_Put / MPI_Get on hotbuf's own queue pairs (Rashti & Afsahi
 * 2011, section 3.2): a reused origin buffer is registered once (through
 * the registration cache), Put becomes an RDMA write straight from it into
 * the target's window and Get an RDMA read straight into it.  Everything
 * else goes to PMPI unchanged.
 *
 *   rma_win.c    windows: registration of the window memory, one
 *                allgather of (base, size, disp_unit, rkey) per window,
 *                renewal of a registration whose memory changed
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
 * Private communicators: none per window.  The creation exchange runs on
 * the window's own communicator (window creation is a collective on it,
 * so every rank makes the allgather at the same point of its collective
 * sequence there).  Everything later (fence agreement, records, PSCW
 * tokens) is point-to-point on hotbuf's one duplicate of MPI_COMM_WORLD,
 * addressed by world rank, with tags of the window's own (an id agreed at
 * creation: the largest "next id" of its ranks; window ids wrap after
 * (MPI_TAG_UB - 65536) / 3 windows: two windows alive together with ids
 * that far apart would share tags).  A window whose communicator spans more than one
 * MPI_COMM_WORLD (MPI_Comm_spawn, _connect) stays on MPI: world ranks
 * alias there ("multiple_worlds").
 *
 * No stale window registration, local or remote.  A target may change
 * the mapping of its own window memory (madvise DONTNEED, mremap, munmap
 * + mmap) as a local update, in an epoch in which no origin accesses the
 * changed part; the memory monitor then retires the registration.  The
 * old registration keeps the old pages, so no origin may use its rkey
 * for an access that starts after the change.  A rank renews its
 * registration (hb_rma_win_renew: the cache hands out only a
 * registration of the pages mapped now) and the origins learn the new
 * rkey at a synchronization point before their next access:
 *  - Fence (every rank passes it): after each fence that opens an epoch,
 *    every rank renews, then all agree (one OR of one int, dissemination
 *    over ceil(log2 n) rounds on hotbuf's communicator) whether any rank
 *    renewed since the others last learned its record; if so every rank
 *    sends its record to every other one (rare).  Only then does the
 *    fence return, so no origin's next access uses an old rkey.  The old
 *    registration is released after that (operations of the epoch that
 *    just closed may have used it on parts that did not change).  Cost:
 *    the agreement is about one more barrier per opening fence, on
 *    windows hotbuf serves only; it replaces the barrier hotbuf already
 *    added after MPI_MODE_NOPRECEDE fences.  No cheaper scheme without an
 *    extra message: a rank cannot know locally whether another rank's
 *    memory changed, and the fence itself carries no payload.
 *  - Post/start: MPI_Win_post renews, and the token it sends each origin
 *    carries the target's rkey; an origin takes it in before its first
 *    access to that target.  The old registration is released at once
 *    (the previous exposure epoch is over), and the record is sent again
 *    to everyone at the next fence.
 *  - Passive target (locks): there is no point every party passes.  A
 *    rank renews at its own MPI_Win_lock/unlock calls and releases the
 *    old registration at once; an origin that still holds the old rkey
 *    then gets a remote access error instead of the old pages: the
 *    operation is redone on PMPI and that peer stays on PMPI.  Covered:
 *    a target that makes the change inside a lock of its own window
 *    (which MPI's separate model requires for local updates).  Not
 *    covered: a change followed by no lock/unlock, fence or post on that
 *    window before an origin's next passive access (e.g. madvise, then a
 *    barrier): the origin may still use the old registration.
 *
 * Test only: HOTBUF_TEST_RMA_FAIL=N (read once at start) reports every
 * Nth RDMA operation of this path failed without posting it, to test the
 * redo on PMPI (Put/Get at the next synchronization, Rput/Rget at once,
 * handing back MPI's request).
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
void hb_rma_win_created(MPI_Win win, void *base, MPI_Aint size, int disp_unit,
                        MPI_Comm comm);
void hb_rma_win_allocated(MPI_Win win, void *baseptr, MPI_Aint size,
                          int disp_unit, MPI_Comm comm);
void hb_rma_win_unhandled(int reason); /* enum hb_rma_win_reason */
void hb_rma_win_free(MPI_Win win);     /* before PMPI_Win_free */

/* The operations: track the origin buffer, then RDMA or PMPI.  req is NULL
 * for Put/Get.  Return what the MPI call returns. */
int hb_rma_put(const void *obuf, int ocount, MPI_Datatype otype, int target,
               MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win,
               MPI_Request *req, void *ret);
int hb_rma_get(void *obuf, int ocount, MPI_Datatype otype, int target,
               MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win,
               MPI_Request *req, void *ret);

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
