/* RDMA bring-up and tear-down (see rdma.h). */
#include "rdma.h"

#include <stdio.h>
#include <string.h>

#include "regcache/memmon.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"
#include "transport/transport.h"
#include "util/why.h"

void hb_rdma_prepare_fork(struct hb_rdma *r)
{
    char msg[128];
    memset(r, 0, sizeof(*r));
    hb_transport_fork_prepare(HB_FORK_AUTO, msg, sizeof(msg));
}

static int allgather(const void *mine, void *all, size_t bytes, void *ctx)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    return PMPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                          comm) == MPI_SUCCESS
               ? 0
               : -1;
}

/* The monitor per HOTBUF_MEMMON; 1 if it runs (muted or not). */
static int start_memmon(struct hb_rdma *r, const struct hb_config *cfg,
                        char *why, size_t len)
{
    if (cfg->memmon == HB_MEMMON_NONE) {
        snprintf(why, len, "HOTBUF_MEMMON=none");
        return 0;
    }
    unsigned flags = cfg->memmon == HB_MEMMON_OFF ? HB_MEMMON_F_MUTED : 0;
    return hb_memmon_start((hb_memmon_cb)hb_regcache_invalidate, r->cache,
                           flags, why, len) == 0;
}

/* The cache exists only with a monitor: without one a registration could
 * outlive the memory it maps, and data integrity beats speed. */
static void start_cache(struct hb_rdma *r, const struct hb_config *cfg)
{
    char why[200] = "";
    size_t max_bytes = cfg->regcache_bytes ? (size_t)cfg->regcache_bytes
                                           : hb_regcache_default_max_bytes();
    if (hb_regcache_create(
            &hb_regcache_verbs_watched_ops, hb_transport_pd(r->tr),
            (size_t)cfg->regcache_entries, max_bytes, &r->cache)) {
        r->cache = NULL;
        snprintf(why, sizeof(why), "no memory for the registration cache");
    } else if (!(r->memmon_active = start_memmon(r, cfg, why, sizeof(why)))) {
        hb_regcache_destroy(r->cache);
        r->cache = NULL;
    }
    struct hb_transport_info info;
    char gid[32] = "";
    hb_transport_get_info(r->tr, &info);
    if (info.gid_index >= 0)
        snprintf(gid, sizeof(gid), " GID index %d", info.gid_index);
    hb_why(r->status, sizeof(r->status), "RDMA on %s port %d (%s%s)",
           info.device, info.port, info.gid_type, gid);
    if (!r->cache)
        hb_why_append(
            r->status, sizeof(r->status),
            "; application buffers are not registered: memory monitor unavailable (%s)",
            why);
    else if (cfg->memmon == HB_MEMMON_OFF)
        hb_why_append(
            r->status, sizeof(r->status),
            "; HOTBUF_MEMMON=off: stale registrations possible (debug only)");
}

/* The transport's on_imm: one class per subsystem (see rdma.h). */
static void imm_dispatch(void *ctx, int peer, uint32_t imm, uint32_t byte_len)
{
    struct hb_rdma *r = ctx;
    unsigned cls = HB_IMM_CLASS(imm);
    if (!r->imm[cls].fn) {
        r->imm_dropped++;
        return;
    }
    r->imm[cls].fn(r->imm[cls].ctx, peer, HB_IMM_BODY(imm), byte_len);
}

int hb_rdma_imm_register(struct hb_rdma *r, unsigned cls, hb_imm_fn fn,
                         void *ctx)
{
    if (cls == 0 || cls >= HB_IMM_CLASSES || (fn && r->imm[cls].fn))
        return -1;
    r->imm[cls].fn = fn;
    r->imm[cls].ctx = fn ? ctx : NULL;
    return 0;
}

