/* From MPI arguments to the tracker: datatypes to byte extents, peers,
 * persistent requests.  Called by the wrappers in pmpi/. */
#ifndef HOTBUF_TRACK_MPI_H
#define HOTBUF_TRACK_MPI_H

#include <mpi.h>
#include <string.h>

#include "track/ops.h"
#include "runtime.h"
#include "track/tracker.h"

/* Caches the predefined datatypes' extents; called once after MPI_Init. */
void hb_datatypes_init(void);

/* Predefined contiguous datatypes, cached by handle: a direct-mapped table
 * filled once after MPI_Init.  Predefined types never change or go away;
 * derived types can be freed and their handles reused, so they are
 * queried on every call (hb_track_slow). */
#define HB_DT_SLOTS 256
struct hb_dt_slot {
    MPI_Datatype type;
    uint64_t size; /* 0: empty slot */
};
extern struct hb_dt_slot hb_dt_cache[HB_DT_SLOTS];
/* Multiplier of the slot hash, chosen at start-up so that no two
 * predefined types share a slot (the handles differ from run to run). */
extern uint64_t hb_dt_mult;

static inline unsigned hb_dt_slot_of(MPI_Datatype t)
{
    uint64_t h = 0; /* MPI_Datatype is a pointer in Open MPI, an int in MPICH */
    memcpy(&h, &t, sizeof(t) < sizeof(h) ? sizeof(t) : sizeof(h));
    return (unsigned)((h * hb_dt_mult) >> 56) & (HB_DT_SLOTS - 1);
}

/* The entry hb_track recorded last (NULL: none, or not a simple call):
 * the send path asks whether that call was hot.  A stale value only
 * changes a choice between copy and zero copy, never the data. */
extern struct hb_entry *hb_track_last;

/* Any call: derived datatypes, zero counts, MPI_PROC_NULL, threads. */
void hb_track_slow(unsigned op, const void *buf, int count, MPI_Datatype type,
                   int peer, void *ret);

/* One call on buf (count x type) with peer (MPI_PROC_NULL: nothing moves).
 * The common case (a predefined type, a real peer, no thread lock) stays
 * inline in the wrapper. */
static inline __attribute__((always_inline)) void
hb_track(unsigned op, const void *buf, int count, MPI_Datatype type, int peer,
         void *ret)
{
    const struct hb_dt_slot *d = &hb_dt_cache[hb_dt_slot_of(type)];
    /* One test for count > 0 and a filled slot (size 0 when empty): the
     * product of an int and a small size cannot overflow. */
    int64_t bytes = (int64_t)count * (int64_t)d->size;
    if (__builtin_expect(d->type == type && bytes > 0 &&
                             hb_rt.tracking == HB_TRACK_FAST &&
                             peer != MPI_PROC_NULL,
                         1)) {
        hb_track_last =
            hb_tracker_record_at(&hb_rt.tracker, op, buf, (uint64_t)bytes, ret);
        return;
    }
    hb_track_last = NULL;
    hb_track_slow(op, buf, count, type, peer, ret);
}

/* hb_track's common case without any call (tracker.h,
 * hb_tracker_record_fast): 1 when it recorded the call, 0 when it did
 * nothing and the caller must go through hb_tracks and hb_track.  The
 * generated bindings use it (fast: in pmpi/mpi_calls.def) so that a send
 * on a known buffer is a leaf up to its jump to PMPI. */
static inline __attribute__((always_inline)) int
hb_track_fast(unsigned op, const void *buf, int count, MPI_Datatype type,
              int peer, void *ret)
{
    const struct hb_dt_slot *d = &hb_dt_cache[hb_dt_slot_of(type)];
    int64_t bytes = (int64_t)count * (int64_t)d->size;
    return hb_rt.tracking == HB_TRACK_FAST && !hb_nested && d->type == type &&
           bytes > 0 && peer != MPI_PROC_NULL &&
           hb_tracker_record_fast(&hb_rt.tracker, op, buf, (uint64_t)bytes,
                                  ret);
}

/* The same in steps, for callers that compute the use and the call site
 * once and record them many times (persistent requests).  hb_use_compute returns nonzero
 * when the call moves nothing (zero bytes, MPI_PROC_NULL, bad datatype). */
int hb_use_compute(const void *buf, int count, MPI_Datatype type, int peer,
                   struct hb_use *u, int *proc_null);
uint16_t hb_track_site(unsigned op, void *ret);
/* Marks a site as a persistent request's (its advice differs). */
void hb_track_site_persistent(uint16_t site);
void hb_track_use(unsigned op, const struct hb_use *u, int empty, int proc_null,
                  uint16_t site);

/* One call, like hb_track, for callers that go on to route it: returns the
 * buffer's table entry (NULL: untracked or nothing moves) and the site. */
struct hb_entry *hb_track_entry(unsigned op, const void *buf, int count,
                                MPI_Datatype type, int peer, void *ret,
                                uint16_t *site);

/* Bytes of count elements of a predefined type whose elements are packed
 * end to end; 0 for anything else.  Derived types count as "else" even
 * when contiguous: the user may free one right after the call, and a
 * rerouted operation may have to be redone with the same types later. */
uint64_t hb_dt_contiguous_bytes(int count, MPI_Datatype type);

/* Allgather: the receive buffer holds comm_size blocks of recvcount x recvtype. */
uint16_t hb_track_allgather(const void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm,
                            void *ret); /* returns the call site */

/* Persistent sends: remembered at *_init, counted at every Start.
 * Implemented by the persist subsystem (persist/persist.c); declared here,
 * where the bindings look for the tracking calls. */
void hb_persist_add(MPI_Request req, unsigned op, const void *buf, int count,
                    MPI_Datatype type, int peer, void *ret);
void hb_persist_start(MPI_Request req);
void hb_persist_remove(MPI_Request req);

#endif
