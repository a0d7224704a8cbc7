/* hotbuf's process-wide state and its life cycle (MPI_Init .. MPI_Finalize).
 *
 * The PMPI wrappers have no context argument, so the state is one global
 * struct: the only global in the library besides the per-thread nesting
 * counter below.
 */
#ifndef HOTBUF_RUNTIME_H
#define HOTBUF_RUNTIME_H

#include <mpi.h>
#include <stdatomic.h>

#include "config/config.h"
#include "track/costmodel.h"
#include "rdma/rdma.h"
#include "report/report.h"
#include "track/tracker.h"

struct hb_runtime {
    int tracking;          /* wrappers record calls (set after init, cleared at finalize):
                              HB_TRACK_FAST, or HB_TRACK_LOCKED under MPI_THREAD_MULTIPLE */
    int lock_needed;       /* MPI_THREAD_MULTIPLE: serialize the tracker */
    atomic_flag lock;
    int init_done, finalize_done, aborted;
    int collective;        /* joins the collectives at finalize (report, RDMA teardown) */
    int tracker_ok;        /* the tracker was set up on this rank */
    int rank, size, thread_level;
    MPI_Comm comm;         /* hotbuf's own duplicate of MPI_COMM_WORLD */
    struct hb_config cfg;
    struct hb_costmodel cost;
    struct hb_tracker tracker;
    struct hb_rdma rdma;
    char notes[HB_MAX_NOTES][HB_NOTE_LEN];
    int nnotes;
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
        while (atomic_flag_test_and_set_explicit(&hb_rt.lock, memory_order_acquire))
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

/* Drives MPI's progress engine once (a waiting rank may be the one another
 * rank's MPI operation depends on); the yield callback of hotbuf's waits. */
void hb_mpi_progress(void *ctx);

/* Hash of this host's name: ranks with equal hashes share a node. */
uint32_t hb_host_hash(void);

/* One line, printed on rank 0 and kept for the report's notes. */
void hb_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
