/* Facts about a communicator that every subsystem needs alike. */
#ifndef HOTBUF_COMM_H
#define HOTBUF_COMM_H

#include <mpi.h>

/* 1 when every process of comm (both groups of an intercommunicator) is
 * in this process's MPI_COMM_WORLD, else 0.  hotbuf names its peers by
 * MPI_COMM_WORLD rank (connections, rkeys, node hashes), and after
 * MPI_Comm_spawn / MPI_Comm_connect two jobs' world ranks alias: a
 * communicator that spans worlds must stay on MPI.  Every process of such
 * a communicator sees some process outside its own world, so all of them
 * reach the same verdict without communicating.  O(size of comm): call it
 * when a communicator's or window's state is created, not per call. */
int hb_comm_one_world(MPI_Comm comm);

#endif
