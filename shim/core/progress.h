/* Progress has one owner.  Whatever must move while a rank waits (the
 * transport's completion queue and connection handshakes today; later
 * point-to-point's ring drain, which must run inside any MPI call)
 * registers a callback here, and every wait in hotbuf drives them through
 * hb_progress() or hb_progress_yield().
 *
 * Callbacks run in registration order, on the calling thread; they must
 * not register or remove callbacks.  Not thread-safe, like the transport:
 * the paths that wait (RMA, Allgather) are off under MPI_THREAD_MULTIPLE.
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

/* Runs every callback once.  Cheap when there is nothing to do. */
void hb_progress(void);

/* The yield of every wait (an hb_tr_yield_fn; arg unused): hotbuf's
 * progress, then MPI's once (a waiting rank may be the one another rank's
 * MPI operation depends on), then the CPU.  With more ranks than cores
 * (oversubscribed nodes, the test guest) the rank being waited for needs
 * this CPU; alone on a core it costs well under a microsecond. */
void hb_progress_yield(void *arg);

#endif
