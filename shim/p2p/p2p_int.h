/* Point-to-point's internals, shared by the files of shim/p2p (see p2p.h
 * for the interface and P2P-DESIGN.md §5.7 and §5.9 for the design).
 *
 *   p2p.c        subsystem life cycle, switches, the progress callback
 *   p2p_comm.c   communicator map, entry into pull, migration, claiming
 *   p2p_req.c    request handles (pool, table), posting, completion
 *   p2p_recv.c   receive calls;  p2p_probe.c probes;  p2p_wait.c Wait/Test
 *   p2p_match.c  the matching rules (MPI-free)
 *   p2p_merge.c, p2p_pair.c, p2p_slots.c  part 2's release merge, sender
 *                bookkeeping and channel slots (MPI-free, not yet wired)
 */
#ifndef HOTBUF_P2P_INT_H
#define HOTBUF_P2P_INT_H

#include <mpi.h>
#include <stdint.h>
#include "util/uthash_keys.h"

#include "core/ctx.h"
#include "p2p.h"
#include "p2p_match.h"
#include "p2p_stats.h"

enum p2p_mode { P2P_MODE_AUTO, P2P_MODE_ALL, P2P_MODE_AFTER };
enum p2p_comm_state { COMM_NORMAL, COMM_PULLED, COMM_OFF };

struct p2p_comm {
    uint64_t key; /* the MPI_Comm handle's bits */
    MPI_Comm comm;
    int state;           /* enum p2p_comm_state */
    uint64_t recv_calls; /* receive-side calls seen (after:N) */
    struct hb_pm m;      /* matcher, while pulled */
    struct hb_list link; /* on p2p.pulled */
    int pending;         /* hotbuf receives posted or matched, not done */
    int free_deferred;   /* the application freed it: free at pending 0 */
    UT_hash_handle hh;
};

/* A message claimed from MPI, waiting in the unexpected store. */
struct p2p_msg {
    struct hb_pm_msg n;
    MPI_Message msg;
    MPI_Status st; /* as PMPI_Improbe gave it */
};

enum p2p_req_state {
    RQ_INACTIVE, /* persistent, not started */
    RQ_POSTED,   /* in the matcher */
    RQ_MATCHED,  /* PMPI_Imrecv under way (inner) */
    RQ_DONE,     /* st holds the status; the application has not seen it */
    RQ_PMPI      /* MPI's own receive: PMPI progresses the handle */
};

/* A receive hotbuf knows about: one hotbuf progresses (managed), or an
 * MPI receive on a communicator that may enter pull later (tracked, for
 * migration), or a persistent receive (its handle is MPI's own). */
struct p2p_req {
    uint64_t key; /* the handle's bits (table key) */
    MPI_Request handle;
    int state;      /* enum p2p_req_state */
    int persistent; /* made by Recv_init: handle is MPI's, inactive */
    int pool;       /* handle from the pool */
    int hijacked;   /* handle holds a cancelled MPI receive to consume */
    int freed;      /* the application freed the handle while pending */
    int cancelled;  /* the application cancelled MPI's receive: it is
                       complete or matched, never migrated */
    int in_table;
    uint64_t seq;       /* posting order (migration) */
    struct p2p_comm *c; /* NULL once the communicator is gone */
    MPI_Comm comm;
    void *buf;
    MPI_Count count;
    MPI_Datatype type;
    int type_dup; /* type is our duplicate: free it */
    int source, tag;
    int blocking; /* Recv, Sendrecv: matched = msg, for PMPI_Mrecv */
    MPI_Message msg;
    MPI_Count msg_bytes; /* of the matched message (blocking) */
    MPI_Request inner;   /* PMPI_Imrecv */
    MPI_Request sreq;    /* Isendrecv: the send half */
    void *tmp;           /* Sendrecv_replace: the packed send data */
    MPI_Status st;
    int err;
    struct hb_pm_recv n;
    struct hb_list orphan; /* on p2p.orphans once freed while pending */
    UT_hash_handle hh;
};

/* Module state.  Static: the wrappers that reach it carry no context. */
struct p2p_state {
    const struct hb_ctx *ctx;
    int mode; /* enum p2p_mode */
    uint64_t after_n;
    int pull_ok;    /* pull may start (switches, hook, threads) */
    int off_reason; /* why not, when !pull_ok */
    int busy;       /* progress running: never re-enter */
    int hook;       /* progress runs inside MPI: blocking PMPI waits are safe */
    int engaged_min;        /* hb_p2p_engaged never drops below this */
    struct p2p_comm *comms; /* uthash by handle */
    struct hb_list pulled;  /* struct p2p_comm */
    struct p2p_req *reqs;   /* uthash by handle */
    struct hb_list orphans; /* struct p2p_req freed while pending */
    uint64_t seq;           /* posting order */
    uint64_t n_posted;      /* hotbuf receives in some matcher */
    uint64_t n_unexp;       /* messages in the unexpected stores */
    MPI_Request *pool;      /* idle handles */
    int npool, cappool;
    MPI_Comm bridge; /* Intercomm_create's leaders talk here (p2p_bridge.c) */
    struct hb_p2p_summary stats;
};

