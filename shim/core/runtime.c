/* Life cycle: configuration and calibration after MPI_Init, the report
 * before MPI_Finalize (see runtime.h). */
#include "runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "track/calibrate.h"
#include "report/report_gather.h"
#include "coll/allgather.h"
#include "rma/rma.h"
#include "track_mpi.h"

struct hb_runtime hb_rt = {.lock = ATOMIC_FLAG_INIT};
__thread int hb_nested __attribute__((tls_model("initial-exec")));

void hb_note(const char *fmt, ...)
{
    char line[HB_NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (hb_rt.rank == 0)
        fprintf(stderr, "hotbuf: %s\n", line);
    if (hb_rt.nnotes < HB_MAX_NOTES)
        memcpy(hb_rt.notes[hb_rt.nnotes++], line, sizeof(line));
}

void hb_mpi_progress(void *ctx)
{
    int flag;
    (void)ctx;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, hb_rt.comm, &flag, MPI_STATUS_IGNORE);
    /* With more ranks than cores (oversubscribed nodes, the test guest) the
     * rank being waited for needs this CPU; alone on a core it costs
     * well under a microsecond. */
    sched_yield();
}

uint32_t hb_host_hash(void)
{
    char name[256] = "";
    uint32_t h = 2166136261u; /* FNV-1a */
    gethostname(name, sizeof(name) - 1);
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return h;
}

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
 * on every rank, and the other ranks do not pay for the measurement.  One
 * line says what RDMA hotbuf has, and where R came from when it is not
 * measured. */
static void calibrate_and_connect(void)
{
    char why[128] = "";
    if (hb_rt.rank == 0)
        hb_calibrate(&hb_rt.cost, &hb_rt.cfg, why, sizeof(why));
    PMPI_Bcast(&hb_rt.cost, sizeof(hb_rt.cost), MPI_BYTE, 0, hb_rt.comm);
    int up = hb_rdma_start(&hb_rt.rdma, &hb_rt.cfg, hb_rt.rank, hb_rt.size, hb_rt.comm) == 0;
    hb_rma_start();
    hb_ag_start();
    if (hb_rt.rank != 0)
        return;
    if (hb_rt.cost.reg_src != HB_COST_DEFAULT)
        hb_note("%s", hb_rt.rdma.status);
    else if (!up)
        hb_note("%s; registration cost R = default %.1f us + %.2f us/page", hb_rt.rdma.status,
                hb_rt.cost.reg_base_us, hb_rt.cost.reg_page_us);
    else
        hb_note("%s; registration cost R = default %.1f us + %.2f us/page (%s)",
                hb_rt.rdma.status, hb_rt.cost.reg_base_us, hb_rt.cost.reg_page_us, why);
}

static int start_tracker(void)
{
    const struct hb_config *c = &hb_rt.cfg;
    struct hb_table_params tp = {
        .bits = c->hash_bits, .max_entries = c->table_max, .adapt = c->adapt,
        .adapt_hot_pct = c->adapt_hot_pct, .adapt_chain = (uint32_t)c->adapt_chain,
    };
    struct hb_threshold_params thp = {
        .speculative = c->speculative, .min_size = c->min_size,
        .eager_limit = c->eager_limit, .fixed = (uint32_t)c->threshold,
    };
    return hb_tracker_init(&hb_rt.tracker, &tp, c->callsite_depth, (uint32_t)c->max_sites, &thp,
                           &hb_rt.cost);
}

/* Ranks launched with different environments must still take the same
 * collective decisions (see hb_config_shared_pack): one reduction over all
 * ranks, HOTBUF_ENABLE=0 ones included, since a rank that skipped hotbuf's
 * start-up collectives would leave the others waiting in them. */
static void agree_config(void)
{
    uint64_t mine[2 * HB_CONFIG_NSHARED], min[2 * HB_CONFIG_NSHARED];
    hb_config_shared_pack(&hb_rt.cfg, mine);
    if (PMPI_Allreduce(mine, min, 2 * HB_CONFIG_NSHARED, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD) !=
        MPI_SUCCESS) {
        hb_rt.cfg.enable = 0; /* MPI's errors are fatal by default: not reached in practice */
        return;
    }
    hb_config_shared_apply(&hb_rt.cfg, min, warn_config, NULL);
}

void hb_runtime_after_init(int provided)
{
    if (hb_rt.init_done)
        return;
    hb_rt.init_done = 1;
    hb_nested++;
    PMPI_Comm_rank(MPI_COMM_WORLD, &hb_rt.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &hb_rt.size);
    hb_rt.thread_level = provided;
    hb_config_load(&hb_rt.cfg, env_lookup, warn_config, NULL);
    agree_config();
    if (!hb_rt.cfg.enable)
        goto out;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &hb_rt.comm) != MPI_SUCCESS) {
        hb_note("cannot duplicate MPI_COMM_WORLD; hotbuf passes everything through");
        goto out;
    }
    /* From here on every rank takes part in the collectives at finalize,
     * whatever fails locally below, so that no rank waits for another. */
    hb_rt.collective = 1;
    hb_rt.lock_needed = provided == MPI_THREAD_MULTIPLE;
    hb_rdma_prepare_fork(&hb_rt.rdma); /* before anything registers memory */
    calibrate_and_connect();
    hb_datatypes_init();
    if (start_tracker()) {
        hb_note("cannot allocate the reuse table (2^%d buckets); hotbuf passes everything through",
                hb_rt.cfg.hash_bits);
        goto out;
    }
    hb_rt.tracker_ok = 1;
    hb_rt.tracking = hb_rt.lock_needed ? HB_TRACK_LOCKED : HB_TRACK_FAST;
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
    hb_rt.tracking = HB_TRACK_OFF;
    hb_nested++;
    hb_report_at_finalize();
    hb_rma_stop();
    hb_ag_stop();
    hb_rdma_stop(&hb_rt.rdma, hb_rt.comm);
    hb_persist_clear();
    if (hb_rt.tracker_ok)
        hb_tracker_destroy(&hb_rt.tracker);
    hb_rt.tracker_ok = 0;
    PMPI_Comm_free(&hb_rt.comm);
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
    if (hb_rt.tracking && !hb_rt.finalize_done && hb_rt.rank == 0)
        fprintf(stderr, "hotbuf: %s; no buffer-reuse report\n",
                hb_rt.aborted ? "MPI_Abort was called" : "MPI_Finalize was not called");
}
