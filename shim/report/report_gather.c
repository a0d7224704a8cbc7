/* Gathers the report on rank 0 and writes it (see report_gather.h).  Each rank
 * sends one fixed-size summary and at most HOTBUF_REPORT_SITES site
 * records; rank 0 folds them in, a bounded batch of ranks at a time. */
#include "report_gather.h"
#include "report_html.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "report_local.h"

/* Rank 0 receives one message per rank, in batches of plan.batch ranks,
 * and folds each into the report as it comes (hb_report_merge_rank), so
 * its memory does not grow with the number of ranks and no MPI count is
 * larger than one rank's message.  A rank sends only once rank 0 has
 * posted the receive for it (a zero-byte token says so), so no rank's
 * message waits unexpected at rank 0 either.  Point-to-point on hotbuf's
 * private communicator, under a tag nothing else there uses. */
#define REPORT_TAG 0x4842

/* What the report is set to: rank 0's settings, for all. */
enum { SET_MODE, SET_SITES, SET_BUFFERS, SET_COUNT };

/* Everything allocated before the ranks agree, so that a failure can
 * still be agreed on. */
struct gather {
    int set[SET_COUNT];
    size_t rsize; /* bytes of one rank's record */
    struct hb_gather_plan plan;
    char *msg; /* this rank's record, then its sites */
    size_t msg_len;
    char *batch;      /* rank 0: one batch of messages */
    MPI_Request *req; /* rank 0: receives, then tokens */
    MPI_Status *st;
    struct hb_report r; /* rank 0: merged so far */
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

/* A job started by MPI_Comm_spawn has a rank 0 of its own that writes a
 * report of its own, with the same environment: its files get the process
 * id in their name (PREFIX.spawned-PID.json) instead of overwriting the
 * parent job's while it writes them.  Whether the job was spawned is known
 * from MPI_Init (in->spawned), not asked here: a child that disconnected
 * from its parent has no parent any more at MPI_Finalize, and both wrote
 * PREFIX.json at once (tests/rdma/defects.sh, spawn_merge, now and then). */
static void report_path(char *path, size_t len, const char *prefix,
                        const char *ext, int spawned)
{
    if (!spawned)
        snprintf(path, len, "%s.%s", prefix, ext);
    else
        snprintf(path, len, "%s.spawned-%ld.%s", prefix, (long)getpid(), ext);
}

/* To PREFIX.txt / PREFIX.json, or rank 0's stderr.  Returns 0 when the
 * file was written. */
static int write_one(const char *prefix, int spawned, int json,
                     const struct hb_report *r,
                     const struct hb_report_context *ctx)
{
    if (!prefix[0]) {
        render(stderr, json, r, ctx);
        return -1;
    }
    char path[4096];
    report_path(path, sizeof(path), prefix, json ? "json" : "txt", spawned);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "hotbuf: cannot write %s; report follows on stderr\n",
                path);
        render(stderr, json, r, ctx);
        return -1;
    }
    render(f, json, r, ctx);
    fclose(f);
    return 0;
}

/* HOTBUF_REPORT=html: the text as for "text", PREFIX.json and the page
 * drawn from it, PREFIX.html (PREFIX hotbuf-report when unset: a page
 * needs a file). */
static void write_html(const char *prefix, int spawned,
                       const struct hb_report *r,
                       const struct hb_report_context *ctx)
{
    write_one(prefix, spawned, 0, r, ctx);
    if (!prefix[0])
        prefix = "hotbuf-report";
    char json[4096], page[4096];
    if (write_one(prefix, spawned, 1, r, ctx))
        return;
    report_path(json, sizeof(json), prefix, "json", spawned);
    report_path(page, sizeof(page), prefix, "html", spawned);
    hb_report_html(json, page);
}

static void write_report(const struct hb_report_input *in, int mode,
                         const struct hb_report *r)
{
    struct hb_report_context ctx = {
        .cfg = in->cfg,
        .cost = in->cost,
        .tp = in->tp,
        .thresholds = in->thresholds,
        .thread_level = thread_level_name(in->thread_level),
        .nnotes = in->nnotes,
    };
    char lib[256];
    library_name(lib, sizeof(lib));
    ctx.mpi_library = lib;
    /* ctx.notes holds HB_MAX_NOTES */
    if (ctx.nnotes < 0 || ctx.nnotes > HB_MAX_NOTES)
        ctx.nnotes = ctx.nnotes < 0 ? 0 : HB_MAX_NOTES;
    if (ctx.nnotes)
        memcpy(ctx.notes, in->notes, (size_t)ctx.nnotes * sizeof(ctx.notes[0]));
    if (mode == HB_REPORT_HTML)
        write_html(in->cfg->report_file, in->spawned, r, &ctx);
    if (mode == HB_REPORT_TEXT || mode == HB_REPORT_BOTH)
        write_one(in->cfg->report_file, in->spawned, 0, r, &ctx);
    if (mode == HB_REPORT_JSON || mode == HB_REPORT_BOTH)
        write_one(in->cfg->report_file, in->spawned, 1, r, &ctx);
}

/* This rank's message: the tracker's header with nsites, the sections,
 * then the site records (at most plan.max_sites, the same on all ranks). */
