/* Point-to-point subsystem: switches, life cycle, the progress callback
 * (see p2p.h, p2p_int.h). */
#include <stdlib.h>
#include <string.h>

#include "core/note.h"
#include "core/progress.h"
#include "core/subsys.h"
#include "core/wrapcheck.h"
#include "rdma/rdma.h"
#include "transport/transport.h"
#include "p2p_int.h"

int hb_p2p_engaged;
struct p2p_state p2p;

/* "auto", "all", "after:N"; 0, or -1 on anything else. */
static int parse_mode(const char *s)
{
    char *end;
    if (!s || !strcmp(s, "auto")) {
        p2p.mode = P2P_MODE_AUTO;
        return 0;
    }
    if (!strcmp(s, "all")) {
        p2p.mode = P2P_MODE_ALL;
        return 0;
    }
    if (!strncmp(s, "after:", 6) && s[6]) {
        unsigned long long n = strtoull(s + 6, &end, 10);
        if (!*end) {
            p2p.mode = P2P_MODE_AFTER;
            p2p.after_n = n;
            return 0;
        }
    }
    p2p.mode = P2P_MODE_AUTO;
    return -1;
}

/* Whether pull may start at all on this rank, and why not.  The progress
 * hook is installed after the subsystems start: hb_p2p_hook_ok asks. */
static void decide(const struct hb_ctx *ctx)
{
    p2p.pull_ok = 0;
    if (!ctx->cfg->p2p)
        p2p.off_reason = HB_P2P_OFF_SWITCH;
    else if (ctx->thread_level == MPI_THREAD_MULTIPLE)
        p2p.off_reason = HB_P2P_OFF_THREADS;
    else if (p2p.mode == P2P_MODE_AUTO && !ctx->cfg->p2p_ring)
        p2p.off_reason = HB_P2P_OFF_NOT_NEEDED;
    else if (!hb_bindings_checked()) /* core notes it once */
        p2p.off_reason = HB_P2P_OFF_UNCHECKED;
    else
        p2p.pull_ok = 1;
}

/* Without progress inside MPI, nothing runs hotbuf's matching while a
 * rank sits in an unrelated blocking MPI call, and a sender that needs
 * the match (Ssend, rendezvous) hangs (P2P-DESIGN.md §5.10): no pull.
 * HOTBUF_P2P_UNSAFE_NO_HOOK=1 overrides it for development only. */
int hb_p2p_hook_ok(void)
{
    static int noted;
    const char *unsafe = getenv("HOTBUF_P2P_UNSAFE_NO_HOOK");
    p2p.hook = hb_progress_hook_active();
    if (p2p.hook || (unsafe && !strcmp(unsafe, "1")))
        return 1;
    if (!noted++)
        hb_note("point-to-point pull off: no progress inside this MPI (%s)",
                hb_progress_hook_status());
    return 0;
}

static void progress_cb(void *arg)
{
    (void)arg;
    hb_p2p_poll();
}

void hb_p2p_poll(void)
{
    struct hb_list *l, *next;
    if (p2p.busy)
        return;
    hb_p2p_chan_acks_check(); /* also with no communicator pulled */
    hb_p2p_rndv_progress();   /* reads complete without a Wait */
    if (hb_list_empty(&p2p.pulled))
        return;
    p2p.busy = 1;
    hb_p2p_chan_drain();
    for (l = p2p.pulled.next; l != &p2p.pulled; l = next) {
        next = l->next; /* a deferred free may unlink l */
        hb_p2p_claim_locked(hb_container_of(l, struct p2p_comm, link));
    }
    hb_p2p_poll_orphans();
    p2p.busy = 0;
}

/* Engaged while pull may start (every receive-side call must be seen to
 * count and pull it), or while hotbuf holds requests or pulled
 * communicators. */
void hb_p2p_update_engaged(void)
{
    hb_p2p_engaged = p2p.engaged_min || p2p.reqs || !hb_list_empty(&p2p.pulled);
}

/* The uses at which a buffer of rendezvous size is worth its
 * registration: the break-even count R / (C - V) itself (or
 * HOTBUF_THRESHOLD), for sizes above the eager limit, where the tracker
 * never makes a call hot.  Not the hot threshold's speculative fraction:
 * a rendezvous registers on both sides, and a fresh buffer's
 * registration is paid again with its invalidation (munmap: the memory
 * monitor's round trip, which R leaves out).  The uses count an address,
 * not its pages: memory mapped anew at the same address between sends
 * passes this rule, and is caught by its registrations not lasting
 * (regcache_churn.h, p2p_send.c: rndv_ok).  A buffer whose copy costs
 * more than its registration passes at its first use. */
