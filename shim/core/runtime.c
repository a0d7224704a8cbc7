/* Life cycle: configuration and calibration after MPI_Init, the report
 * before MPI_Finalize (see runtime.h). */
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>

#include "note.h"
#include "progress.h"
#include "subsys.h"
#include "track/calibrate.h"
#include "transport/transport.h"
#include "util/copy.h"
#include "track_mpi.h"
#include "wrapcheck.h"

struct hb_runtime hb_rt = {.lock = ATOMIC_FLAG_INIT};
__thread int hb_nested __attribute__((tls_model("initial-exec")));

static void warn_config(const char *line, void *ctx)
{
    (void)ctx;
    hb_note("%s", line);
}

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

/* Rank 0 measures, everyone uses its numbers: thresholds are then the same
 * on every rank, and the other ranks do not pay for the measurement.  R is
 * measured on the transport's own protection domain, so on the device that
 * will register the buffers.  One line says what RDMA hotbuf has, and where
 * R came from when it is not measured. */
static void calibrate_and_connect(const struct hb_ctx *ctx)
{
    char why[128] = "";
    int up = hb_rdma_start(&hb_rt.rdma, &hb_rt.cfg, ctx->rank, ctx->size,
                           ctx->comm) == 0;
    if (ctx->rank == 0)
        hb_calibrate_pd(&hb_rt.cost, &hb_rt.cfg,
                        hb_rt.rdma.tr ? hb_transport_pd(hb_rt.rdma.tr) : NULL,
                        why, sizeof(why));
    PMPI_Bcast(&hb_rt.cost, sizeof(hb_rt.cost), MPI_BYTE, 0, ctx->comm);
    hb_copy_use((enum hb_copy_routine)hb_rt.cost.copy_routine);
    if (ctx->rank != 0)
        return;
    if (hb_rt.cost.reg_src != HB_COST_DEFAULT)
        hb_note("%s", hb_rt.rdma.status);
    else if (!up)
        hb_note("%s; registration cost R = default %.1f us + %.2f us/page",
                hb_rt.rdma.status, hb_rt.cost.reg_base_us,
                hb_rt.cost.reg_page_us);
    else
        hb_note("%s; registration cost R = default %.1f us + %.2f us/page (%s)",
                hb_rt.rdma.status, hb_rt.cost.reg_base_us,
                hb_rt.cost.reg_page_us, why);
}

static int start_tracker(void)
{
    const struct hb_config *c = &hb_rt.cfg;
    struct hb_table_params tp = {
        .bits = c->hash_bits,
        .max_entries = c->table_max,
        .adapt = c->adapt,
        .adapt_hot_pct = c->adapt_hot_pct,
        .adapt_chain = (uint32_t)c->adapt_chain,
    };
    struct hb_threshold_params thp = {
        .speculative = c->speculative,
        .min_size = c->min_size,
        .eager_limit = c->eager_limit,
        .fixed = (uint32_t)c->threshold,
    };
    return hb_tracker_init(&hb_rt.tracker, &tp, c->callsite_depth,
                           (uint32_t)c->max_sites, &thp, &hb_rt.cost);
}

/* Ranks launched with different environments must still take the same
 * collective decisions (see hb_config_shared_pack): one reduction over all
 * ranks, HOTBUF_ENABLE=0 ones included, since a rank that skipped hotbuf's
 * start-up collectives would leave the others waiting in them. */
static void agree_config(void)
{
    uint64_t mine[2 * HB_CONFIG_NSHARED], min[2 * HB_CONFIG_NSHARED];
    hb_config_shared_pack(&hb_rt.cfg, mine);
    if (PMPI_Allreduce(mine, min, 2 * HB_CONFIG_NSHARED, MPI_UINT64_T, MPI_MIN,
                       MPI_COMM_WORLD) != MPI_SUCCESS) {
        hb_rt.cfg.enable =
            0; /* MPI's errors are fatal by default: not reached in practice */
        return;
    }
    hb_config_shared_apply(&hb_rt.cfg, min, warn_config, NULL);
}

/* Once every callback is registered: from here on MPI's own progress runs
 * hotbuf's (a target sitting in MPI_Barrier answers connection requests).
 * Its absence is worth a line; being off by choice is in the report. */
