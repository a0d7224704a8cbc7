/* Starting, stopping and reporting every subsystem (see subsys.h). */
#include "subsys.h"

#include <stdlib.h>
#include <string.h>

#include "note.h"
#include "report/report_gather.h"
#include "subsys_list.h"

#define HB_SUBSYS_DECLARE(s) extern const struct hb_subsys s;
HB_SUBSYS_FOR_EACH(HB_SUBSYS_DECLARE)

#define HB_SUBSYS_ENTRY(s) &s,
static const struct hb_subsys *const subsystems[] = {
    HB_SUBSYS_FOR_EACH(HB_SUBSYS_ENTRY)};
#define HB_NSUBSYS (sizeof(subsystems) / sizeof(subsystems[0]))

_Static_assert(HB_NSUBSYS <= HB_REPORT_MAX_SECTIONS,
               "one report section per subsystem at most");

int hb_subsys_agree(const struct hb_ctx *ctx, int off, int able, int *any_able)
{
    int local[2] = {off, able}, all[2] = {1, 0};
    if (PMPI_Allreduce(local, all, 2, MPI_INT, MPI_MAX, ctx->comm) !=
        MPI_SUCCESS)
        all[0] = 1, all[1] = 0;
    if (any_able)
        *any_able = all[1];
    return !all[0] && all[1];
}

void hb_subsys_start_all(const struct hb_ctx *ctx)
{
    for (size_t i = 0; i < HB_NSUBSYS; i++)
        if (subsystems[i]->start)
            subsystems[i]->start(ctx);
}

void hb_subsys_stop_all(const struct hb_ctx *ctx)
{
    for (size_t i = HB_NSUBSYS; i-- > 0;)
        if (subsystems[i]->stop)
            subsystems[i]->stop(ctx);
}

/* The sections in list order, and the bytes of their records. */
static size_t sections(const struct hb_report_section **sec)
{
    size_t n = 0;
    for (size_t i = 0; i < HB_NSUBSYS; i++)
        if (subsystems[i]->section)
            sec[n++] = subsystems[i]->section;
    return n;
}

/* This rank's section records, concatenated; NULL when out of memory. */
static char *summarize_all(const struct hb_ctx *ctx, size_t *len)
{
    size_t total = 0, off = 0;
    for (size_t i = 0; i < HB_NSUBSYS; i++)
        if (subsystems[i]->section)
            total += subsystems[i]->section->record_size;
    char *rec = calloc(1, total ? total : 1);
    for (size_t i = 0; rec && i < HB_NSUBSYS; i++) {
        const struct hb_subsys *s = subsystems[i];
        if (!s->section)
            continue;
        if (s->summarize)
            s->summarize(ctx, rec + off);
        else if (s->counters)
            memcpy(rec + off, s->counters, s->section->record_size);
        off += s->section->record_size;
    }
    *len = total;
    return rec;
}

/* Without a tracker nothing becomes hot: the report says so. */
static const struct hb_threshold_params no_tp;
static const uint32_t no_thr[HB_SIZE_CLASSES];

void hb_subsys_report(const struct hb_ctx *ctx)
{
    const struct hb_report_section *sec[HB_NSUBSYS];
    size_t len;
    char *rec = summarize_all(ctx, &len);
    struct hb_report_input in = {
        .comm = ctx->comm,
        .rank = ctx->rank,
        .size = ctx->size,
        .thread_level = ctx->thread_level,
        .spawned = ctx->spawned,
        .cfg = ctx->cfg,
        .cost = ctx->cost,
        .tracker = ctx->tracker,
        .tp = &no_tp,
        .thresholds = no_thr,
        .layout = {sec, sections(sec)},
    };
    if (ctx->tracker) {
        in.tp = &ctx->tracker->tp;
        in.thresholds = ctx->tracker->thr;
    }
    in.nnotes = hb_notes(&in.notes);
    in.sections = rec; /* NULL (no memory): the report is agreed off */
    hb_report_at_finalize(&in);
    free(rec);
}
