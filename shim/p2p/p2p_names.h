/* Which communicator is which across processes: the table from handle to
 * name (p2p_name.h), filled by the constructors' wrappers
 * (pmpi/mpi_calls.def, "Communicator constructors"), checked once by all
 * members at creation (P2P-DESIGN.md §5.3, H8).
 *
 * For the engine: hb_p2p_name_lookup(comm, &name) before relying on a
 * name (part 2's grant handshake carries it); anything but HB_P2P_NAMED
 * means "this communicator stays on MPI", for the reason returned.
 *
 * The check.  Every member folds its name into one PMPI_Allreduce
 * (MPI_BAND over 5 uint64: a "named" bit, the hash and its complement, so
 * equal everywhere <=> AND == NOT(AND of complements)) on the new
 * communicator, inside the constructor's wrapper: the constructor is
 * collective, every member is there, and the result is the same on all of
 * them, so they all keep the name or all drop it.  Cost: one 40-byte
 * allreduce per communicator created (a few microseconds on a node; the
 * constructors themselves already run one or more allreduces to agree on a
 * context id), nothing per message, nothing at lookup.  Checking lazily in
 * the handshake instead would cost nothing at creation, but a mismatch
 * found between two ranks would leave the others believing the name; here
 * the whole communicator agrees.  MPI_Comm_idup: the new communicator may
 * not be used before the application's request completes, so the check is
 * a PMPI_Iallreduce on the parent (same members), started in the wrapper
 * and completed by the first lookup that finds it done (HB_P2P_NAME_PENDING
 * until then).
 *
 * A communicator freed by any path (C, Fortran, Comm_disconnect, wrapped
 * or not) leaves the table through an attribute delete callback, so a
 * reused handle never shows an old name.  The callback takes hotbuf's
 * lock: never free a communicator while holding it.
 *
 * Assumption (the design's): every process goes through these wrappers
 * for every constructor.  A process that does not (a tool calling PMPI on
 * some ranks only) gets other sequence numbers, which the check turns into
 * HB_P2P_UNNAMED_MISMATCH on that communicator. */
#ifndef HOTBUF_P2P_NAMES_H
#define HOTBUF_P2P_NAMES_H

#include <mpi.h>
#include <stdint.h>

#include "p2p_name.h"

/* What a lookup (or a constructor) concluded.  HB_P2P_NAMED is 0. */
enum hb_p2p_name_status {
    HB_P2P_NAMED = 0,
    HB_P2P_NAME_PENDING,      /* Comm_idup: the check is in flight */
    HB_P2P_UNNAMED_UNKNOWN,   /* not made by a wrapped constructor
                                   (spawn, connect, accept, join, MPI-4
                                   sessions) or hotbuf was off */
    HB_P2P_UNNAMED_INTERCOMM, /* intercommunicators stay on MPI (v1) */
    HB_P2P_UNNAMED_WORLDS,    /* spans several MPI_COMM_WORLDs */
    HB_P2P_UNNAMED_PARENT,    /* made from a communicator with no name */
    HB_P2P_UNNAMED_MISMATCH,  /* the members' names differed at the check */
    HB_P2P_UNNAMED_PEER,      /* another member had no name for it */
    HB_P2P_UNNAMED_NO_MEMORY,
    HB_P2P_UNNAMED_NULL,    /* MPI_COMM_NULL */
    HB_P2P_UNNAMED_DYNAMIC, /* Comm_join (spawn, connect, accept: UNKNOWN) */
    HB_P2P_NAME_STATUSES
};

/* One line's worth: "named", "intercommunicator" ... */
const char *hb_p2p_name_status_text(int status);

/* comm's name into *out (when HB_P2P_NAMED), else the reason it has none.
 * Never collective, never blocks; call it only for a communicator the
 * application is using (the first lookup of an idup'd one completes its
 * check). */
int hb_p2p_name_lookup(MPI_Comm comm, struct hb_p2p_name *out);

/* For the report (the point-to-point section): communicators created
 * since MPI_Init by outcome; per_status[HB_P2P_NAMED] are the named ones,
 * [HB_P2P_NAME_PENDING] idup'd ones whose check never completed. */
struct hb_p2p_names_counts {
    uint64_t per_status[HB_P2P_NAME_STATUSES];
    uint64_t checks; /* allreduces run (one per new intracommunicator) */
};
void hb_p2p_names_counts(struct hb_p2p_names_counts *out);

/* ---- The constructors' after: hooks (pmpi/mpi_calls.def) --------------
 * Run on every rank that joins hotbuf's collectives, after a successful
 * PMPI call, with the new handle (MPI_COMM_NULL on ranks that got none:
 * they still count the call on the parent). */
void hb_p2p_names_dup(MPI_Comm parent, MPI_Comm newcomm, int with_info);
void hb_p2p_names_idup(MPI_Comm parent, MPI_Comm newcomm, int with_info);
void hb_p2p_names_split(MPI_Comm parent, int color, MPI_Comm newcomm);
void hb_p2p_names_split_type(MPI_Comm parent, int type, MPI_Comm newcomm);
void hb_p2p_names_create(MPI_Comm parent, MPI_Group group, MPI_Comm newcomm);
void hb_p2p_names_create_group(MPI_Comm parent, MPI_Group group, int tag,
                               MPI_Comm newcomm);
void hb_p2p_names_create_from_group(MPI_Group group, const char *stringtag,
                                    MPI_Comm newcomm);
void hb_p2p_names_cart(MPI_Comm parent, int ndims, const int dims[],
                       const int periods[], int reorder, MPI_Comm newcomm);
void hb_p2p_names_cart_sub(MPI_Comm parent, const int remain[],
                           MPI_Comm newcomm);
void hb_p2p_names_graph(MPI_Comm parent, int nnodes, const int index[],
                        const int edges[], int reorder, MPI_Comm newcomm);
void hb_p2p_names_dist_graph(MPI_Comm parent, int adjacent, int reorder,
                             MPI_Comm newcomm);
void hb_p2p_names_intercomm(MPI_Comm local, int tag, MPI_Comm newcomm);
void hb_p2p_names_merge(MPI_Comm inter, MPI_Comm newcomm);
/* A constructor that gives no name (Comm_join ...): recorded as such, so
 * a reused handle does not keep an older entry. */
void hb_p2p_names_unnamed(MPI_Comm newcomm, int status);

/* Completes the idup checks still in flight (collective on those parents:
 * every member started them); before MPI_Finalize, from the point-to-point
 * subsystem's stop. */
void hb_p2p_names_finish(void);

#endif
