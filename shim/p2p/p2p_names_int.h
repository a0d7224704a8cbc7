/* The names table's inside, shared by the table (p2p_names.c) and the
 * constructors' hooks (p2p_names_ctor.c). */
#ifndef HOTBUF_P2P_NAMES_INT_H
#define HOTBUF_P2P_NAMES_INT_H

#include "p2p_names.h"

struct hb_names_entry {
    struct hb_names_entry *next;
    MPI_Comm comm;
    struct hb_p2p_name name;
    int status;
    int has_name; /* name can seed children: named, or an intercomm's hidden one */
    int size;     /* to recognise the communicator at a late first lookup */
    int tracked;                /* carries the delete attribute */
    struct hb_p2p_ordinals ord; /* its children's sequence numbers */
};

/* Module state (reached by the wrappers without a context). */
#define HB_NAMES_BUCKETS 1024
struct hb_names_state {
    struct hb_names_entry *bucket[HB_NAMES_BUCKETS];
    struct hb_p2p_ordinals global; /* parentless constructors */
    struct hb_p2p_names_counts counts;
    int keyval; /* MPI_KEYVAL_INVALID until first use */
    int keyval_ready;
};
extern struct hb_names_state hb_names;

/* Under hb_lock().  find: NULL if absent (WORLD and SELF are made on
 * first use); put: a fresh entry for comm, replacing any older one (NULL:
 * no memory). */
struct hb_names_entry *hb_names_find(MPI_Comm comm);
struct hb_names_entry *hb_names_put(MPI_Comm comm);

/* Not under the lock: attaches the delete attribute (entry leaves the
 * table when comm is freed).  0 or an MPI error. */
int hb_names_track(MPI_Comm comm);

/* A digest of g's members as MPI_COMM_WORLD ranks, in g's order (0 when
 * out of memory). */
int64_t hb_names_group_digest(MPI_Group g);

#endif
