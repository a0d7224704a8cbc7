/* The send family on a switched pair (P2P-DESIGN.md §5.6; issue 13
 * item 3).
 *
 * Every send-family call on a communicator that hotbuf may reroute comes
 * here while point-to-point is engaged.  On a live pair, a blocking
 * standard send of contiguous data that fits a slot goes by ring; any
 * other send goes by MPI, after a marker when ring records precede it on
 * that communicator, and counts in the stamps (p2p_pair.h), so the
 * receiver's merge restores the send order.  A send on a pair that is not
 * live goes to MPI unchanged, and asks for a grant when its call is hot.
 *
 * What goes by ring: standard, ready, buffered and synchronous sends,
 * blocking or not, persistent ones at each Start, and the send half of
 * Sendrecv and Sendrecv_replace.  A ready send goes as a standard one
 * (MPI allows it: a ready send that found no receive is erroneous either
 * way).  A buffered one needs no room in the attached buffer: the ring's
 * record is out of the user's buffer when the call returns, which is all
 * MPI_Bsend promises, and MPI_Buffer_detach has nothing of it to wait
 * for.  Each record waits for its RC completion before the call returns,
 * so the user's buffer and the staging area are free then; a nonblocking
 * or persistent send's request is therefore complete at once (a done
 * request of hotbuf's, completed by the Wait/Test wrappers).  Waiting in
 * MPI_Isend is allowed: the completion needs the receiver's NIC, never
 * its process.  A synchronous send (Ssend, Issend, a Start of Ssend_init)
 * goes by ring too, as a DATA_SYNC record, and completes at the
 * receiver's SYNC_ACK, sent when its hotbuf matches the record
 * (p2p_sync.c): MPI_Ssend waits for it, an Issend's request is done only
 * then.  Every send that does not fit a slot goes by MPI with the pair's
 * bookkeeping. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/track_mpi.h"
#include "p2p_int.h"
#include "rdma/rdma.h"
#include "regcache/regcache.h"

/* The send family by mode, for the int and the large-count forms alike
 * (SFX empty or _c). */
#define PMPI_SEND_BY_MODE(SFX)                                                 \
    switch (mode) {                                                            \
    case HB_P2P_SSEND:                                                         \
        return PMPI_Ssend##SFX(buf, count, type, dest, tag, comm);             \
    case HB_P2P_RSEND:                                                         \
        return PMPI_Rsend##SFX(buf, count, type, dest, tag, comm);             \
    case HB_P2P_BSEND:                                                         \
        return PMPI_Bsend##SFX(buf, count, type, dest, tag, comm);             \
    case HB_P2P_ISEND:                                                         \
        return PMPI_Isend##SFX(buf, count, type, dest, tag, comm, req);        \
    case HB_P2P_ISSEND:                                                        \
        return PMPI_Issend##SFX(buf, count, type, dest, tag, comm, req);       \
    case HB_P2P_IRSEND:                                                        \
        return PMPI_Irsend##SFX(buf, count, type, dest, tag, comm, req);       \
    case HB_P2P_IBSEND:                                                        \
        return PMPI_Ibsend##SFX(buf, count, type, dest, tag, comm, req);       \
    default: return PMPI_Send##SFX(buf, count, type, dest, tag, comm);         \
    }

static int pmpi_send(int mode, const void *buf, int count, MPI_Datatype type,
                     int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    PMPI_SEND_BY_MODE()
}

/* The pair of a send to dest on comm, or NULL (no ring, not ours). */
static struct p2p_txpair *pair_of(MPI_Comm comm, int dest)
{
    struct p2p_comm *c;
    if (!p2p.ring || dest < 0)
        return NULL;
    hb_p2p_grant_poll();
    c = hb_p2p_comm_get(comm);
    if (!c || c->state == COMM_OFF)
        return NULL;
    return hb_p2p_txpair(c, dest);
}

