/* Which communicator is which across processes: the table from handle to
 * name (p2p_name.h), filled by the constructors' wrappers
 * (pmpi/mpi_calls.def, "Communicator constructors"), checked pairwise
 * in the handshake (P2P-DESIGN.md §5.3, H8).
 *
 * For the engine: hb_p2p_name_lookup(comm, &name) before relying on a
 * name (part 2's grant handshake carries it); anything but HB_P2P_NAMED
 * means "this communicator stays on MPI", for the reason returned.
 *
 * The check ("checked by both sides"): pairwise, in the handshake.  Before
 * a sender and a receiver rely on a name (part 2's grant), each sends the
 * other a claim (hb_p2p_name_claim: 40 bytes: the name, the size, a digest
 * of the members' world ranks in rank order, its own rank in the
 * communicator and in MPI_COMM_WORLD) and checks the other's
 * (hb_p2p_name_verify).  A mismatch marks the communicator unnamed at the
 * rank that found it (HB_P2P_UNNAMED_MISMATCH, counted): that pair stays
 * on MPI.  Cost: nothing at creation, nothing per message; one
 * O(size) group translation per claim, and the claim rides on the grant
 * request and reply that part 2 sends anyway.
 *
 * Why not one PMPI_Allreduce of the name on the new communicator inside
 * the constructor's wrapper (all members are there): the case the check
 * exists for is a process that bypassed the wrappers for some constructor
 * (a tool calling PMPI on some ranks only); that process does not join
 * the allreduce, so the others hang in it, or it is matched with the
 * application's next collective on that communicator.  Seen with this
 * module's first version: tests/mpi/comm_names.c's "mismatch" step hung
 * in the check on 1 of 2 ranks.  A collective also costs every
 * constructor a few microseconds on a node (more across nodes), for
 * communicators most of which never carry a rerouted message.  And names
 * only ever matter to a pair: the pairwise claim checks exactly what the
 * pair relies on.
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
    HB_P2P_UNNAMED_UNKNOWN,   /* not made by a wrapped constructor
                                   (spawn, connect, accept, join, MPI-4
                                   sessions) or hotbuf was off */
    HB_P2P_UNNAMED_INTERCOMM, /* intercommunicators stay on MPI (v1) */
    HB_P2P_UNNAMED_WORLDS,    /* spans several MPI_COMM_WORLDs */
    HB_P2P_UNNAMED_PARENT,    /* made from a communicator with no name */
    HB_P2P_UNNAMED_MISMATCH,  /* a peer's claim differed (verify) */
    HB_P2P_UNNAMED_PEER,      /* the peer has no name for it (verify) */
    HB_P2P_UNNAMED_NO_MEMORY,
    HB_P2P_UNNAMED_NULL,    /* MPI_COMM_NULL */
    HB_P2P_UNNAMED_DYNAMIC, /* Comm_join (spawn, connect, accept: UNKNOWN) */
    HB_P2P_NAME_STATUSES
};

/* One line's worth: "named", "intercommunicator" ... */
const char *hb_p2p_name_status_text(int status);

/* comm's name into *out (when HB_P2P_NAMED), else the reason it has none.
 * Never collective, never blocks; call it only for a communicator the
 * application is using (the first lookup of an idup'd one attaches the
 * delete attribute, which may not be done before its idup completed). */
int hb_p2p_name_lookup(MPI_Comm comm, struct hb_p2p_name *out);

/* The check (above).  claim: what this rank says of comm; returns its
 * lookup status (the claim carries it).  verify: this rank's verdict on
 * the peer's claim: HB_P2P_NAMED when both mean the same communicator
 * under the same name, else the reason (this rank's own status, PEER,
 * MISMATCH; a MISMATCH also marks comm unnamed here).  Both sides call
 * both; neither blocks.  Fixed layout: it goes over the wire as it is
 * (same architecture on both sides, as the rest of hotbuf assumes). */
struct hb_p2p_name_claim {
    uint64_t hash[2];
    int64_t members; /* digest of the members' world ranks, rank order */
    int32_t size;
    int32_t rank;       /* the claimant's rank in comm */
    int32_t world_rank; /* and in MPI_COMM_WORLD */
    int32_t status;     /* its lookup status (HB_P2P_NAMED: 0) */
};
int hb_p2p_name_claim(MPI_Comm comm, struct hb_p2p_name_claim *out);
int hb_p2p_name_verify(MPI_Comm comm, const struct hb_p2p_name_claim *theirs);

/* The communicator named hash (a peer's claim) among those this process
 * made and uses: 0 and *out, or -1.  O(table): the grant only. */
int hb_p2p_names_find(const uint64_t hash[2], MPI_Comm *out);

/* For the report (the point-to-point section): communicators created
 * since MPI_Init by outcome at creation (per_status[HB_P2P_NAMED]: named),
 * and the claims verified: agreed, refused because they differed, refused
 * because the peer had no name. */
struct hb_p2p_names_counts {
    uint64_t per_status[HB_P2P_NAME_STATUSES];
    uint64_t verified, mismatched, peer_unnamed;
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

#endif
