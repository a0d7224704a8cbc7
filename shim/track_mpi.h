/* From MPI arguments to the tracker: datatypes to byte extents, peers,
 * persistent requests.  Called by the wrappers in pmpi/. */
#ifndef HOTBUF_TRACK_MPI_H
#define HOTBUF_TRACK_MPI_H

#include <mpi.h>

#include "ops.h"
#include "tracker.h"

/* Caches the predefined datatypes' extents; called once after MPI_Init. */
void hb_datatypes_init(void);

/* One call on buf (count x type) with peer (MPI_PROC_NULL: nothing moves). */
void hb_track(unsigned op, const void *buf, int count, MPI_Datatype type, int peer, void *ret);

/* The same in two steps, for callers that compute the use once and record
 * it many times (persistent requests).  hb_use_compute returns nonzero
 * when the call moves nothing (zero bytes, MPI_PROC_NULL, bad datatype). */
int hb_use_compute(const void *buf, int count, MPI_Datatype type, int peer, struct hb_use *u,
                   int *proc_null);
void hb_track_use(unsigned op, const struct hb_use *u, int empty, int proc_null, void *ret);

/* Allgather: the receive buffer holds comm_size blocks of recvcount x recvtype. */
void hb_track_allgather(const void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        void *ret);

/* Persistent sends: remembered at *_init, counted at every Start. */
void hb_persist_add(MPI_Request req, unsigned op, const void *buf, int count, MPI_Datatype type,
                    int peer, void *ret);
void hb_persist_start(MPI_Request req);
void hb_persist_remove(MPI_Request req);
void hb_persist_clear(void);

#endif
