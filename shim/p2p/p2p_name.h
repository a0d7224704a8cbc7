/* Communicator names: one identity for a communicator that every member
 * computes alone, from how the communicator was made (P2P-DESIGN.md §5.3).
 *
 * Handles are local and reused after MPI_Comm_free; two duplicates of a
 * communicator have the same members.  A sender and a receiver that want
 * to say "communicator c" to each other (part 2's grant handshake) need a
 * name both derive without talking: the parent's name, the constructor,
 * its sequence number among that parent's children of that kind, the
 * arguments every member passes alike (split color, cart dims, a tag) and
 * the members in rank order (MPI_COMM_WORLD ranks).  The hash chain is
 * 128 bits wide, so a collision between two live communicators of a job
 * is out of reach; the short path is for people (the report, tests).
 *
 * MPI-free (unit-tested): shim/p2p/p2p_names.c feeds it from the
 * constructors' wrappers. */
#ifndef HOTBUF_P2P_NAME_H
#define HOTBUF_P2P_NAME_H

#include <stddef.h>
#include <stdint.h>

/* "W.dup0.split1" style; a deeper path keeps its tail behind a '~'. */
#define HB_P2P_PATH_MAX 48

struct hb_p2p_name {
    uint64_t hash[2];
    char path[HB_P2P_PATH_MAX];
};

/* The constructors.  Values are part of the hash: append only. */
enum hb_p2p_ctor {
    HB_P2P_CTOR_DUP = 1,
    HB_P2P_CTOR_DUP_WITH_INFO,
    HB_P2P_CTOR_IDUP,
    HB_P2P_CTOR_IDUP_WITH_INFO,
    HB_P2P_CTOR_SPLIT,
    HB_P2P_CTOR_SPLIT_TYPE,
    HB_P2P_CTOR_CREATE,
    HB_P2P_CTOR_CREATE_GROUP,
    HB_P2P_CTOR_CREATE_FROM_GROUP,
    HB_P2P_CTOR_CART_CREATE,
    HB_P2P_CTOR_CART_SUB,
    HB_P2P_CTOR_GRAPH_CREATE,
    HB_P2P_CTOR_DIST_GRAPH_CREATE,
    HB_P2P_CTOR_DIST_GRAPH_ADJACENT,
    HB_P2P_CTOR_INTERCOMM_CREATE,
    HB_P2P_CTOR_INTERCOMM_MERGE,
    HB_P2P_CTOR_COUNT
};

/* The short label of a constructor in a path ("dup", "split" ...). */
const char *hb_p2p_ctor_label(enum hb_p2p_ctor kind);

/* The fixed roots: MPI_COMM_WORLD is the same on every process of a job;
 * MPI_COMM_SELF differs per process (its world rank is part of it). */
void hb_p2p_name_world(struct hb_p2p_name *n);
void hb_p2p_name_self(struct hb_p2p_name *n, int world_rank);

/* A child of parent made by kind, the seq-th of that kind on that parent
 * (hb_p2p_ordinal_next), with the arguments every member of the child
 * passes alike (nargs values; per-rank ones such as a split key must not
 * be here: the members decide the order instead, see _members). */
void hb_p2p_name_child(struct hb_p2p_name *child,
                       const struct hb_p2p_name *parent, enum hb_p2p_ctor kind,
                       uint32_t seq, const int64_t *args, size_t nargs);

/* A communicator with no parent communicator (Comm_create_from_group, an
 * intercommunicator's hidden name): the same from the arguments alone. */
void hb_p2p_name_root(struct hb_p2p_name *n, enum hb_p2p_ctor kind,
                      uint32_t seq, const int64_t *args, size_t nargs);

/* Folds the members, in rank order, into n: their MPI_COMM_WORLD ranks.
 * This is what makes split keys, reorder and group order count. */
void hb_p2p_name_members(struct hb_p2p_name *n, const int *world_ranks,
                         int size);

/* A 64-bit digest of a byte string or of world ranks, to pass as an
 * argument (a string tag, a group's members). */
int64_t hb_p2p_name_digest_bytes(const void *p, size_t len);
int64_t hb_p2p_name_digest_ranks(const int *world_ranks, int size);

int hb_p2p_name_equal(const struct hb_p2p_name *a, const struct hb_p2p_name *b);

/* Sequence numbers: how many children with this key a communicator (or
 * the process) has made so far.  Keys: the constructor alone for the
 * collectives over the parent; (constructor, tag, group) for the ones over
 * a group.  Few keys per communicator: a small array, searched. */
struct hb_p2p_ordinal {
    uint64_t key[2];
    uint32_t count;
};
struct hb_p2p_ordinals {
    struct hb_p2p_ordinal *v;
    uint32_t n, cap;
};

/* The number of earlier calls with this key, then counts this one.
 * 0 or -1 (no memory; *seq untouched). */
int hb_p2p_ordinal_next(struct hb_p2p_ordinals *o, uint64_t key0, uint64_t key1,
                        uint32_t *seq);
void hb_p2p_ordinals_free(struct hb_p2p_ordinals *o);

#endif
