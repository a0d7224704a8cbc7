/* MPI_Allgather directly on hotbuf's RDMA (the RDMA Allgather paper):
 * no copies through MPI's point-to-point layer, no per-step registration,
 * no per-step address exchange.
 *
 *   allgather_comm.c  per-communicator state: created collectively on the
 *                     first Allgather of a communicator (registered area:
 *                     flags, address slots, a two-half collective buffer;
 *                     one allgather of (address, rkey, node) over PMPI;
 *                     connections to the peers the algorithms use), freed
 *                     with the communicator through an attribute
 *   allgather_algo.c  one call: recursive doubling on 2^k ranks, the ring
 *                     otherwise and for large blocks; copy-based through
 *                     the collective buffer for small blocks, zero-copy
 *                     into the registered receive buffer for large ones
 *   allgather_stats.c counters, reasons and the report section
 *
 * Every rank must take the same path for the same call, so the choice
 * depends only on what all ranks share: the communicator's state (agreed
 * when it was created) and the block size.  Datatypes never decide it: a
 * non-contiguous send or receive type is packed locally, since ranks may
 * legally use different types with the same signature.
 */
#ifndef HOTBUF_ALLGATHER_H
#define HOTBUF_ALLGATHER_H

#include <mpi.h>

#include "allgather_stats.h"

/* The subsystem (core/subsys_list.h) is hb_ag_subsys: its start agrees on
 * whether the RDMA Allgather is on; its stop frees the state of
 * communicators still alive (before the transport closes). */

/* The wrappers: track the receive buffer, then RDMA or PMPI. */
int hb_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, MPI_Comm comm, void *ret);
int hb_iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                  int rcount, MPI_Datatype rtype, MPI_Comm comm,
                  MPI_Request *req, void *ret);

#endif