void hb_p2p_send_marker(MPI_Comm comm, int dest, uint32_t k)
{
    struct hb_inband ib = {p2p.nonce, HB_INBAND_MARKER, k};
    PMPI_Send(&ib, (int)sizeof(ib), MPI_BYTE, dest, p2p.tstar, comm);
    p2p.stats.markers_out++;
}

/* An MPI data send on a pair that is or was live: the marker first when
 * ring records precede it (§5.6 step 3), and the count the stamps use. */
static void mpi_on_pair(struct p2p_txpair *tp)
{
    uint32_t k;
    if (tp->pp.state == HB_PP_MPI)
        return;
    if (hb_pp_mpi(&tp->pp, &k))
        hb_p2p_send_marker(tp->c->comm, tp->dest, k);
    p2p.stats.live_by_mpi += tp->state == TX_GRANTED && hb_pp_ring_ok(&tp->pp);
}

/* Granted, and not back on MPI for good (a fault): records may go. */
static int live(const struct p2p_txpair *tp)
{
    return tp->state == TX_GRANTED && hb_pp_ring_ok(&tp->pp);
}

/* Synchronous: complete at the receiver's match (SYNC_ACK). */
static int sync_mode(int mode)
{
    return mode == HB_P2P_SSEND || mode == HB_P2P_ISSEND;
}

/* Rendezvous may carry it: its completion waits for the receiver's read,
 * which a buffered send must not (MPI_Bsend is local). */
static int rndv_mode(int mode)
{
    return mode != HB_P2P_BSEND && mode != HB_P2P_IBSEND;
}

/* Large enough for a rendezvous (above the slots, at least
 * HOTBUF_P2P_RNDV_MIN): such a send asks for a pair whatever its reuse,
 * its copies being what a rendezvous saves. */
static int rndv_size(uint64_t bytes)
{
    return p2p.rndv && bytes > p2p.ctx->cfg->eager_limit &&
           bytes >= p2p.rndv_min && bytes <= p2p.rndv_max;
}

/* A buffer of rendezvous size used this often is worth registering
 * (p2p.c, rndv_thresholds); uses 0: a persistent send's promise. */
static int rndv_worth(uint32_t uses, uint64_t bytes)
{
    return !uses || uses >= p2p.rndv_thr[hb_size_class(bytes)];
}

/* What the tracker said of the call being sent. */
struct sent_call {
    int hot;
    int big;        /* rendezvous size: worth a pair too */
    uint32_t uses;  /* of its buffer so far (0: a persistent send's promise) */
    uint32_t bytes; /* its extent */
    uint16_t site;  /* the call site to credit */
};

/* Asks for a grant when this call is hot (or always, for tests); the
 * receiver weighs the buffer's uses and size (p2p_policy.h). */
static void maybe_ask(struct p2p_txpair *tp, const struct sent_call *k)
{
    if (tp->state == TX_IDLE ||
        (tp->state == TX_REFUSED && tp->sends >= tp->retry_at))
        if (k->hot || k->big || p2p.ask_always)
            hb_p2p_ask(tp, k->uses, k->bytes);
}

/* bytes of contiguous data by ring: 1 zero-copy, 0 copied, -1 not (MPI
 * then). */
static int by_ring(struct p2p_txpair *tp, const void *buf, uint64_t bytes,
                   int tag, int hot, struct p2p_sync *sync)
{
    if (!live(tp) || !bytes || bytes > UINT32_MAX)
        return -1;
    if (hb_pp_open(&tp->pp)) /* the pair's first record */
        hb_p2p_send_marker(tp->c->comm, tp->dest, 0);
    return hb_p2p_chan_send(tp, buf, (uint32_t)bytes, tag, hot, sync);
}

/* The request of a nonblocking send, made before its record goes (a
 * record cannot be taken back); NULL: out of handles, MPI then. */
static struct p2p_req *send_req_new(MPI_Comm comm)
{
    struct p2p_req *r = hb_p2p_req_new();
    if (r && hb_p2p_req_pool_handle(r) != MPI_SUCCESS) {
        hb_p2p_req_release(r);
        return NULL;
    }
    if (r)
        r->comm = comm;
    return r;
}

