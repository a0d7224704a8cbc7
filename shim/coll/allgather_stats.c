/* The Allgather section of the report (see allgather_stats.h). */
#include "allgather_stats.h"

#include <string.h>

_Static_assert(sizeof(struct hb_ag_summary) % 8 == 0,
               "records concatenate unpadded");

static const char *const comm_names[] = {HB_AG_COMM_REASONS(HB_REPORT_NAME)};
static const char *const algo_names[] = {HB_AG_ALGOS(HB_REPORT_NAME)};
static const char *const call_names[] = {HB_AG_CALL_REASONS(HB_REPORT_NAME)};

/* Calls left on MPI without a communicator state (MPI_THREAD_MULTIPLE). */
static uint64_t calls_left(const struct hb_ag_summary *a)
{
    uint64_t n = 0;
    for (int i = 0; i < HB_AGP_NREASONS; i++)
        n += a->calls_pmpi[i];
    return n;
}

static void render_text(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_ag_summary *a = acc;
    char b1[32];
    (void)r;
    if (!a->comms && !calls_left(a))
        return;
    fprintf(out,
            "allgather: %llu communicator(s) x ranks, %llu with hotbuf's RDMA; "
            "on PMPI: ",
            (unsigned long long)a->comms, (unsigned long long)a->comms_rdma);
    hb_report_text_counts(out, a->comms_pmpi, 0, HB_AGC_NREASONS, comm_names);
    fprintf(out, "\n  %llu call(s) x ranks on hotbuf's RDMA (%s received): ",
            (unsigned long long)a->calls_rdma,
            hb_report_bytes((double)a->bytes_rdma, b1, sizeof(b1)));
    hb_report_text_counts(out, a->algos, 0, HB_AG_NALGOS, algo_names);
    fprintf(out, "; left on MPI: ");
    hb_report_text_counts(out, a->calls_pmpi, 0, HB_AGP_NREASONS, call_names);
    fprintf(out, "\n  %llu write(s) in %llu RDMA operation(s)",
            (unsigned long long)a->writes, (unsigned long long)a->ops);
    if (a->imm_stray)
        fprintf(out, "; %llu stray immediate(s)",
                (unsigned long long)a->imm_stray);
    if (a->algos[HB_AG_MCAST])
        fprintf(out,
                "; multicast: %llu block(s) asked for again, %llu sent "
                "again, %llu stale packet(s)",
                (unsigned long long)a->mc_nacks,
                (unsigned long long)a->mc_repairs,
                (unsigned long long)a->mc_stale);
    fprintf(out, "\n");
}

static void render_json(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_ag_summary *a = acc;
    (void)r;
    hb_report_json_served(out, "comms", a->comms, a->comms_rdma, a->comms_pmpi,
                          HB_AGC_NREASONS, comm_names);
    fprintf(
        out, ", \"calls_rdma\": %llu, \"bytes_rdma\": %llu, \"algorithms\": ",
        (unsigned long long)a->calls_rdma, (unsigned long long)a->bytes_rdma);
    hb_report_json_counts(out, a->algos, 0, HB_AG_NALGOS, algo_names);
    fprintf(out, ", \"calls_pmpi\": ");
    hb_report_json_counts(out, a->calls_pmpi, 0, HB_AGP_NREASONS, call_names);
    fprintf(out,
            ", \"writes\": %llu, \"ops\": %llu, \"imm_stray\": %llu, "
            "\"mc_nacks\": %llu, \"mc_repairs\": %llu, \"mc_stale\": %llu}",
            (unsigned long long)a->writes, (unsigned long long)a->ops,
            (unsigned long long)a->imm_stray, (unsigned long long)a->mc_nacks,
            (unsigned long long)a->mc_repairs, (unsigned long long)a->mc_stale);
}

/* The commonest reason calls stayed on PMPI; "comm" (the communicator is
 * not served) is told apart by why communicators were not. */
static const char *why_pmpi(const void *acc, unsigned op)
{
    const struct hb_ag_summary *a = acc;
    if (op != HB_OP_ALLGATHER)
        return NULL;
    const char *why =
        hb_report_top_reason(a->calls_pmpi, 0, HB_AGP_NREASONS, call_names);
    if (!why || !strcmp(why, call_names[HB_AGP_COMM])) {
        const char *comm =
            hb_report_top_reason(a->comms_pmpi, 0, HB_AGC_NREASONS, comm_names);
        return comm ? comm : why;
    }
    return why;
}

/* clang-format off */
const struct hb_report_section hb_ag_section = {
    .name = "allgather", .record_size = sizeof(struct hb_ag_summary),
    .render_text = render_text, .render_json = render_json,
    .why_pmpi = why_pmpi,
};
/* clang-format on */
