/* MPI_Alloc_mem and MPI_Free_mem from memory registered once (issue 14
 * item 3; the SCI-MPICH paper: memory MPI hands out can be memory the NIC
 * already knows).
 *
 * hotbuf maps chunks (HOTBUF_ALLOC_MEM bytes, or one of its own for a
 * larger request), registers each with the registration cache once and
 * keeps the reference, and carves the application's blocks out of them
 * (util/arena.h).  A block is then a cache hit for every RDMA path (a hot
 * send, a Put from it, a window on it): no registration, ever, for that
 * memory.  Everything else goes to the MPI as it is: Alloc_mem with info
 * keys (hints the MPI understands), a size of 0 or less, before MPI_Init
 * or after MPI_Finalize, without the registration cache (no device, no
 * memory monitor), or when a chunk cannot be mapped or registered; and
 * Free_mem of memory hotbuf did not hand out.
 *
 * The bindings call these every time (mpi_calls.def "always"): memory of
 * hotbuf's must come back to it also after MPI_Finalize, when the chunks
 * are deregistered but stay mapped while blocks of them are live.
 */
#ifndef HOTBUF_MEM_H
#define HOTBUF_MEM_H

#include <mpi.h>

int hb_mem_alloc(MPI_Aint size, MPI_Info info, void *baseptr);
int hb_mem_free(void *base);

#endif