int hb_rdma_start(struct hb_rdma *r, const struct hb_config *cfg, int rank,
                  int size, MPI_Comm comm)
{
    struct hb_transport_params p;
    char why[200] = "";
    hb_transport_params_default(&p);
    p.on_imm = imm_dispatch;
    p.on_imm_ctx = r;
    p.device = cfg->device;
    p.port = cfg->port;
    p.connect_timeout_s = cfg->connect_timeout;
    if (hb_transport_open(&p, rank, size, &r->tr, why, sizeof(why))) {
        r->tr = NULL;
        /* every rank joins the bootstrap, also one whose open failed */
        hb_transport_bootstrap_absent(size, allgather, &comm);
    } else if (hb_transport_bootstrap(r->tr, allgather, &comm, why,
                                      sizeof(why))) {
        hb_transport_close(r->tr, NULL, 0);
        r->tr = NULL;
    }
    if (!r->tr) {
        snprintf(r->status, sizeof(r->status),
                 "RDMA off (%s): tracking and report only", why);
        return -1;
    }
    start_cache(r, cfg);
    return 0;
}

static void summarize(const struct hb_rdma *r, struct hb_rdma_summary *s)
{
    memset(s, 0, sizeof(*s));
    if (!r->tr)
        return;
    struct hb_transport_mem m;
    hb_transport_get_mem(r->tr, &m);
    *s = (struct hb_rdma_summary){
        .up = 1,
        .peers_connected = m.peers_connected,
        .peers_failed = m.peers_failed,
        .transport_bytes = m.total_bytes,
        .per_peer_bytes = m.per_peer_bytes,
        .imm_dropped = r->imm_dropped,
    };
    if (r->cache) {
        struct hb_regcache_stats cs;
        hb_regcache_stats(r->cache, &cs);
        s->cache_entries = cs.entries;
        s->cache_pinned = cs.pinned_bytes;
        s->cache_hits = cs.hits;
        s->cache_misses = cs.misses;
        s->cache_invalidations = cs.invalidations;
    }
    if (r->memmon_active) {
        struct hb_memmon_stats ms;
        hb_memmon_stats(&ms);
        s->memmon_events = ms.unmap_events + ms.remove_events + ms.remap_events;
    }
}

int hb_rdma_register(struct hb_rdma *r, const void *addr, size_t len,
                     struct hb_region **out)
{
    if (r->memmon_active)
        hb_memmon_sync();
    return hb_regcache_get(r->cache, addr, len, out);
}

int hb_rdma_trust(struct hb_rdma *r, const void *addr, size_t len)
{
    return r && r->memmon_active ? hb_memmon_trust(addr, len) : -1;
}

void hb_rdma_untrust(struct hb_rdma *r, const void *addr, size_t len)
{
    if (r && r->memmon_active)
        hb_memmon_untrust(addr, len);
}

struct failed_ctx {
    int rank;
    struct hb_rdma_record *rec;
};

static void add_failed(void *ctx, int peer, const char *reason)
{
    struct failed_ctx *f = ctx;
    if (f->rec->nfailed >= HB_FAILED_PEERS)
        return;
    struct hb_failed_peer *p = &f->rec->failed[f->rec->nfailed++];
    p->rank = f->rank;
    p->peer = peer;
    snprintf(p->reason, sizeof(p->reason), "%s", reason);
}

void hb_rdma_summarize(const struct hb_rdma *r, int rank,
                       struct hb_rdma_record *rec)
{
    struct failed_ctx f = {rank, rec};
    memset(rec, 0, sizeof(*rec));
    summarize(r, &rec->s);
    memcpy(rec->status, r->status, sizeof(rec->status));
    if (r->tr)
        hb_transport_foreach_failed(r->tr, add_failed, &f);
}

/* A failed teardown (a registration left on the PD shows up as EBUSY from
 * ibv_dealloc_pd) is a hotbuf bug: one line on stderr from the rank that
 * saw it, since the report is already out. */
static void close_transport(struct hb_transport *tr, MPI_Comm comm)
{
    char why[200] = "";
    int rank = -1;

    if (hb_transport_close(tr, why, sizeof(why)) == 0)
        return;
    PMPI_Comm_rank(comm, &rank);
    fprintf(stderr, "hotbuf: rank %d: %s\n", rank, why);
}

void hb_rdma_stop(struct hb_rdma *r, MPI_Comm comm)
{
    PMPI_Barrier(comm);
    if (r->memmon_active)
        hb_memmon_stop(); /* before the cache: no callback into a destroyed cache */
    if (r->cache)
        hb_regcache_destroy(r->cache);
    if (r->tr)
        close_transport(r->tr, comm);
    memset(r, 0, sizeof(*r));
}
