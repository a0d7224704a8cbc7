/* hotbuf's process-wide state and its life cycle (MPI_Init .. MPI_Finalize).
 *
 * The PMPI wrappers have no context argument, so the runtime's state is one
 * global struct, hb_rt.  Besides it and the per-thread nesting counter
 * below, the mutable globals are one module-state struct per part that the
 * wrappers reach without a context, each saying so where it is defined:
 * the datatype cache (track_mpi.c), notes (note.c), progress callbacks
 * (progress.c), and each subsystem's module state.  The
 * subsystems get the runtime's objects through the struct hb_ctx they are
 * started with (ctx.h), never through hb_rt.  (Outside shim/: the memory
 * monitor's process-wide state in regcache/.)
 */
#ifndef HOTBUF_RUNTIME_H
#define HOTBUF_RUNTIME_H

#include <mpi.h>
#include <stdatomic.h>

#include "config/config.h"
#include "ctx.h"
#include "rdma/rdma.h"
#include "track/costmodel.h"
#include "track/tracker.h"

struct hb_runtime {
    int tracking; /* wrappers record calls (set after init, cleared at finalize):
                              HB_TRACK_FAST, or HB_TRACK_LOCKED under MPI_THREAD_MULTIPLE */
    int lock_needed; /* MPI_THREAD_MULTIPLE: serialize the tracker */
    atomic_flag lock;
    int init_done, finalize_done, aborted;
    int collective; /* joins the collectives at finalize (report, RDMA teardown) */
    struct hb_config cfg;
    struct hb_costmodel cost;
    struct hb_tracker tracker;
    struct hb_rdma rdma;
    struct hb_ctx ctx; /* what subsystems get: points into the above */
};

extern struct hb_runtime hb_rt;

enum { HB_TRACK_OFF, HB_TRACK_FAST, HB_TRACK_LOCKED };

/* Calls made by hotbuf itself, or by the MPI library underneath a wrapper
 * (MPICH's Fortran bindings call the C MPI_* functions), must not be
 * counted twice: wrappers record only at nesting depth 0. */
extern __thread int hb_nested __attribute__((tls_model("initial-exec")));

static inline int hb_should_track(void)
{
    return hb_rt.tracking && !hb_nested;
}

/* Hooks that other ranks depend on (window exchange, epoch tokens, the
 * RDMA Allgather) must run on every rank alike, whether or not this rank
 * tracks: they follow hotbuf's collective participation, not tracking. */
static inline int hb_should_join(void)
{
    return hb_rt.collective && !hb_rt.finalize_done && !hb_nested;
}

static inline void hb_lock(void)
{
    if (hb_rt.lock_needed)
        while (atomic_flag_test_and_set_explicit(&hb_rt.lock,
                                                 memory_order_acquire))
            ;
}

static inline void hb_unlock(void)
{
    if (hb_rt.lock_needed)
        atomic_flag_clear_explicit(&hb_rt.lock, memory_order_release);
}

/* Idempotent hooks: whichever wrapper (C or Fortran) gets there first runs
 * them.  after_init must follow a successful PMPI_Init*; before_finalize
 * precedes PMPI_Finalize (the report uses PMPI collectives). */
void hb_runtime_after_init(int provided);
void hb_runtime_before_finalize(void);
void hb_runtime_note_abort(void);

#endif
