/* The progress section of the report (see progress_stats.h). */
#include "progress_stats.h"

#include <string.h>

_Static_assert(sizeof(struct hb_progress_record) % 8 == 0,
               "records concatenate unpadded");
_Static_assert(sizeof(struct hb_progress_report) % 8 == 0,
               "records concatenate unpadded");

static void copy_status(char *to, const char *from)
{
    memcpy(to, from, HB_PROGRESS_STATUS_LEN);
    to[HB_PROGRESS_STATUS_LEN - 1] = 0; /* never trust a received string */
}

static void merge(void *acc, const void *rec)
{
    struct hb_progress_report *r = acc;
    const struct hb_progress_record *p = rec;
    char status[HB_PROGRESS_STATUS_LEN];
    r->active += p->active;
    r->passes += p->passes;
    copy_status(status, p->status);
    if (!r->status[0])
        strcpy(r->status, status);
    else if (!r->other[0] && strcmp(r->status, status))
        strcpy(r->other, status);
}

static void render_text(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_progress_report *d = acc;
    fprintf(
        out,
        "progress inside MPI: %s; active on %llu of %d rank(s), %llu passes\n",
        d->status[0] ? d->status : "-", (unsigned long long)d->active,
        r->nranks, (unsigned long long)d->passes);
    if (d->other[0])
        fprintf(out, "  on another rank: %s\n", d->other);
}

static void render_json(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_progress_report *d = acc;
    (void)r;
    fprintf(out, "{\"status\": ");
    hb_report_json_string(out, d->status);
    fprintf(out, ", \"other_status\": ");
    hb_report_json_string(out, d->other);
    fprintf(out, ", \"ranks_active\": %llu, \"passes\": %llu}",
            (unsigned long long)d->active, (unsigned long long)d->passes);
}

/* clang-format off */
const struct hb_report_section hb_progress_section = {
    .name = "progress_hook", .record_size = sizeof(struct hb_progress_record),
    .acc_size = sizeof(struct hb_progress_report), .merge = merge,
    .render_text = render_text, .render_json = render_json,
};
/* clang-format on */
