/* Gathers the report on rank 0 and writes it (see report_gather.h).  Each rank
 * sends one fixed-size summary and at most HOTBUF_REPORT_SITES site
 * records, so rank 0 receives a bounded amount per rank. */
#include "report_gather.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_local.h"

/* Rank 0's buffers, allocated before the first collective so that a
 * failure can still be agreed on. */
struct gather {
    size_t rsize;                     /* bytes of one rank's record */
    char *rec;                        /* this rank's */
    struct hb_site_summary *sites;    /* this rank's, rs->nsites of them */
    char *all;                        /* rank 0: every rank's record */
    int *counts, *displs;             /* rank 0: site bytes per rank */
    char *site_bytes;                 /* rank 0: every rank's sites */
};

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
static void write_one(const char *prefix, int json, const struct hb_report *r,
                      const struct hb_report_context *ctx)
{
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

static void write_report(const struct hb_report_input *in, int mode, const struct hb_report *r)
{
    struct hb_report_context ctx = {
        .cfg = in->cfg, .cost = in->cost,
        .tp = in->tp, .thresholds = in->thresholds,
        .thread_level = thread_level_name(in->thread_level),
        .nnotes = in->nnotes,
    };
    char lib[256];
    library_name(lib, sizeof(lib));
    ctx.mpi_library = lib;
    memcpy(ctx.notes, in->notes, (size_t)in->nnotes * sizeof(ctx.notes[0]));
    if (mode == HB_REPORT_TEXT || mode == HB_REPORT_BOTH)
        write_one(in->cfg->report_file, 0, r, &ctx);
    if (mode == HB_REPORT_JSON || mode == HB_REPORT_BOTH)
        write_one(in->cfg->report_file, 1, r, &ctx);
}

static const struct hb_rank_summary *header_of(const struct gather *g, int i)
{
    return (const struct hb_rank_summary *)(g->all + (size_t)i * g->rsize);
}

/* Rank 0 only: merge what was gathered and write it. */
static void merge_and_write(const struct hb_report_input *in, int mode, const struct gather *g)
{
    const struct hb_site_summary **sites = malloc(in->size * sizeof(*sites));
    struct hb_report r;
    if (!sites) {
        fprintf(stderr, "hotbuf: out of memory for the report\n");
        return;
    }
    size_t off = 0;
    for (int i = 0; i < in->size; i++) {
        sites[i] = (const struct hb_site_summary *)(g->site_bytes + off);
        off += header_of(g, i)->nsites * sizeof(struct hb_site_summary);
    }
    if (hb_report_merge(&r, &in->layout, g->all, in->size, sites,
                        (size_t)in->cfg->report_sites, (size_t)in->cfg->report_buffers) == 0)
        write_report(in, mode, &r);
    else
        fprintf(stderr, "hotbuf: out of memory for the report\n");
    hb_report_free(&r);
    free(sites);
}

/* This rank's record: the tracker's header, then the sections. */
static int local_record(const struct hb_report_input *in, struct gather *g)
{
    struct hb_rank_summary rs;
    if (!in->sections || !(g->rec = calloc(1, g->rsize)))
        return -1;
    if (!in->tracker ||
        hb_report_local(in->tracker, in->cost, in->rank, (size_t)in->cfg->report_sites,
                        (size_t)in->cfg->report_buffers, &rs, &g->sites))
        memset(&rs, 0, sizeof(rs)); /* no tracker or no memory: no tracker numbers */
    memcpy(g->rec, &rs, sizeof(rs));
    memcpy(g->rec + sizeof(rs), in->sections, g->rsize - sizeof(rs));
    return 0;
}

static int root_buffers(const struct hb_report_input *in, struct gather *g)
{
    g->all = calloc((size_t)in->size, g->rsize);
    g->counts = calloc((size_t)in->size, sizeof(int));
    g->displs = calloc((size_t)in->size, sizeof(int));
    return g->all && g->counts && g->displs ? 0 : -1;
}

/* Rank 0's setting decides for all: a rank with a different environment
 * must not leave the others waiting in a gather.  A rank out of memory
 * turns the report off everywhere, since all must take the same
 * collectives below. */
static int agree_mode(const struct hb_report_input *in, struct gather *g)
{
    int mode = in->cfg->report;
    PMPI_Bcast(&mode, 1, MPI_INT, 0, in->comm);
    if (mode == HB_REPORT_OFF)
        return mode;
    int failed = local_record(in, g) || (in->rank == 0 && root_buffers(in, g)), any = 1;
    PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, in->comm);
    if (!any)
        return mode;
    if (in->rank == 0)
        fprintf(stderr, "hotbuf: out of memory for the report\n");
    return HB_REPORT_OFF;
}

/* Rank 0: room for every rank's sites; all ranks learn whether it has it. */
static int site_room(const struct hb_report_input *in, struct gather *g)
{
    int ok = 1;
    if (in->rank == 0) {
        size_t total = 0;
        for (int i = 0; i < in->size; i++) {
            g->counts[i] = (int)(header_of(g, i)->nsites * sizeof(struct hb_site_summary));
            g->displs[i] = (int)total;
            total += (size_t)g->counts[i];
        }
        ok = (g->site_bytes = malloc(total ? total : 1)) != NULL;
        if (!ok)
            fprintf(stderr, "hotbuf: out of memory for the report\n");
    }
    PMPI_Bcast(&ok, 1, MPI_INT, 0, in->comm);
    return ok;
}

static void gather_free(struct gather *g)
{
    free(g->site_bytes);
    free(g->displs);
    free(g->counts);
    free(g->all);
    free(g->sites);
    free(g->rec);
}

void hb_report_at_finalize(const struct hb_report_input *in)
{
    struct gather g = {.rsize = hb_report_record_size(&in->layout)};
    int mode = agree_mode(in, &g);
    if (mode == HB_REPORT_OFF) {
        gather_free(&g);
        return;
    }
    const struct hb_rank_summary *rs = (const struct hb_rank_summary *)g.rec;
    PMPI_Gather(g.rec, (int)g.rsize, MPI_BYTE, g.all, (int)g.rsize, MPI_BYTE, 0, in->comm);
    if (site_room(in, &g)) {
        PMPI_Gatherv(g.sites, (int)(rs->nsites * sizeof(*g.sites)), MPI_BYTE, g.site_bytes,
                     g.counts, g.displs, MPI_BYTE, 0, in->comm);
        if (in->rank == 0)
            merge_and_write(in, mode, &g);
    }
    gather_free(&g);
}
