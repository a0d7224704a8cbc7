/* The one-sided section of the report (see rma_stats.h). */
#include "rma_stats.h"

_Static_assert(sizeof(struct hb_rma_summary) % 8 == 0,
               "records concatenate unpadded");

static const char *const win_names[] = {HB_RMA_WIN_REASONS(HB_REPORT_NAME)};
static const char *const op_names[] = {HB_RMA_OP_REASONS(HB_REPORT_NAME)};

static void render_text(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_rma_summary *m = acc;
    char b1[32];
    (void)r;
    if (!m->windows)
        return;
    fprintf(
        out,
        "one-sided: %llu window(s) x ranks, %llu with hotbuf's RDMA; on PMPI: ",
        (unsigned long long)m->windows, (unsigned long long)m->windows_rdma);
    hb_report_text_counts(out, m->windows_pmpi, 0, HB_WIN_NREASONS, win_names);
    fprintf(
        out,
        "\n  %llu put/get moved by hotbuf's RDMA (%s); hot ones left on PMPI: ",
        (unsigned long long)m->ops_rdma,
        hb_report_bytes((double)m->bytes_rdma, b1, sizeof(b1)));
    hb_report_text_counts(out, m->ops_pmpi, HB_RMA_DATATYPE, HB_RMA_NREASONS,
                          op_names);
    fprintf(out, "\n");
    if (m->reissued)
        fprintf(out,
                "  %llu RDMA operation(s) redone on PMPI after a failure\n",
                (unsigned long long)m->reissued);
    if (m->republished)
        fprintf(
            out,
            "  %llu window registration(s) renewed after the memory changed\n",
            (unsigned long long)m->republished);
}

static void render_json(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_rma_summary *m = acc;
    (void)r;
    hb_report_json_served(out, "windows", m->windows, m->windows_rdma,
                          m->windows_pmpi, HB_WIN_NREASONS, win_names);
    fprintf(out,
            ", \"ops_rdma\": %llu, \"bytes_rdma\": %llu, \"reissued\": %llu, "
            "\"pscw_tokens\": %llu, \"republished\": %llu, \"ops_pmpi\": ",
            (unsigned long long)m->ops_rdma, (unsigned long long)m->bytes_rdma,
            (unsigned long long)m->reissued, (unsigned long long)m->pscw_tokens,
            (unsigned long long)m->republished);
    hb_report_json_counts(out, m->ops_pmpi, HB_RMA_DATATYPE, HB_RMA_NREASONS,
                          op_names);
    fprintf(out, "}");
}

/* Put and Get: the commonest reason a hot operation stayed on PMPI, else
 * why windows did (a window on PMPI keeps all its operations there). */
static const char *why_pmpi(const void *acc, unsigned op)
{
    const struct hb_rma_summary *m = acc;
    if (op != HB_OP_PUT && op != HB_OP_GET)
        return NULL;
    const char *why = hb_report_top_reason(m->ops_pmpi, HB_RMA_DATATYPE,
                                           HB_RMA_NREASONS, op_names);
    return why ? why
               : hb_report_top_reason(m->windows_pmpi, 0, HB_WIN_NREASONS,
                                      win_names);
}

/* clang-format off */
const struct hb_report_section hb_rma_section = {
    .name = "rma", .record_size = sizeof(struct hb_rma_summary),
    .render_text = render_text, .render_json = render_json,
    .why_pmpi = why_pmpi,
};
/* clang-format on */
