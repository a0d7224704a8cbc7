/* What a subsystem is given when it starts: the runtime's settings,
 * communicator and shared objects.  Subsystems keep the pointer in their
 * module state instead of reading the runtime's global.  Valid from
 * start until stop; the pointed-to objects belong to the runtime. */
#ifndef HOTBUF_CTX_H
#define HOTBUF_CTX_H

#include <mpi.h>

#include "config/config.h"
#include "rdma/rdma.h"
#include "track/costmodel.h"
#include "track/tracker.h"

struct hb_ctx {
    const struct hb_config *cfg; /* agreed by all ranks where it matters */
    MPI_Comm comm;               /* hotbuf's own duplicate of MPI_COMM_WORLD */
    int rank, size;              /* in comm */
    int thread_level;            /* as MPI_Init_thread provided */
    int spawned;     /* started by MPI_Comm_spawn (a parent at MPI_Init) */
    int lock_needed; /* MPI_THREAD_MULTIPLE: tracker locked */
    struct hb_tracker *tracker; /* NULL where the tracker could not start */
    const struct hb_costmodel *cost;
    struct hb_rdma *rdma; /* rdma->tr NULL: no RDMA on this rank */
};

#endif
