/* Advice per call site (see report_advice.h).  The rules go from what
 * rules a gain out (no data, not tracked, used once, size out of range)
 * to what the figures say about the gain (hot or not, rerouted or not),
 * so that each site gets the one reason that matters most. */
#include "report_advice.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void hb_advice_ctx_init(struct hb_advice_ctx *a, const struct hb_report *r,
                        const struct hb_report_context *ctx)
{
    memset(a, 0, sizeof(*a));
    a->thresholds = ctx->thresholds;
    a->tp = ctx->tp;
    /* A section's reason for a class wins over an earlier one's "RDMA
     * off" only when it is more specific: the last nonzero answer counts,
     * and the RDMA section comes first in the layout. */
    for (size_t k = 0; k < r->layout.n; k++) {
        const struct hb_report_section *sec = r->layout.sec[k];
        for (unsigned op = 0; sec->why_pmpi && op < HB_OP_COUNT; op++) {
            const char *why = sec->why_pmpi(r->acc[k], op);
            if (why)
                a->why_pmpi[op] = why;
        }
    }
}

/* The payload per call that named a buffer, rounded. */
static uint64_t typical_size(const struct hb_site_summary *s, uint64_t tracked)
{
    return (s->bytes + tracked / 2) / tracked;
}

static double share(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void advise_hot(const struct hb_site_summary *s,
                       const struct hb_advice_ctx *a, uint64_t tracked,
                       char *buf, size_t len)
{
    char t[32];
    const char *saving = hb_report_time(s->saving_ns, t, sizeof(t));
    const char *why = a->why_pmpi[s->op];
    uint64_t warmup = s->reuse_calls - s->hot_calls;
    if (s->saving_ns < 0)
        snprintf(buf, len,
                 "hot, but registrations cost more than the copies saved "
                 "(model %s): keep buffers alive longer",
                 saving);
    else if (s->rerouted_calls)
        snprintf(buf, len, "hot, rerouted (%.0f%% of calls): model saving %s",
                 share(s->rerouted_calls, s->calls), saving);
    else if (why && !strcmp(why, "intranode"))
        snprintf(buf, len,
                 "hot, kept on MPI: same node, MPI's shared memory is faster "
                 "(model saving %s across nodes)",
                 saving);
    else if (s->op == HB_OP_SEND && !s->persistent && warmup > s->hot_calls)
        snprintf(buf, len,
                 "hot after a long warm-up: a persistent request "
                 "(MPI_Send_init) would make this hot from the first call");
    else if (why)
        snprintf(buf, len, "hot, not rerouted (%s): model saving %s", why,
                 saving);
    else
        snprintf(buf, len,
                 "hot, not rerouted (this class is tracked only): model "
                 "saving %s",
                 saving);
    (void)tracked;
}

/* No hot call: why not, from the sizes and the reuse. */
static void advise_cold(const struct hb_site_summary *s,
                        const struct hb_advice_ctx *a, uint64_t tracked,
                        char *buf, size_t len)
{
    char b[32];
    uint64_t size = typical_size(s, tracked);
    uint32_t thr = hb_threshold_for(a->thresholds, a->tp, size);
    const char *sz = hb_report_bytes((double)size, b, sizeof(b));
    if (s->max_reuse <= 1)
        snprintf(buf, len, "buffers used once: nothing to gain");
    else if (size > a->tp->eager_limit)
        snprintf(buf, len,
                 "reused, but %s is above the eager limit: MPI sends it "
                 "zero-copy already",
                 sz);
    else if (size < a->tp->min_size)
        snprintf(buf, len,
                 "reused, but %s is below HOTBUF_MIN_SIZE: a lookup costs "
                 "more than the copy",
                 sz);
    else if (thr == HB_NEVER)
        snprintf(buf, len,
                 "reused, but at %s registering never pays off (the copy "
                 "is cheaper than the lookup)",
                 sz);
    else if (s->max_reuse >= thr)
        snprintf(buf, len,
                 "first uses of buffers that become hot at other sites "
                 "(up to %" PRIu64 " uses in all): see those sites",
                 s->max_reuse);
    else if (s->persistent)
        snprintf(buf, len,
                 "persistent request, reused (up to %" PRIu64 " uses), but "
                 "below the threshold at this size (%u at %s)",
                 s->max_reuse, thr, sz);
    else if (s->op == HB_OP_SEND)
        snprintf(buf, len,
                 "reused (up to %" PRIu64 " uses), below the threshold (%u at "
                 "%s): a persistent request would make this hot from the "
                 "first call",
                 s->max_reuse, thr, sz);
    else
        snprintf(buf, len,
                 "reused (up to %" PRIu64 " uses), but below the threshold at "
                 "this size (%u at %s)",
                 s->max_reuse, thr, sz);
}

void hb_site_advice(const struct hb_site_summary *s,
                    const struct hb_advice_ctx *a, char *buf, size_t len)
{
    uint64_t tracked = s->calls - s->empty_calls;
    if (!strcmp(s->name, HB_SITE_OTHER_NAME))
        snprintf(buf, len,
                 "calls of sites past HOTBUF_MAX_SITES: raise it to tell "
                 "them apart");
    else if (!tracked)
        snprintf(buf, len,
                 "moves no data (zero bytes or MPI_PROC_NULL): nothing to "
                 "gain");
    else if (s->untracked_calls == tracked)
        snprintf(buf, len,
                 "not tracked: the reuse table had stopped growing (see "
                 "the table's line)");
    else if (s->hot_calls)
        advise_hot(s, a, tracked, buf, len);
    else
        advise_cold(s, a, tracked, buf, len);
}
