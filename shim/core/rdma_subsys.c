/* Core's own entry in the subsystem list (see subsys_list.h): the RDMA
 * side is brought up by the runtime itself; this entry registers the
 * transport's progress (first, so every subsystem finds it) and gives the
 * report its RDMA section. */
#include "progress.h"
#include "subsys.h"
#include "transport/transport.h"

static void transport_progress(void *tr)
{
    hb_transport_progress(tr);
}

static int start(const struct hb_ctx *ctx)
{
    if (!ctx->rdma->tr)
        return 0;
    return hb_progress_add(transport_progress, ctx->rdma->tr);
}

static void stop(const struct hb_ctx *ctx)
{
    if (ctx->rdma->tr)
        hb_progress_remove(transport_progress, ctx->rdma->tr);
}

static void summarize(const struct hb_ctx *ctx, void *rec)
{
    hb_rdma_summarize(ctx->rdma, ctx->rank, rec);
}

/* clang-format off */
const struct hb_subsys hb_rdma_subsys = {
    .name = "rdma", .start = start, .stop = stop, .section = &hb_rdma_section,
    .summarize = summarize,
};
/* clang-format on */