/* Its record went: the request is done, with a send's empty status. */
static void send_req_done(struct p2p_req *r)
{
    r->state = RQ_DONE;
    hb_p2p_status_empty(&r->st);
    hb_p2p_req_insert(r);
}

/* One send of call k on pair tp, by ring when it can (1), else 0: the
 * caller sends by MPI, the pair's bookkeeping done.  sync: a synchronous
 * send's record keeper (else NULL). */
static int send_on_pair(struct p2p_txpair *tp, int ring_ok, const void *buf,
                        uint64_t bytes, int tag, const struct sent_call *k,
                        struct p2p_sync *sync)
{
    int ring = ring_ok ? by_ring(tp, buf, bytes, tag, k->hot, sync) : -1;
    tp->sends++;
    p2p.stats.hot_missed += k->hot && ring != 1 && live(tp);
    if (ring >= 0) {
        if (k->site != HB_SITE_NONE)
            hb_tracker_count_rerouted(p2p.ctx->tracker, HB_OP_SEND, k->site);
        return 1;
    }
    mpi_on_pair(tp);
    maybe_ask(tp, k);
    return 0;
}

/* The call hb_track recorded last. */
static struct sent_call last_call(void)
{
    struct hb_entry *e = hb_track_last;
    hb_track_last = NULL;
    return (struct sent_call){.hot = hb_tracker_call_hot(e),
                              .big = e && rndv_size(e->size) &&
                                     rndv_worth(e->uses, e->size),
                              .uses = e ? e->uses : 1,
                              .bytes = e ? e->size : 0,
                              .site = hb_tracker_call_site(e)};
}

/* A rendezvous for this send: its mode and size allow one, its buffer's
 * reuse makes the registration worth it, and the buffer's registrations
 * last (regcache_churn.h: memory unmapped and mapped again between sends
 * would pay a registration per message, 4-8 times MPI's copy at 16 KiB;
 * such sends go by MPI, counted). */
static int rndv_ok(int mode, const void *buf, uint64_t bytes, uint32_t uses)
{
    if (!(rndv_mode(mode) && rndv_size(bytes) && rndv_worth(uses, bytes)))
        return 0;
    if (hb_churn_try(&p2p.churn, buf))
        return 1;
    p2p.stats.rndv_churned++;
    return 0;
}

/* The keeper of a send's record when it needs one: a synchronous send,
 * or one too large for a slot (a rendezvous, when this mode and size may
 * have one).  0: none needed or *s made; -1: the send goes by MPI. */
static int keeper(struct p2p_txpair *tp, int mode, const void *buf,
                  uint64_t bytes, uint32_t uses, struct p2p_sync **s)
{
    int big = !hb_p2p_chan_fits(tp->world, bytes);
    *s = NULL;
    if (big && !rndv_ok(mode, buf, bytes, uses))
        return -1;
    if (!big && !sync_mode(mode))
        return 0;
    if (!(*s = hb_p2p_sync_new(tp, buf)))
        return -1;
    (*s)->rndv = big;
    return 0;
}

int hb_p2p_send(int mode, const void *buf, int count, MPI_Datatype type,
                int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    struct p2p_txpair *tp = pair_of(comm, dest);
    struct sent_call k = last_call();
    if (!tp)
        return pmpi_send(mode, buf, count, type, dest, tag, comm, req);
    uint64_t bytes = live(tp) ? hb_dt_contiguous_bytes(count, type) : 0;
    struct p2p_req *r = req && bytes ? send_req_new(comm) : NULL;
    struct p2p_sync *s = NULL;
    int ring_ok = bytes && (!req || r);
    if (ring_ok && keeper(tp, mode, buf, bytes, k.uses, &s))
        ring_ok = 0;
    if (send_on_pair(tp, ring_ok, buf, bytes, tag, &k, s)) {
        if (r) { /* done at the SYNC_ACK when synchronous */
            r->sync = s;
            send_req_done(r);
            *req = r->handle;
        } else if (s) {
            hb_p2p_sync_wait(s);
            hb_p2p_sync_free(s);
        }
        return MPI_SUCCESS;
    }
    hb_p2p_sync_free(s);
    if (r)
        hb_p2p_req_release(r);
    return pmpi_send(mode, buf, count, type, dest, tag, comm, req);
}

