/* The list of subsystems, in start order (they stop in reverse) and in the
 * order of their report sections.
 *
 * Why a list of its own: it is the only place in hotbuf that names the
 * subsystems.  runtime.c and the report iterate over it and so know none
 * of them; a subsystem depends on core, never the other way round, and
 * adding one (point-to-point) is one line here.  Only core/subsys.c
 * includes this file.
 *
 * hb_rdma_subsys is core's own entry for the RDMA side (shim/rdma): it
 * starts and stops with the runtime itself and only contributes the
 * report's RDMA section, which comes first.  hb_progress_subsys likewise
 * only reports on the progress hook, which the runtime installs.
 */
#ifndef HOTBUF_SUBSYS_LIST_H
#define HOTBUF_SUBSYS_LIST_H

#define HB_SUBSYS_FOR_EACH(_)                                                  \
    _(hb_rdma_subsys)     /* core/rdma_subsys.c: the report's RDMA section */  \
    _(hb_progress_subsys) /* core/progress_subsys.c: the progress hook's */    \
    _(hb_persist_subsys)  /* persist/persist.c: persistent send requests */    \
    _(hb_mem_subsys)      /* mem/mem_alloc.c: MPI_Alloc_mem, registered */     \
    _(hb_rma_subsys)      /* rma/rma_win.c: MPI_Put/MPI_Get on RDMA */         \
    _(hb_ag_subsys)       /* coll/allgather.c: MPI_Allgather on RDMA */        \
    _(hb_p2p_subsys)      /* p2p/p2p.c: point-to-point receive side */

#endif
