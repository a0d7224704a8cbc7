/* What the generated bodies (build/<mpi>/gen/bodies.h) need: the hooks'
 * headers, and whether a call is recorded and for which call site. */
#ifndef HOTBUF_BINDINGS_H
#define HOTBUF_BINDINGS_H

#include <mpi.h>
#include <stddef.h>

#include "coll/allgather.h"
#include "core/runtime.h"
#include "core/track_mpi.h"
#include "mem/mem.h"
#include "p2p/p2p.h"
#include "p2p/p2p_names.h"
#include "rma/rma.h"

#define HB_CALLER __builtin_return_address(0)
#define HB_EXPORT __attribute__((visibility("default")))

/* MPICH's mpi_f08 routines with a choice buffer (mpi_send_f08ts_ ...)
 * convert their descriptors themselves and end in the C MPI_Send, whose
 * return address is then inside libmpichfort.  Their wrapper (f_bindings.c)
 * marks the thread with HB_F08_PENDING in hb_nested and keeps the
 * application's return address; the C binding that follows takes it over
 * (hb_f08_adopt).  The mark makes hb_should_track() false, so the check
 * costs nothing on the common path: it runs only when a call would
 * otherwise not be recorded. */
#define HB_F08_PENDING (1 << 24)
extern __thread void *hb_f08_caller __attribute__((tls_model("initial-exec")));

static inline void hb_f08_enter(void *caller)
{
    if (hb_nested == 0) {
        hb_f08_caller = caller;
        hb_nested = HB_F08_PENDING;
    }
}

static inline void hb_f08_leave(void)
{
    if (hb_nested == HB_F08_PENDING) /* no C binding took it */
        hb_nested = 0;
}

/* A C binding reached from such a routine: clears the mark, takes over its
 * caller; 0 when the thread is not marked. */
int hb_f08_adopt(void **caller) __attribute__((cold));

/* The call is recorded (tracking hooks), from *caller. */
static inline int hb_tracks(void **caller)
{
    return hb_should_track() || (hb_f08_adopt(caller) && hb_should_track());
}

/* This rank takes part in hotbuf's collectives (window, epoch and
 * Allgather hooks), from *caller. */
static inline int hb_joins(void **caller)
{
    return hb_should_join() || (hb_f08_adopt(caller) && hb_should_join());
}

#endif