int hb_p2p_send_half_ring(const void *buf, MPI_Count count, MPI_Datatype type,
                          int dest, int tag, MPI_Comm comm)
{
    struct p2p_txpair *tp = pair_of(comm, dest);
    struct sent_call k = last_call();
    uint64_t bytes = 0;
    if (!tp)
        return 0;
    if (live(tp) && count >= 0 && count <= INT_MAX)
        bytes = hb_dt_contiguous_bytes((int)count, type);
    return send_on_pair(tp, bytes != 0, buf, bytes, tag, &k, NULL);
}

void hb_p2p_send_half(MPI_Comm comm, int dest)
{
    struct p2p_txpair *tp = pair_of(comm, dest);
    if (tp) {
        tp->sends++;
        mpi_on_pair(tp);
    }
}

#if MPI_VERSION >= 4
static int pmpi_send_c(int mode, const void *buf, MPI_Count count,
                       MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                       MPI_Request *req)
{
    PMPI_SEND_BY_MODE(_c)
}
#endif

int hb_p2p_send_c(int mode, const void *buf, MPI_Count count, MPI_Datatype type,
                  int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    hb_track_last = NULL; /* not tracked: whatever hb_track left is stale */
    if (count >= 0 && count <= INT_MAX)
        return hb_p2p_send(mode, buf, (int)count, type, dest, tag, comm, req);
#if MPI_VERSION >= 4
    hb_p2p_send_half(comm, dest); /* too large for a slot: MPI */
    return pmpi_send_c(mode, buf, count, type, dest, tag, comm, req);
#else
    return MPI_ERR_INTERN; /* not bound: MPI-3 has no _c forms */
#endif
}

/* Persistent sends, by handle: each Start is a send on its pair, by ring
 * when it can.  The arguments are kept from the init call; the buffer's
 * size is taken there, while its datatype is certainly alive (the
 * application may free it before a Start).  A persistent buffer is
 * treated as hot: the request is the user's promise of reuse, and so it
 * is registered at the init call (issue 14 item 2, the SCI-MPICH paper):
 * every Start's zero-copy lookup is a cache hit, the first one too, and
 * the held reference keeps it from eviction until MPI_Request_free. */
struct p2p_psend {
    uint64_t key; /* the MPI_Request handle's bits */
    MPI_Comm comm;
    int dest, tag;
    const void *buf;
    uint64_t bytes;        /* contiguous, else 0: MPI at every Start */
    uint16_t site;         /* credited with the Starts that go by ring */
    int mode;              /* HB_P2P_*: a synchronous one completes at its
                       SYNC_ACK, a large one may be a rendezvous */
    struct hb_region *reg; /* registered at init, or NULL */
    int started;           /* a Start went by ring (report: first hits) */
    UT_hash_handle hh;
};

/* The buffer of a persistent send that can go by ring, registered now;
 * NULL (each Start registers then, as any hot send): too large for a
 * slot, no registration cache, or the registration failed. */
static struct hb_region *psend_pin(const void *buf, uint64_t bytes, int mode)
{
    struct hb_rdma *rdma = p2p.ctx->rdma;
    struct hb_region *reg = NULL;
    if (!bytes ||
        (bytes > p2p.ctx->cfg->eager_limit &&
         !(rndv_mode(mode) && rndv_size(bytes))) ||
        !rdma->cache || hb_rdma_register(rdma, buf, bytes, &reg))
        return NULL;
    p2p.stats.psend_pinned++;
    return reg;
}

static void psend_free(struct p2p_psend *s)
{
    if (s && s->reg)
        hb_regcache_put(p2p.ctx->rdma->cache, s->reg);
    free(s);
}

