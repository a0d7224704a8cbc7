/* The MPI_Alloc_mem section of the report (see mem_stats.h). */
#include "mem_stats.h"

_Static_assert(sizeof(struct hb_mem_record) % 8 == 0,
               "records concatenate unpadded");

static const char *const pass_name[] = {HB_MEM_PASS_REASONS(HB_REPORT_NAME)};

static uint64_t passed_total(const struct hb_mem_record *m)
{
    uint64_t n = 0;
    for (int i = 0; i < HB_MEM_PASS_COUNT; i++)
        n += m->passed[i];
    return n;
}

static void render_text(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_mem_record *m = acc;
    (void)r;
    if (!m->served && !passed_total(m) && !m->freed_mpi)
        return; /* the application never called them */
    fprintf(out,
            "MPI_Alloc_mem: %llu served from hotbuf's registered chunks "
            "(%llu B; %llu chunk(s), %llu B registered once; peak in use "
            "%llu B), %llu freed; %llu passed to MPI",
            (unsigned long long)m->served, (unsigned long long)m->served_bytes,
            (unsigned long long)m->chunks, (unsigned long long)m->chunk_bytes,
            (unsigned long long)m->peak_in_use, (unsigned long long)m->freed,
            (unsigned long long)passed_total(m));
    int shown = 0;
    for (int i = 0; i < HB_MEM_PASS_COUNT; i++)
        if (m->passed[i])
            fprintf(out, "%s%s %llu", shown++ ? ", " : " (", pass_name[i],
                    (unsigned long long)m->passed[i]);
    fprintf(out, "%s; %llu MPI_Free_mem passed to MPI\n", shown ? ")" : "",
            (unsigned long long)m->freed_mpi);
}

static void render_json(FILE *out, const void *acc, const struct hb_report *r)
{
    const struct hb_mem_record *m = acc;
    (void)r;
    fprintf(out,
            "{\"served\": %llu, \"served_bytes\": %llu, \"freed\": %llu, "
            "\"freed_by_mpi\": %llu, \"chunks\": %llu, \"chunk_bytes\": %llu, "
            "\"peak_in_use\": %llu, \"passed\": {",
            (unsigned long long)m->served, (unsigned long long)m->served_bytes,
            (unsigned long long)m->freed, (unsigned long long)m->freed_mpi,
            (unsigned long long)m->chunks, (unsigned long long)m->chunk_bytes,
            (unsigned long long)m->peak_in_use);
    for (int i = 0; i < HB_MEM_PASS_COUNT; i++)
        fprintf(out, "%s\"%s\": %llu", i ? ", " : "", pass_name[i],
                (unsigned long long)m->passed[i]);
    fprintf(out, "}}");
}

/* clang-format off */
const struct hb_report_section hb_mem_section = {
    .name = "alloc_mem", .record_size = sizeof(struct hb_mem_record),
    .render_text = render_text, .render_json = render_json,
};
/* clang-format on */
