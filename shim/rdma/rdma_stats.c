/* The RDMA section of the report (see rdma_stats.h): merge and rendering. */
#include "rdma_stats.h"

#include <string.h>

_Static_assert(sizeof(struct hb_rdma_record) % 8 == 0,
               "records concatenate unpadded");
_Static_assert(sizeof(struct hb_rdma_report) % 8 == 0,
               "records concatenate unpadded");

static void max_into(uint64_t *to, uint64_t v)
{
    if (v > *to)
        *to = v;
}

static void merge_summary(struct hb_rdma_summary *to,
                          const struct hb_rdma_summary *s)
{
    to->up += s->up;
    to->peers_connected += s->peers_connected;
    to->peers_failed += s->peers_failed;
    max_into(&to->transport_bytes, s->transport_bytes);
    max_into(&to->per_peer_bytes, s->per_peer_bytes);
    to->cache_entries += s->cache_entries;
    max_into(&to->cache_pinned, s->cache_pinned);
    to->cache_hits += s->cache_hits;
    to->cache_misses += s->cache_misses;
    to->cache_invalidations += s->cache_invalidations;
    to->memmon_events += s->memmon_events;
    to->imm_dropped += s->imm_dropped;
}

static void merge(void *acc, const void *rec)
{
    struct hb_rdma_report *r = acc;
    const struct hb_rdma_record *rs = rec;
    merge_summary(&r->s, &rs->s);
    for (uint32_t i = 0; i < rs->nfailed && i < HB_FAILED_PEERS &&
                         r->nfailed < HB_FAILED_PEERS_SHOWN;
         i++)
        r->failed[r->nfailed++] = rs->failed[i];
    if (!r->status[0]) { /* never trust a received string */
        memcpy(r->status, rs->status, sizeof(r->status));
        r->status[sizeof(r->status) - 1] = 0;
    }
}

static void text_failed(FILE *out, const struct hb_rdma_report *d)
{
    for (uint32_t i = 0; i < d->nfailed; i++)
        fprintf(out, "  rank %d -> rank %d on PMPI: %s\n", d->failed[i].rank,
                d->failed[i].peer, d->failed[i].reason);
    if (d->s.peers_failed > d->nfailed)
        fprintf(out, "  (%llu failed peer(s) in all)\n",
                (unsigned long long)d->s.peers_failed);
}

static void render_text(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_rdma_report *d = acc;
    const struct hb_rdma_summary *s = &d->s;
    char b1[32], b2[32], b3[32];
    fprintf(out, "rdma: %s\n", d->status[0] ? d->status : "-");
    if (!s->up)
        return;
    fprintf(
        out,
        "  up on %llu of %d rank(s); peers connected %llu, failed %llu; transport "
        "memory %s per rank at most, %s per connected peer\n",
        (unsigned long long)s->up, r->nranks,
        (unsigned long long)s->peers_connected,
        (unsigned long long)s->peers_failed,
        hb_report_bytes((double)s->transport_bytes, b1, sizeof(b1)),
        hb_report_bytes((double)s->per_peer_bytes, b2, sizeof(b2)));
    fprintf(
        out,
        "  registration cache: %llu regions, %s pinned at most on a rank, %llu hits, "
        "%llu misses, %llu invalidated by the memory monitor (%llu events)\n",
        (unsigned long long)s->cache_entries,
        hb_report_bytes((double)s->cache_pinned, b3, sizeof(b3)),
        (unsigned long long)s->cache_hits, (unsigned long long)s->cache_misses,
        (unsigned long long)s->cache_invalidations,
        (unsigned long long)s->memmon_events);
    if (s->imm_dropped) /* a peer speaks a class nobody here registered */
        fprintf(out,
                "  %llu RDMA immediate(s) of no registered class dropped\n",
                (unsigned long long)s->imm_dropped);
    text_failed(out, d);
}

static void json_failed(FILE *out, const struct hb_rdma_report *d)
{
    fprintf(out, ", \"failed_peers\": [");
    for (uint32_t i = 0; i < d->nfailed; i++) {
        fprintf(out,
                "%s{\"rank\": %d, \"peer\": %d, \"reason\": ", i ? ", " : "",
                d->failed[i].rank, d->failed[i].peer);
        hb_report_json_string(out, d->failed[i].reason);
        fprintf(out, "}");
    }
    fprintf(out, "]}");
}

static void render_json(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_rdma_report *d = acc;
    const struct hb_rdma_summary *s = &d->s;
    (void)r;
    fprintf(out, "{\"status\": ");
    hb_report_json_string(out, d->status);
#define HB_RDMA_JSON(f, key)                                                   \
    fprintf(out, ", \"%s\": %llu", key, (unsigned long long)s->f);
    HB_RDMA_FIELDS(HB_RDMA_JSON)
#undef HB_RDMA_JSON
    json_failed(out, d);
}

/* With RDMA up on no rank, that is why every hot call stayed on MPI;
 * the subsystems' sections give the reasons otherwise. */
static const char *why_pmpi(const void *acc, unsigned op)
{
    const struct hb_rdma_report *d = acc;
    (void)op;
    return d->s.up ? NULL : "RDMA off";
}

/* clang-format off */
const struct hb_report_section hb_rdma_section = {
    .name = "rdma", .record_size = sizeof(struct hb_rdma_record),
    .acc_size = sizeof(struct hb_rdma_report), .merge = merge,
    .render_text = render_text, .render_json = render_json,
    .why_pmpi = why_pmpi,
};
/* clang-format on */