extern struct p2p_state p2p;

/* The test switch of p2p_route.c: calls per function. */
/* clang-format off */
#define HB_P2P_ROUTE_FUNCS(X)                                                  \
    X(recv) X(irecv) X(recv_init) X(start) X(startall) X(sendrecv)             \
    X(sendrecv_replace) X(isendrecv) X(isendrecv_replace) X(probe) X(iprobe)   \
    X(mprobe) X(improbe) X(wait) X(test) X(waitall) X(testall) X(waitany)     \
    X(testany) X(waitsome) X(testsome) X(request_get_status) X(cancel)         \
    X(request_free) X(comm_free) X(comm_disconnect)
/* clang-format on */
#define HB_P2P_ROUTE_ENUM(f) HB_P2P_ROUTE_##f,
enum { HB_P2P_ROUTE_FUNCS(HB_P2P_ROUTE_ENUM) HB_P2P_ROUTE_N };

struct p2p_route {
    int on; /* HOTBUF_TEST_P2P_PASS=1 */
    unsigned long calls[HB_P2P_ROUTE_N];
};
extern struct p2p_route hb_p2p_route;

#define HB_P2P_ROUTE(f)                                                        \
    do {                                                                       \
        if (hb_p2p_route.on)                                                   \
            hb_p2p_route.calls[HB_P2P_ROUTE_##f]++;                            \
    } while (0)

/* p2p.c */
void hb_p2p_update_engaged(void);
void hb_p2p_poll(void);   /* one progress pass (guarded) */
int hb_p2p_hook_ok(void); /* progress runs inside MPI (else: no pull) */

/* p2p_bridge.c: collective over ctx->comm */
void hb_p2p_bridge_start(const struct hb_ctx *ctx);
void hb_p2p_bridge_stop(void);

/* p2p_comm.c */
struct p2p_comm *hb_p2p_comm_get(MPI_Comm comm); /* NULL: not ours */
/* A receive-side call on comm: counts it, enters pull when due.  Returns
 * the communicator when pulled, else NULL (go to PMPI). */
struct p2p_comm *hb_p2p_comm_recv_call(MPI_Comm comm);
void hb_p2p_claim(struct p2p_comm *c);        /* unless busy */
void hb_p2p_claim_locked(struct p2p_comm *c); /* busy set by the caller */
void hb_p2p_comm_release_pending(struct p2p_comm *c);
void hb_p2p_comm_free_all(void);
void hb_p2p_flush_frees(void); /* deferred Comm_frees now due */

/* p2p_req.c */
int hb_p2p_translate_source(int source); /* MPI -> HB_PM_ANY */
struct p2p_req *hb_p2p_req_find(MPI_Request h);
struct p2p_req *hb_p2p_req_new(void); /* zeroed, not in the table */
int hb_p2p_req_set_args(struct p2p_req *r, void *buf, MPI_Count count,
                        MPI_Datatype type, int source, int tag);
int hb_p2p_req_pool_handle(struct p2p_req *r); /* MPI_SUCCESS or error */
void hb_p2p_req_insert(struct p2p_req *r);
void hb_p2p_req_release(struct p2p_req *r); /* out of the table, freed */
void hb_p2p_req_post(struct p2p_comm *c, struct p2p_req *r);
void hb_p2p_req_deliver(struct p2p_req *r, struct p2p_msg *m);
/* Drives r one step (nonblocking); 1 when it is RQ_DONE. */
int hb_p2p_req_poll(struct p2p_req *r);
/* Blocks (with hotbuf's progress) until r is RQ_DONE. */
void hb_p2p_req_block(struct p2p_req *r);
/* The application takes a done request's status: frees what must be
 * freed, updates *handle (MPI_REQUEST_NULL unless persistent). */
int hb_p2p_req_complete(struct p2p_req *r, MPI_Request *handle, MPI_Status *st);
void hb_p2p_req_pool_free(void);
void hb_p2p_poll_orphans(void);

/* The empty status MPI gives for a null or inactive request. */
void hb_p2p_status_empty(MPI_Status *st);

#endif
