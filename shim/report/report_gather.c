/* Gathers the report on rank 0 and writes it (see report_gather.h).  Each rank
 * sends one fixed-size summary and at most HOTBUF_REPORT_SITES site
 * records, so rank 0 receives a bounded amount per rank. */
#include "report_gather.h"
#include "coll/allgather.h"
#include "rma/rma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_local.h"
#include "core/runtime.h"

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "single";
    case MPI_THREAD_FUNNELED: return "funneled";
    case MPI_THREAD_SERIALIZED: return "serialized";
    case MPI_THREAD_MULTIPLE: return "multiple (tracking serialized by a lock)";
    default: return "unknown";
    }
}

/* First line of MPI_Get_library_version, e.g. "Open MPI v4.1.4, ...". */
static void library_name(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    if (PMPI_Get_library_version(v, &n) != MPI_SUCCESS)
        snprintf(v, sizeof(v), "unknown MPI");
    v[strcspn(v, "\n")] = 0;
    char *comma = strchr(v, ',');
    if (comma && !strncmp(v, "Open MPI", 8))
        *comma = 0;
    size_t o = 0; /* MPICH says "MPICH Version:\t4.0.2": one space per gap */
    for (const char *p = v; *p && o + 1 < len; p++)
        if (!(*p == ' ' || *p == '\t') || (o && buf[o - 1] != ' '))
            buf[o++] = *p == '\t' ? ' ' : *p;
    buf[o] = 0;
}

static void render(FILE *out, int json, const struct hb_report *r,
                   const struct hb_report_context *ctx)
{
    if (json)
        hb_report_render_json(out, r, ctx);
    else
        hb_report_render_text(out, r, ctx);
    fflush(out);
}

/* To PREFIX.txt / PREFIX.json, or rank 0's stderr. */
static void write_one(int json, const struct hb_report *r, const struct hb_report_context *ctx)
{
    const char *prefix = hb_rt.cfg.report_file;
    if (!prefix[0]) {
        render(stderr, json, r, ctx);
        return;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s.%s", prefix, json ? "json" : "txt");
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "hotbuf: cannot write %s; report follows on stderr\n", path);
        render(stderr, json, r, ctx);
        return;
    }
    render(f, json, r, ctx);
    fclose(f);
}

static void write_report(int mode, const struct hb_report *r)
{
    struct hb_report_context ctx = {
        .cfg = &hb_rt.cfg, .cost = &hb_rt.cost, .tp = &hb_rt.tracker.tp,
        .thresholds = hb_rt.tracker.thr, .thread_level = thread_level_name(hb_rt.thread_level),
        .nnotes = hb_rt.nnotes, .rdma_status = hb_rt.rdma.status,
    };
    char lib[256];
    library_name(lib, sizeof(lib));
    ctx.mpi_library = lib;
    memcpy(ctx.notes, hb_rt.notes, sizeof(ctx.notes));
    if (mode == HB_REPORT_TEXT || mode == HB_REPORT_BOTH)
        write_one(0, r, &ctx);
    if (mode == HB_REPORT_JSON || mode == HB_REPORT_BOTH)
        write_one(1, r, &ctx);
}

/* Rank 0 only: merge what was gathered and write it. */
static void merge_and_write(int mode, struct hb_rank_summary *all, char *site_bytes)
{
    const struct hb_site_summary **sites = malloc(hb_rt.size * sizeof(*sites));
    struct hb_report r;
    if (!sites) {
        fprintf(stderr, "hotbuf: out of memory for the report\n");
        return;
    }
    size_t off = 0;
    for (int i = 0; i < hb_rt.size; i++) {
        sites[i] = (const struct hb_site_summary *)(site_bytes + off);
        off += all[i].nsites * sizeof(struct hb_site_summary);
    }
    if (hb_report_merge(&r, all, hb_rt.size, sites, (size_t)hb_rt.cfg.report_sites,
                        (size_t)hb_rt.cfg.report_buffers) == 0)
        write_report(mode, &r);
    else
        fprintf(stderr, "hotbuf: out of memory for the report\n");
    hb_report_free(&r);
    free(sites);
}

void hb_report_at_finalize(void)
{
    const int root = 0, is_root = hb_rt.rank == root;
    int mode = hb_rt.cfg.report;
    /* Rank 0's setting decides for all: a rank with a different environment
     * must not leave the others waiting in a gather. */
    PMPI_Bcast(&mode, 1, MPI_INT, root, hb_rt.comm);
    if (mode == HB_REPORT_OFF)
        return;

    struct hb_rank_summary rs, *all = NULL;
    struct hb_site_summary *sites = NULL;
    if (!hb_rt.tracker_ok ||
        hb_report_local(&hb_rt.tracker, &hb_rt.cost, hb_rt.rank, (size_t)hb_rt.cfg.report_sites,
                        (size_t)hb_rt.cfg.report_buffers, &rs, &sites))
        memset(&rs, 0, sizeof(rs)); /* no tracker or no memory: this rank reports nothing */
    hb_rdma_summarize(&hb_rt.rdma, &rs.rdma);
    hb_rdma_failed_peers(&hb_rt.rdma, hb_rt.rank, &rs);
    hb_rma_summarize(&rs.rma);
    hb_ag_summarize(&rs.ag);

    int *counts = NULL, *displs = NULL;
    char *site_bytes = NULL;
    if (is_root) {
        all = calloc(hb_rt.size, sizeof(*all));
        counts = calloc(hb_rt.size, sizeof(int));
        displs = calloc(hb_rt.size, sizeof(int));
    }
    PMPI_Gather(&rs, sizeof(rs), MPI_BYTE, all, sizeof(rs), MPI_BYTE, root, hb_rt.comm);
    if (is_root) {
        size_t total = 0;
        for (int i = 0; i < hb_rt.size; i++) {
            counts[i] = (int)(all[i].nsites * sizeof(struct hb_site_summary));
            displs[i] = (int)total;
            total += counts[i];
        }
        site_bytes = malloc(total ? total : 1);
    }
    PMPI_Gatherv(sites, (int)(rs.nsites * sizeof(*sites)), MPI_BYTE, site_bytes, counts, displs,
                 MPI_BYTE, root, hb_rt.comm);
    if (is_root)
        merge_and_write(mode, all, site_bytes);
    free(site_bytes);
    free(displs);
    free(counts);
    free(all);
    free(sites);
}