static void start_progress_hook(const struct hb_ctx *ctx)
{
    if (hb_progress_hook_install(ctx->comm, ctx->thread_level) < 0 &&
        ctx->rank == 0)
        hb_note("no progress inside MPI (%s): a rank waiting in MPI does not "
                "answer hotbuf's connection requests",
                hb_progress_hook_status());
}

/* The runtime's own start-up, then the subsystems'.  Every rank starts the
 * subsystems, also one whose tracker failed: their start-up is collective. */
static void start(struct hb_ctx *ctx)
{
    hb_rdma_prepare_fork(&hb_rt.rdma); /* before anything registers memory */
    hb_progress_init(ctx->comm);
    calibrate_and_connect(ctx);
    hb_datatypes_init();
    if (start_tracker())
        hb_note(
            "cannot allocate the reuse table (2^%d buckets); hotbuf passes everything through",
            hb_rt.cfg.hash_bits);
    else
        ctx->tracker = &hb_rt.tracker;
    hb_subsys_start_all(ctx);
    start_progress_hook(ctx);
    if (ctx->tracker)
        hb_rt.tracking = hb_rt.lock_needed ? HB_TRACK_LOCKED : HB_TRACK_FAST;
}

void hb_runtime_after_init(int provided)
{
    struct hb_ctx *ctx = &hb_rt.ctx;
    if (hb_rt.init_done)
        return;
    hb_rt.init_done = 1;
    hb_nested++;
    *ctx = (struct hb_ctx){.cfg = &hb_rt.cfg,
                           .comm = MPI_COMM_NULL,
                           .thread_level = provided,
                           .cost = &hb_rt.cost,
                           .rdma = &hb_rt.rdma};
    PMPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &ctx->size);
    /* Asked now: a child may disconnect from its parent before
     * MPI_Finalize, and MPI_Comm_get_parent then returns MPI_COMM_NULL. */
    MPI_Comm parent = MPI_COMM_NULL;
    PMPI_Comm_get_parent(&parent);
    ctx->spawned = parent != MPI_COMM_NULL;
    hb_note_set_rank(ctx->rank);
    hb_config_load(&hb_rt.cfg, env_lookup, warn_config, NULL);
    agree_config();
    if (!hb_rt.cfg.enable)
        goto out;
    if (hb_rt.cfg.p2p)
        hb_wrapcheck_note();
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &ctx->comm) != MPI_SUCCESS) {
        hb_note(
            "cannot duplicate MPI_COMM_WORLD; hotbuf passes everything through");
        goto out;
    }
    /* From here on every rank takes part in the collectives at finalize,
     * whatever fails locally below, so that no rank waits for another. */
    hb_rt.collective = 1;
    hb_rt.lock_needed = ctx->lock_needed = provided == MPI_THREAD_MULTIPLE;
    start(ctx);
out:
    hb_nested--;
}

void hb_runtime_before_finalize(void)
{
    if (!hb_rt.init_done || hb_rt.finalize_done)
        return;
    hb_rt.finalize_done = 1;
    if (!hb_rt.collective)
        return;
    struct hb_ctx *ctx = &hb_rt.ctx;
    hb_rt.tracking = HB_TRACK_OFF;
    if (ctx->tracker)
        hb_tracker_fold(
            ctx->tracker); /* the pending calls, before the report */
    hb_nested++;
    hb_progress_hook_remove(); /* hotbuf's state is torn down from here */
    hb_subsys_report(ctx);
    hb_subsys_stop_all(ctx);
    hb_rdma_stop(&hb_rt.rdma, ctx->comm);
    if (ctx->tracker)
        hb_tracker_destroy(ctx->tracker);
    ctx->tracker = NULL;
    hb_progress_init(MPI_COMM_NULL);
    PMPI_Comm_free(&ctx->comm);
    hb_nested--;
}

void hb_runtime_note_abort(void)
{
    hb_rt.aborted = 1;
}

/* A job that exits without MPI_Finalize (MPI_Abort, exit(1) on an error
 * path) gets no report: gathering one would need the other ranks.  Say so
 * instead of staying silent; never call MPI here. */
__attribute__((destructor)) static void hb_runtime_at_exit(void)
{
    if (hb_rt.tracking && !hb_rt.finalize_done && hb_rt.ctx.rank == 0)
        fprintf(stderr, "hotbuf: %s; no buffer-reuse report\n",
                hb_rt.aborted ? "MPI_Abort was called"
                              : "MPI_Finalize was not called");
}