static void rndv_thresholds(const struct hb_ctx *ctx)
{
    struct hb_threshold_params thp = {
        .speculative = 1.0,
        .fixed = (uint32_t)ctx->cfg->threshold,
    };
    hb_cost_thresholds(ctx->cost, &thp, p2p.rndv_thr);
}

/* The largest rendezvous: one RDMA read carries it, so not over the
 * device's largest message (rxe: 8 MiB; a longer read fails, and with it
 * the pair).  The receiver reads: a peer whose device allows less than
 * this one's still fails such a read (the message then comes by MPI). */
static uint64_t rndv_max(const struct hb_ctx *ctx)
{
    struct hb_transport_info info;
    if (!ctx->rdma->tr)
        return HB_RNDV_MAX;
    hb_transport_get_info(ctx->rdma->tr, &info);
    return info.max_msg < HB_RNDV_MAX ? info.max_msg : HB_RNDV_MAX;
}

/* Part 2: the handshake's communicators on every rank alike (collective),
 * the channels where this rank's RDMA is up. */
static void start_ring(const struct hb_ctx *ctx)
{
    const char *ask = getenv("HOTBUF_TEST_P2P_ASK");
    if (!ctx->cfg->p2p || !ctx->cfg->p2p_ring)
        return;
    if (hb_p2p_grant_start(ctx)) {
        hb_note("HOTBUF_P2P_RING=1: no communicator for the handshake; "
                "point-to-point stays on MPI");
        return;
    }
    p2p.ask_always = ask && !strcmp(ask, "1");
    p2p.rndv = ctx->cfg->p2p_rndv;
    p2p.rndv_min = ctx->cfg->p2p_rndv_min;
    p2p.rndv_max = rndv_max(ctx);
    rndv_thresholds(ctx);
    hb_p2p_revoke_start(ctx);
    p2p.ring = p2p.pull_ok && hb_p2p_chan_start(ctx) == 0;
}

static int start(const struct hb_ctx *ctx)
{
    memset(&p2p, 0, sizeof(p2p));
    p2p.ctx = ctx;
    hb_list_init(&p2p.pulled);
    hb_list_init(&p2p.orphans);
    hb_list_init(&p2p.sync_rx);
    hb_p2p_rndv_start();
    if (parse_mode(ctx->cfg->p2p_pull))
        hb_note("HOTBUF_P2P_PULL=%s: not auto, all or after:N; auto used",
                ctx->cfg->p2p_pull);
    decide(ctx);
    hb_p2p_bridge_start(ctx);
    start_ring(ctx);
    if (p2p.mode != P2P_MODE_AUTO && p2p.off_reason == HB_P2P_OFF_THREADS)
        hb_note("MPI_THREAD_MULTIPLE: point-to-point pull off (hotbuf's "
                "matcher is single-threaded)");
    if (p2p.pull_ok && hb_progress_add(progress_cb, NULL)) {
        p2p.pull_ok = 0;
        p2p.off_reason = HB_P2P_OFF_MEMORY;
    }
    p2p.engaged_min = p2p.pull_ok || hb_p2p_route.on;
    hb_p2p_update_engaged();
    return 0;
}

static void stop(const struct hb_ctx *ctx)
{
    if (p2p.pull_ok)
        hb_progress_remove(progress_cb, NULL);
    if (p2p.tstar) { /* the handshake ran: every rank is here */
        hb_p2p_chan_quiesce();
        PMPI_Barrier(ctx->comm); /* then no peer writes into a channel */
        hb_p2p_comm_drain_closes();
    }
    hb_p2p_chan_stop();
    hb_p2p_rndv_stop();
    hb_p2p_engaged = 0;
    hb_p2p_comm_free_all();
    hb_p2p_psend_drop_comm(MPI_COMM_NULL);
    while (p2p.syncs) /* sends the application never completed */
        hb_p2p_sync_free(p2p.syncs);
    hb_p2p_req_pool_free();
    hb_p2p_grant_stop();
    hb_p2p_revoke_stop();
    hb_p2p_bridge_stop();
    p2p.pull_ok = 0;
}

/* The counters, and the frees still held for a CLOSE as the report is
 * made (MPI_Finalize, before stop drains the CLOSEs). */
static void summarize(const struct hb_ctx *ctx, void *rec)
{
    (void)ctx;
    struct hb_p2p_summary *s = rec;
    *s = p2p.stats;
    s->held_at_end = hb_p2p_comm_held();
}

/* clang-format off */
const struct hb_subsys hb_p2p_subsys = {
    .name = "p2p", .start = start, .stop = stop,
    .section = &hb_p2p_section, .summarize = summarize,
};
/* clang-format on */