static struct p2p_psend *psend_find(MPI_Request h)
{
    uint64_t key = hb_p2p_req_key(h);
    struct p2p_psend *s = NULL;
    if (p2p.psends)
        HASH_FIND(hh, p2p.psends, &key, sizeof(key), s);
    return s;
}

void hb_p2p_send_init(int mode, MPI_Request req, const void *buf, int count,
                      MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                      void *ret)
{
    struct p2p_psend *s, *old;
    if (!p2p.ring || dest < 0 || !(s = calloc(1, sizeof(*s))))
        return; /* a persistent send no pair can see */
    s->key = hb_p2p_req_key(req);
    s->comm = comm;
    s->dest = dest;
    s->tag = tag;
    s->buf = buf;
    s->bytes = hb_dt_contiguous_bytes(count, type);
    s->mode = mode;
    s->site = hb_track_site(HB_OP_SEND, ret); /* the init call's */
    s->reg = psend_pin(buf, s->bytes, mode);
    HASH_REPLACE(hh, p2p.psends, key, sizeof(s->key), s, old);
    psend_free(old); /* a handle MPI reused after a free we did not see */
}

void hb_p2p_send_init_c(int mode, MPI_Request req, const void *buf,
                        MPI_Count count, MPI_Datatype type, int dest, int tag,
                        MPI_Comm comm, void *ret)
{
    /* a count beyond int: 0 bytes for the ring, so each Start is counted
     * and goes by MPI */
    int n = count >= 0 && count <= INT_MAX ? (int)count : 0;
    hb_p2p_send_init(mode, req, buf, n, type, dest, tag, comm, ret);
}

/* A Start.  By ring, MPI's request is left inactive and a done request of
 * hotbuf's stands for it under the same handle until the application
 * completes it (hb_p2p_req_complete drops it then).  Else its message
 * enters MPI's order here: the marker first when ring records precede
 * it, and the count the stamps use, as for any MPI send.  1: by ring. */
int hb_p2p_psend_start(MPI_Request req)
{
    struct p2p_psend *s = psend_find(req);
    struct p2p_txpair *tp = s ? pair_of(s->comm, s->dest) : NULL;
    struct p2p_req *r = NULL;
    if (!tp)
        return 0;
    if (s->bytes && live(tp) && (r = hb_p2p_req_new())) {
        r->handle = req;
        r->comm = s->comm;
        r->psend = 1;
        if (keeper(tp, s->mode, s->buf, s->bytes, 0, &r->sync)) {
            hb_p2p_req_release(r);
            r = NULL;
        }
    }
    struct sent_call k = {.hot = 1,
                          .big = rndv_size(s->bytes),
                          .bytes = s->bytes > UINT32_MAX ? UINT32_MAX
                                                         : (uint32_t)s->bytes,
                          .site = s->site};
    if (!send_on_pair(tp, r != NULL, s->buf, s->bytes, s->tag, &k,
                      r ? r->sync : NULL)) {
        if (r)
            hb_p2p_req_release(r);
        return 0;
    }
    send_req_done(r);
    p2p.stats.pinned_first += s->reg && !s->started;
    s->started = 1;
    return 1;
}

void hb_p2p_psend_forget(MPI_Request req)
{
    struct p2p_psend *s = psend_find(req);
    if (s) {
        HASH_DEL(p2p.psends, s);
        psend_free(s);
    }
}

/* comm is going away: its pairs are dropped, so are its sends' entries
 * (MPI may reuse the handle for another communicator).  MPI_COMM_NULL:
 * every entry (the subsystem stops). */
void hb_p2p_psend_drop_comm(MPI_Comm comm)
{
    struct p2p_psend *s, *tmp;
    HASH_ITER(hh, p2p.psends, s, tmp)
    if (s->comm == comm || comm == MPI_COMM_NULL) {
        HASH_DEL(p2p.psends, s);
        psend_free(s);
    }
}
