/* Progress has one owner.  Whatever must move while a rank waits (the
 * transport's completion queue and connection handshakes today; later
 * point-to-point's ring drain, which must run inside any MPI call)
 * registers a callback here, and every wait in hotbuf drives them through
 * hb_progress() or hb_progress_yield().  The progress hook
 * (progress_hook.c) drives them too while the rank sits in any blocking
 * MPI call, hotbuf's or the application's (see "Progress inside MPI"
 * below).
 *
 * Callbacks run in registration order, on the calling thread; they must
 * not register or remove callbacks.  Not thread-safe, like the transport:
 * the paths that wait (RMA, Allgather) are off under MPI_THREAD_MULTIPLE,
 * and so is the hook.
 */
#ifndef HOTBUF_PROGRESS_H
#define HOTBUF_PROGRESS_H

#include <mpi.h>

typedef void (*hb_progress_fn)(void *arg);

#define HB_PROGRESS_MAX 8

/* The communicator hb_progress_yield probes (hotbuf's own). */
void hb_progress_init(MPI_Comm comm);

/* 0, or -1 when HB_PROGRESS_MAX callbacks are registered already. */
int hb_progress_add(hb_progress_fn fn, void *arg);
void hb_progress_remove(hb_progress_fn fn, void *arg);

/* Runs every callback once.  Cheap when there is nothing to do.  Never
 * re-entered: a call made while callbacks are running (from the hook, when
 * a callback's PMPI call drives MPI's progress, or from another thread)
 * returns at once.  1 when the callbacks ran, 0 when skipped. */
int hb_progress(void);

/* The yield of every wait (an hb_tr_yield_fn; arg unused): hotbuf's
 * progress, then MPI's once (a waiting rank may be the one another rank's
 * MPI operation depends on), then the CPU.  With more ranks than cores
 * (oversubscribed nodes, the test guest) the rank being waited for needs
 * this CPU; alone on a core it costs well under a microsecond. */
void hb_progress_yield(void *arg);

/* ---- Progress inside MPI (progress_hook.c) ------------------------------
 *
 * hb_progress() also runs from inside MPI's own progress engine, so that a
 * rank blocked in any MPI call (MPI_Barrier, a collective, MPI_Recv, a
 * window's lock on the target side) still answers hotbuf's connection
 * requests and drains its completions.  Mechanisms, chosen at run time:
 *   Open MPI  opal_progress_register() of libopen-pal: opal_progress()
 *             calls the hook on each pass of every wait.
 *   MPICH     ch4:ucx: ucp_worker_progress() is interposed by this library
 *             (progress_hook_ucp.c); MPICH's progress engine calls it on
 *             each pass.  Other devices: no hook (MPICH 4.0's
 *             MPIX_Grequest_start poll function is only called while the
 *             generalized request itself is waited for, never from a
 *             barrier or a receive: checked, unusable).
 * The hook runs hb_progress() every HB_PROGRESS_HOOK_EVERY-th pass.
 *
 * What a callback may call from inside the hook:
 *   - no hotbuf wait that blocks on another rank: that rank may itself be
 *     waiting for this one, inside MPI;
 *   - PMPI calls that do not block: PMPI_Iprobe/PMPI_Improbe/PMPI_Imrecv/
 *     PMPI_Test on hotbuf's own communicators, and PMPI_Improbe +
 *     PMPI_Imrecv (+ PMPI_Test of the receive) on the application's
 *     communicators (the point-to-point engine's claims; nonblocking
 *     sends are the same kind of call, but untested from here).  Those
 *     drive MPI's progress again,
 *     which re-enters the hook: hb_progress() then returns at once, so
 *     there is no recursion into hotbuf.  Checked on both MPIs by
 *     tests/mpi/progress_hook.c with the test probe (HOTBUF_TEST_
 *     PROGRESS_PROBE=1, progress_probe.c: PMPI_Iprobe on hotbuf's
 *     communicator and PMPI_Improbe + PMPI_Imrecv + PMPI_Test claiming
 *     the test's messages on MPI_COMM_WORLD from every hook pass,
 *     while the rank sits in MPI_Barrier, MPI_Allreduce and MPI_Recv).
 *     Open MPI 4.1: opal_progress() is then called recursively from our
 *     callback.  It holds no lock around its callback loop in a job that
 *     is not MPI_THREAD_MULTIPLE, and the BTL/PML progress functions are
 *     our callback's siblings in that loop, so none of them is on the
 *     stack when it recurses: safe.  MPICH 4.0 ch4:ucx: the netmod's
 *     progress is a bare ucp_worker_progress() call, and the hook runs
 *     after the real one has returned, so the nested PMPI call re-enters
 *     MPICH's progress engine with no UCX or netmod work half-done, and
 *     UCX is never re-entered from one of its own callbacks (which UCX
 *     forbids): safe.  Not under MPI_THREAD_MULTIPLE (the hook is off).
 *   - never PMPI calls that block (PMPI_Wait, collectives): a deadlock when
 *     the peer sits in the same hook.
 *
 * Test only (not settings): HOTBUF_TEST_PROGRESS_HOOK=0 leaves the hook
 * out, HOTBUF_TEST_PROGRESS_PROBE=1 adds the probe callback above; the
 * exported hotbuf_test_progress_passes() and hotbuf_test_progress_claimed()
 * return the hook's passes and the probe's claimed messages so far (a test
 * program finds them with dlsym). */
#define HB_PROGRESS_HOOK_EVERY 16

/* After the subsystems started (their callbacks are registered); own is
 * hotbuf's communicator (the check that MPI's progress reaches the hook
 * probes it).  Returns
 * 0 when the hook is active, 1 when it is off by choice (MPI_THREAD_
 * MULTIPLE, the test switch), -1 when this MPI has no usable mechanism.
 * The reason is in hb_progress_hook_status(). */
int hb_progress_hook_install(MPI_Comm own, int thread_level);

/* First thing at finalize: MPI's progress no longer calls hotbuf. */
void hb_progress_hook_remove(void);

/* 1 while the hook is installed and MPI's progress was seen to reach it
 * (a start-up check); what other parts ask before relying on it. */
int hb_progress_hook_active(void);

/* One line: the mechanism, or why there is none. */
const char *hb_progress_hook_status(void);

/* Passes in which the hook ran hb_progress(), and whether it was ever
 * active (kept after removal, for the report). */
unsigned long hb_progress_hook_passes(void);
int hb_progress_hook_was_active(void);

#endif
