/* Internals shared by rma_win.c, rma_epoch.c and rma_route.c. */
#ifndef HOTBUF_RMA_INT_H
#define HOTBUF_RMA_INT_H

#include <mpi.h>
#include <stdint.h>
#include <uthash.h>

#include "core/ctx.h"
#include "rma_stats.h"
#include "transport/transport.h"

struct hb_region;

/* What every rank of a window learns about each other rank (one allgather
 * at creation; again when a registration is renewed, see rma.h). */
struct hb_rma_target {
    uint64_t base; /* window base address at the target */
    uint64_t size; /* bytes */
    int32_t disp_unit;
    int32_t world; /* the target's rank in MPI_COMM_WORLD (transport peer) */
    uint32_t rkey;
    uint32_t node;    /* hash of the host name */
    uint32_t ok;      /* the target's window memory is registered */
    uint32_t rdma;    /* the target reroutes (transport up, cache on) */
    uint32_t next_id; /* creation: the target's next free window id */
    uint32_t nomem;   /* creation: the target could not keep the window */
    uint32_t max_msg; /* the target's port's largest message (0: no RDMA) */
    uint32_t pad;
};

/* What a post token carries: the target's registration as of the post. */
struct hb_rma_token {
    uint32_t rkey, ok;
};

/* Epoch state of one target, as this rank (the origin) sees it. */
enum hb_lock_state { HB_UNLOCKED, HB_LOCKED_UNPROBED, HB_LOCKED };
enum hb_pscw_state { HB_PSCW_NONE, HB_PSCW_WAITING, HB_PSCW_POSTED };

/* One RDMA operation in flight.  The arguments are kept so that an
 * operation whose peer fails can be redone on PMPI inside the same epoch:
 * the origin buffer may not change before the closing synchronization,
 * so the retry moves the same data. */
struct hb_rma_pending {
    int target, is_get;
    int failed; /* never posted (test fault): redo on PMPI */
    struct hb_tr_op op;
    struct hb_region
        *region; /* origin buffer's registration, held until done */
    void *obuf;
    int ocount, tcount;
    MPI_Datatype otype, ttype; /* predefined: never freed */
    MPI_Aint tdisp;
};

struct hb_win {
    MPI_Win win;
    UT_hash_handle hh;
    MPI_Group group; /* the window's group (PSCW rank translation) */
    int tag;         /* first of HB_RMA_TAGS tags on ctx->comm */
    int rank, size;
    int rdma;     /* this rank reroutes on this window */
    int any_rdma; /* some rank does: the extra synchronization is needed
                                     (the same value on every rank) */
    struct hb_region
        *region; /* this rank's window memory, held until Win_free */
    void *base;  /* ... its range, to check and renew region */
    uint64_t bytes;
    int trusted; /* MPI_Win_allocate's memory, marked for the monitor */
    int dirty;   /* region renewed since the others last
                                     all learned it: the next fence re-sends */
    struct hb_rma_target *targets;
    /* epochs */
    int fence_open; /* a fence without MPI_MODE_NOSUCCEED was the last one */
    uint8_t *lock;  /* enum hb_lock_state per target */
    uint8_t *pscw;  /* enum hb_pscw_state per target */
    MPI_Request *tokens; /* per target: its "posted" token, while awaited */
    struct hb_rma_token *tokbuf; /* per target: what its token carries */
    struct hb_rma_token mytoken; /* what this rank's post tokens carry */
    int *scratch;                /* 2 x size ints for group translations */
    int nstart;                  /* targets in the current start group */
    /* operations in flight */
    struct hb_rma_pending *pend;
    size_t npend, cap;
};

/* Process-wide state of the one-sided path (module state). */
struct hb_rma {
    const struct hb_ctx *ctx; /* from start; NULL before */
    int on;                   /* agreed by all ranks at start */
    uint32_t node;            /* this host's hash */
    uint32_t next_id;         /* window ids: above every one this rank has */
    int tag_base, tag_slots;  /* windows' tags: from, how many windows */
    unsigned long fail_every; /* test-only fault injection (rma.h), 0: off */
    unsigned long nposted;    /* RDMA operations of this path so far */
    struct hb_win *wins;      /* uthash by MPI_Win */
    struct hb_rma_summary stats;
};

/* Defined in rma_win.c.  Global: the wrappers' hooks have no context
 * argument.  Never touched by rma_pending.c, which is given it. */
extern struct hb_rma hb_rma;

/* rma_win.c */
struct hb_win *hb_rma_find(MPI_Win win);

static inline struct hb_transport *hb_rma_transport(const struct hb_rma *m)
{
    return m->ctx->rdma->tr;
}

/* rma_pending.c: the operations in flight.  Remembers p on w: 0, or -1
 * (no memory: the caller completes it at once). */
int hb_rma_remember(struct hb_win *w, const struct hb_rma_pending *p);
/* Completes (waits for) w's operations to target (-1: all); operations
 * whose peer failed are redone on PMPI. */
void hb_rma_complete(struct hb_rma *m, struct hb_win *w, int target);

/* May an operation to target go straight to its memory now?  0, or an
 * enum hb_rma_op_reason.  May call PMPI (to make MPI take a lock it
 * acquires lazily). */
int hb_rma_epoch_allows(struct hb_win *w, int target);

/* The window's messages travel on hotbuf's own communicator (ctx->comm,
 * a duplicate of MPI_COMM_WORLD: peers by world rank), never on one of
 * the application's.  Each window has HB_RMA_TAGS tags of its own from
 * HB_RMA_TAG_BASE (less if MPI_TAG_UB is small) up (w->tag): the
 * application can never match them,
 * and two windows never match each other's (see rma.h). */
#define HB_RMA_TAG_BASE 0x10000
#define HB_RMA_TAGS 3
enum { HB_RMA_TAG_AGREE, HB_RMA_TAG_TOKEN, HB_RMA_TAG_RECORD };

/* rma_win.c: is this rank's window registration still the one that covers
 * its window memory now?  If not, renews it: 1 and *old = the previous
 * region, still held (the caller puts it once no origin may use its rkey
 * any more); w->targets[w->rank] and w->mytoken describe the new one. */
int hb_rma_win_renew(struct hb_win *w, struct hb_region **old);
/* Releases a region hb_rma_win_renew handed back (NULL: nothing). */
void hb_rma_win_release(struct hb_region *old);
/* Collective over the window's ranks, on ctx->comm: 1 if any rank passed
 * mine != 0.  Also a barrier: no rank returns before all have called. */
int hb_rma_win_agree(struct hb_win *w, int mine);
/* Collective over the window's ranks: every rank's record is sent again
 * (after some rank renewed its registration). */
void hb_rma_win_republish(struct hb_win *w);
/* rma_epoch.c: has target's post token come in (PSCW)?  Takes in the
 * registration it carries. */
int hb_rma_pscw_token_in(struct hb_win *w, int target);

#endif