static int local_message(const struct hb_report_input *in, struct gather *g)
{
    struct hb_rank_summary rs;
    struct hb_site_summary *sites = NULL;
    if (!in->sections)
        return -1;
    if (!in->tracker ||
        hb_report_local(in->tracker, in->cost, in->rank, g->plan.max_sites,
                        (size_t)g->set[SET_BUFFERS], &rs, &sites))
        memset(&rs, 0, sizeof(rs)); /* no tracker or no memory: no numbers */
    if (rs.nsites > g->plan.max_sites)
        rs.nsites = g->plan.max_sites;
    size_t site_bytes = rs.nsites * sizeof(*sites);
    g->msg_len = g->rsize + site_bytes;
    if ((g->msg = malloc(g->msg_len))) {
        memcpy(g->msg, &rs, sizeof(rs));
        memcpy(g->msg + sizeof(rs), in->sections, g->rsize - sizeof(rs));
        if (site_bytes)
            memcpy(g->msg + g->rsize, sites, site_bytes);
    }
    free(sites);
    return g->msg ? 0 : -1;
}

/* Rank 0: a batch's buffers and an empty report. */
static int root_setup(struct gather *g, const struct hb_report_input *in)
{
    size_t n = (size_t)g->plan.batch;
    g->batch = malloc(n * (size_t)g->plan.msg_count);
    g->req = malloc(2 * n * sizeof(*g->req));
    g->st = malloc(2 * n * sizeof(*g->st));
    int ok = g->batch && g->req && g->st;
    return hb_report_merge_begin(&g->r, &in->layout, g->plan.site_cap,
                                 (size_t)g->set[SET_BUFFERS]) ||
                   !ok
               ? -1
               : 0;
}

/* Rank 0's settings decide for all: a rank with a different environment
 * must neither skip the report nor send more sites than rank 0 has room
 * for.  A rank out of memory turns the report off everywhere, since all
 * must take the same steps below. */
static int agree(const struct hb_report_input *in, struct gather *g)
{
    g->set[SET_MODE] = in->cfg->report;
    g->set[SET_SITES] = in->cfg->report_sites;
    g->set[SET_BUFFERS] = in->cfg->report_buffers;
    PMPI_Bcast(g->set, SET_COUNT, MPI_INT, 0, in->comm);
    if (g->set[SET_MODE] == HB_REPORT_OFF)
        return HB_REPORT_OFF;
    int failed = hb_report_gather_plan(
                     in->size, g->rsize, sizeof(struct hb_site_summary),
                     (size_t)g->set[SET_SITES], HB_REPORT_BUDGET, &g->plan) ||
                 local_message(in, g) || (in->rank == 0 && root_setup(g, in));
    int any = 1;
    PMPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, in->comm);
    if (!any)
        return g->set[SET_MODE];
    if (in->rank == 0)
        fprintf(stderr, "hotbuf: out of memory for the report\n");
    return HB_REPORT_OFF;
}

/* Rank 0: one received message into the report.  Only what arrived is
 * read, whatever its header claims. */
static void fold_message(struct gather *g, char *buf, int bytes)
{
    struct hb_rank_summary *rs = (struct hb_rank_summary *)buf;
    size_t got = bytes > 0 ? (size_t)bytes : 0;
    if (got < g->rsize) { /* cannot happen: every rank sends a record */
        memset(buf + got, 0, g->rsize - got);
        got = g->rsize;
    }
    size_t n = (got - g->rsize) / sizeof(struct hb_site_summary);
    if (rs->nsites < n)
        n = rs->nsites;
    hb_report_merge_rank(&g->r, buf, (const void *)(buf + g->rsize), n);
}

/* Rank 0: ranks first .. first+k-1, in rank order. */
static void receive_batch(const struct hb_report_input *in, struct gather *g,
                          int first, int k)
{
    const int count = g->plan.msg_count;
    for (int j = 0; j < k; j++)
        PMPI_Irecv(g->batch + (size_t)j * (size_t)count, count, MPI_BYTE,
                   first + j, REPORT_TAG, in->comm, &g->req[j]);
    for (int j = 0; j < k; j++)
        PMPI_Isend(NULL, 0, MPI_BYTE, first + j, REPORT_TAG, in->comm,
                   &g->req[k + j]);
    PMPI_Waitall(2 * k, g->req, g->st);
    for (int j = 0; j < k; j++) {
        int bytes = 0;
        PMPI_Get_count(&g->st[j], MPI_BYTE, &bytes);
        fold_message(g, g->batch + (size_t)j * (size_t)count, bytes);
    }
}

static void root_collect(const struct hb_report_input *in, struct gather *g)
{
    fold_message(g, g->msg, (int)g->msg_len);
    for (int first = 1; first < in->size; first += g->plan.batch) {
        int k =
            in->size - first < g->plan.batch ? in->size - first : g->plan.batch;
        receive_batch(in, g, first, k);
    }
    hb_report_merge_end(&g->r, (size_t)g->set[SET_SITES]);
}

/* Any other rank: wait for rank 0's token, then send. */
static void send_to_root(const struct hb_report_input *in, struct gather *g)
{
    PMPI_Recv(NULL, 0, MPI_BYTE, 0, REPORT_TAG, in->comm, MPI_STATUS_IGNORE);
    PMPI_Send(g->msg, (int)g->msg_len, MPI_BYTE, 0, REPORT_TAG, in->comm);
}

static void gather_free(struct gather *g)
{
    hb_report_free(&g->r);
    free(g->st);
    free(g->req);
    free(g->batch);
    free(g->msg);
}

void hb_report_at_finalize(const struct hb_report_input *in)
{
    struct gather g = {.rsize = hb_report_record_size(&in->layout)};
    int mode = agree(in, &g);
    if (mode != HB_REPORT_OFF && in->rank == 0) {
        root_collect(in, &g);
        write_report(in, mode, &g.r);
    } else if (mode != HB_REPORT_OFF) {
        send_to_root(in, &g);
    }
    gather_free(&g);
}
