/* Step 4 of the report: text for people, JSON for tools (schema in the
 * README).  Pure functions of the merged report and its context. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report.h"
#include "report_advice.h"
#include "track/sizehist.h"
#include "util/copy.h"

const char *hb_report_bytes(double v, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (v >= 1024 && u < 5)
        v /= 1024, u++;
    if (u == 0)
        snprintf(buf, len, "%.0f B", v);
    else
        snprintf(buf, len, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

/* A message size, exact: in the largest unit that divides it ("32 KiB"),
 * else in bytes ("65539 B"), so NetPIPE's 65533, 65536 and 65539 stay
 * three sizes. */
static const char *exact_size(uint64_t v, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v && v % 1024 == 0 && u < 4)
        v /= 1024, u++;
    snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
    return buf;
}

const char *hb_report_time(double ns, char *buf, size_t len)
{
    double a = ns < 0 ? -ns : ns;
    if (a >= 1e9)
        snprintf(buf, len, "%.2f s", ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.0f ns", ns);
    return buf;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void hb_report_text_counts(FILE *out, const uint64_t *counts, unsigned first,
                           unsigned count, const char *const *names)
{
    int any = 0;
    for (unsigned i = first; i < count; i++)
        if (counts[i])
            fprintf(out, "%s%s %llu", any++ ? ", " : "", names[i],
                    (unsigned long long)counts[i]);
    if (!any)
        fprintf(out, "none");
}

const char *hb_report_top_reason(const uint64_t *counts, unsigned first,
                                 unsigned count, const char *const *names)
{
    const char *top = NULL;
    uint64_t most = 0;
    for (unsigned i = first; i < count; i++)
        if (counts[i] > most)
            most = counts[i], top = names[i];
    return top;
}

void hb_report_json_counts(FILE *out, const uint64_t *counts, unsigned first,
                           unsigned count, const char *const *names)
{
    fprintf(out, "{");
    for (unsigned i = first; i < count; i++)
        fprintf(out, "%s\"%s\": %llu", i > first ? ", " : "", names[i],
                (unsigned long long)counts[i]);
    fprintf(out, "}");
}

void hb_report_json_served(FILE *out, const char *what, uint64_t total,
                           uint64_t rdma, const uint64_t *pmpi, unsigned count,
                           const char *const *names)
{
    fprintf(out, "{\"%s\": %llu, \"%s_rdma\": %llu, \"%s_pmpi\": ", what,
            (unsigned long long)total, what, (unsigned long long)rdma, what);
    hb_report_json_counts(out, pmpi, 0, count, names);
}

static void text_classes(FILE *out, const struct hb_report *r)
{
    char b1[32], b2[32];
    fprintf(out, "%-9s %10s %10s %8s %7s %22s %22s %6s %8s %12s\n", "op",
            "calls", "bytes", "buffers", "reuse%", "max reuse/rank (avg)",
            "freq. size/rank (avg)", "hot%", "hot bufs", "est. saving");
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        const struct hb_class_report *c = &r->cls[op];
        char reuse[40] = "-", fsize[40] = "-";
        if (c->ranks)
            snprintf(reuse, sizeof(reuse), "%" PRIu64 "-%" PRIu64 " (%.0f)",
                     c->max_reuse_min, c->max_reuse_max, c->max_reuse_avg);
        if (c->sum.top_size_calls[0])
            snprintf(fsize, sizeof(fsize), "%" PRIu64 "-%" PRIu64 " (%.0f)",
                     c->freq_size_min, c->freq_size_max, c->freq_size_avg);
        fprintf(out,
                "%-9s %10llu %10s %8llu %6.1f%% %22s %22s %5.1f%% %8llu %12s\n",
                hb_op_name(op), (unsigned long long)c->sum.calls,
                hb_report_bytes((double)c->sum.bytes, b1, sizeof(b1)),
                (unsigned long long)c->sum.buffers, hb_reuse_pct(&c->sum),
                reuse, fsize, pct(c->sum.hot_calls, c->sum.calls),
                (unsigned long long)c->sum.hot_buffers,
                hb_report_time(c->sum.saving_ns, b2, sizeof(b2)));
    }
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        const struct hb_class_summary *c = &r->cls[op].sum;
        if (!c->top_size_calls[0])
            continue;
        fprintf(out, "  %s sizes (%llu distinct):", hb_op_name(op),
                (unsigned long long)c->distinct_sizes);
        for (int k = 0; k < HB_TOP_SIZES && c->top_size_calls[k]; k++)
            fprintf(out, "%s %s x%llu", k ? "," : "",
                    exact_size(c->top_size[k], b1, sizeof(b1)),
                    (unsigned long long)c->top_size_calls[k]);
        if (c->other_size_calls)
            fprintf(
                out,
                "; %llu calls at sizes past the first %d distinct (not itemized)",
                (unsigned long long)c->other_size_calls, HB_SIZES_EXACT);
        if (c->zero_calls || c->proc_null_calls || c->untracked_calls)
            fprintf(out,
                    "; %llu zero-byte, %llu to MPI_PROC_NULL, %llu untracked",
                    (unsigned long long)c->zero_calls,
                    (unsigned long long)c->proc_null_calls,
                    (unsigned long long)c->untracked_calls);
        fprintf(out, "\n");
    }
}

/* Only when rank 0's site table filled up: the sites above are exact,
 * these records are in no site (their calls are in the classes). */
static void text_left_out(FILE *out, const struct hb_report *r)
{
    if (!r->sites_left_out)
        return;
    fprintf(out,
            "  %llu site record(s) of ranks, %llu calls, left out: rank 0 "
            "merges at most %zu distinct sites\n",
            (unsigned long long)r->sites_left_out,
            (unsigned long long)r->site_calls_left_out, r->site_cap);
}

static void text_sites(FILE *out, const struct hb_report *r,
                       const struct hb_report_context *ctx)
{
    char b1[32], advice[HB_ADVICE_LEN];
    struct hb_advice_ctx adv;
    if (!r->nsites)
        return;
    hb_advice_ctx_init(&adv, r, ctx);
    fprintf(
        out,
        "\ncall sites (busiest %zu of %llu, merged over ranks; buffers = first used there):\n",
        r->nsites, (unsigned long long)r->sites_total);
    fprintf(out, "%3s %-9s %10s %7s %6s %8s %9s %9s %12s  %s\n", "#", "op",
            "calls", "reuse%", "hot%", "buffers", "max reuse", "rdma ops",
            "est. saving", "site");
    for (size_t i = 0; i < r->nsites; i++) {
        const struct hb_site_summary *s = &r->sites[i];
        fprintf(out,
                "%3zu %-9s %10llu %6.1f%% %5.1f%% %8llu %9llu %9llu %12s  %s\n",
                i + 1, hb_op_name(s->op), (unsigned long long)s->calls,
                hb_site_reuse_pct(s), pct(s->hot_calls, s->calls),
                (unsigned long long)s->buffers,
                (unsigned long long)s->max_reuse,
                (unsigned long long)s->rerouted_calls,
                hb_report_time(s->saving_ns, b1, sizeof(b1)), s->name);
        for (uint32_t k = 0; k < s->ntop; k++)
            fprintf(
                out, "%s rank %d 0x%llx %s x%llu%s",
                k ? "," : "      buffers:", s->top[k].rank,
                (unsigned long long)s->top[k].addr,
                exact_size(s->top[k].size, b1, sizeof(b1)), /* its largest */
                (unsigned long long)s->top[k].uses,
                s->top[k].hot ? " hot" : "");
        if (s->ntop)
            fprintf(out, "\n");
        hb_site_advice(s, &adv, advice, sizeof(advice));
        fprintf(out, "      advice: %s\n", advice);
    }
    text_left_out(out, r);
}

static void text_table(FILE *out, const struct hb_report *r,
                       const struct hb_report_context *ctx)
{
    char b1[32];
    fprintf(
        out,
        "\nreuse table: %llu buffers tracked (at most %llu on one rank), %llu hot; "
        "%s per rank; longest chain %llu\n",
        (unsigned long long)r->entries_total,
        (unsigned long long)r->entries_max,
        (unsigned long long)r->hot_entries_total,
        hb_report_bytes((double)r->memory_max, b1, sizeof(b1)),
        (unsigned long long)r->max_chain);
    if (r->ranks_adapted)
        fprintf(
            out,
            "  table stopped growing on %u rank(s) by adaptation (under %g%% hot, a chain "
            "of %d) after %llu buffers / %llu calls\n",
            r->ranks_adapted, ctx->cfg->adapt_hot_pct, ctx->cfg->adapt_chain,
            (unsigned long long)r->stopped_after_entries_min[0],
            (unsigned long long)r->stopped_after_calls_min[0]);
    if (r->ranks_full)
        fprintf(
            out,
            "  table stopped growing on %u rank(s) at its limit of %llu buffers "
            "(HOTBUF_TABLE_MAX_ENTRIES) after %llu calls\n",
            r->ranks_full, (unsigned long long)ctx->cfg->table_max,
            (unsigned long long)r->stopped_after_calls_min[1]);
}

/* The routine hotbuf copies its own data with, and why (util/copy.h). */
static void text_copy_routine(FILE *out, const struct hb_costmodel *cm)
{
    char b1[32], b2[32];
    fprintf(out, "hotbuf's copies: %s (%s",
            hb_copy_routine_name((enum hb_copy_routine)cm->copy_routine),
            hb_cost_source_name(cm->routine_src));
    if (cm->routine_src == HB_COST_MEASURED)
        fprintf(out, "; 64 KiB in %s by memcpy, %s in 4 KiB pieces",
                hb_report_time(cm->probe_memcpy_ns, b1, sizeof(b1)),
                hb_report_time(cm->probe_pieces_ns, b2, sizeof(b2)));
    fprintf(out, ")\n");
}

static void text_cost(FILE *out, const struct hb_report_context *ctx)
{
    const struct hb_costmodel *cm = ctx->cost;
    static const uint64_t sizes[] = {128, 256, 512, 1024, 2048, 4096, 8192};
    char b1[32], b2[32];
    fprintf(
        out,
        "cost model: C %s @128 B, %s @8 KiB (%s); V %.1f ns (%s); R %.2f us + %.3f us/page (%s)\n",
        hb_report_time(hb_cost_copy_ns(cm, 128), b1, sizeof(b1)),
        hb_report_time(hb_cost_copy_ns(cm, 8192), b2, sizeof(b2)),
        hb_cost_source_name(cm->copy_src), cm->lookup_ns,
        hb_cost_source_name(cm->lookup_src), cm->reg_base_us, cm->reg_page_us,
        hb_cost_source_name(cm->reg_src));
    fprintf(out, "hot after (uses):");
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint32_t t = hb_threshold_for(ctx->thresholds, ctx->tp, sizes[i]);
        if (t == HB_NEVER)
            fprintf(out, " %s never;",
                    hb_report_bytes((double)sizes[i], b1, sizeof(b1)));
        else
            fprintf(out, " %s %u;",
                    hb_report_bytes((double)sizes[i], b1, sizeof(b1)), t);
    }
    fprintf(out, " saving = copies avoided x C - registrations x R\n");
    text_copy_routine(out, cm);
}

/* Variable i of the configuration: its name, its value as text in v,
 * and whether it has its default. */
struct config_entry {
    const char *name;
    char v[256];
    int is_default;
};

static void config_entry(const struct hb_report_context *ctx, size_t i,
                         struct config_entry *e)
{
    e->name = hb_var_table[i].name;
    hb_config_format(ctx->cfg, &hb_var_table[i], e->v, sizeof(e->v));
    e->is_default = hb_config_is_default(ctx->cfg, &hb_var_table[i]);
}

static void text_config(FILE *out, const struct hb_report_context *ctx)
{
    struct config_entry e;
    fprintf(out, "configuration (* = set by the user):");
    for (size_t i = 0; i < hb_var_count; i++) {
        config_entry(ctx, i, &e);
        fprintf(out, "%s %s=%s%s", i % 4 ? "" : "\n ", e.name, e.v,
                e.is_default ? "" : "*");
    }
    fprintf(out, "\n");
    for (int i = 0; i < ctx->nnotes; i++)
        fprintf(out, "note: %s\n", ctx->notes[i]);
}

void hb_report_render_text(FILE *out, const struct hb_report *r,
                           const struct hb_report_context *ctx)
{
    fprintf(
        out,
        "==== hotbuf buffer-reuse report: %d rank(s), %s, thread level %s ====\n",
        r->nranks, ctx->mpi_library, ctx->thread_level);
    text_classes(out, r);
    text_sites(out, r, ctx);
    text_table(out, r, ctx);
    for (size_t k = 0; k < r->layout.n; k++)
        r->layout.sec[k]->render_text(out, r->acc[k], r);
    text_cost(out, ctx);
    text_config(out, ctx);
    fprintf(out, "==== end of hotbuf report ====\n");
}

/* ---- JSON ---------------------------------------------------------------- */

void hb_report_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* "uses_histogram": [buffers used 1, 2-3, 4-7, ... times], up to its last
 * nonzero bucket. */
static void json_uses_hist(FILE *out, const uint64_t *hist)
{
    int n = HB_USES_BUCKETS;
    while (n > 0 && !hist[n - 1])
        n--;
    fprintf(out, ", \"uses_histogram\": [");
    for (int k = 0; k < n; k++)
        fprintf(out, "%s%llu", k ? ", " : "", (unsigned long long)hist[k]);
    fprintf(out, "]");
}

static void json_class(FILE *out, const struct hb_class_report *c)
{
    const struct hb_class_summary *s = &c->sum;
    fprintf(
        out,
        "{\"calls\": %llu, \"bytes\": %llu, \"buffers\": %llu, \"reuse_calls\": %llu, "
        "\"reuse_pct\": %.3f, \"hot_calls\": %llu, \"hot_pct\": %.3f, \"hot_buffers\": %llu, "
        "\"untracked_calls\": %llu, \"zero_byte_calls\": %llu, \"proc_null_calls\": %llu, "
        "\"rerouted_calls\": %llu, \"ranks_with_calls\": %u, ",
        (unsigned long long)s->calls, (unsigned long long)s->bytes,
        (unsigned long long)s->buffers, (unsigned long long)s->reuse_calls,
        hb_reuse_pct(s), (unsigned long long)s->hot_calls,
        pct(s->hot_calls, s->calls), (unsigned long long)s->hot_buffers,
        (unsigned long long)s->untracked_calls,
        (unsigned long long)s->zero_calls,
        (unsigned long long)s->proc_null_calls,
        (unsigned long long)s->rerouted_calls, c->ranks);
    fprintf(out,
            "\"max_reuse\": {\"min\": %llu, \"max\": %llu, \"avg\": %.2f}, ",
            (unsigned long long)c->max_reuse_min,
            (unsigned long long)c->max_reuse_max, c->max_reuse_avg);
    fprintf(
        out,
        "\"most_frequent_size\": {\"min\": %llu, \"max\": %llu, \"avg\": %.2f}, ",
        (unsigned long long)c->freq_size_min,
        (unsigned long long)c->freq_size_max, c->freq_size_avg);
    fprintf(out, "\"top_sizes\": [");
    for (int k = 0; k < HB_TOP_SIZES && s->top_size_calls[k]; k++)
        fprintf(out, "%s{\"size\": %llu, \"calls\": %llu}", k ? ", " : "",
                (unsigned long long)s->top_size[k],
                (unsigned long long)s->top_size_calls[k]);
    fprintf(out, "], \"distinct_sizes\": %llu, \"other_size_calls\": %llu",
            (unsigned long long)s->distinct_sizes,
            (unsigned long long)s->other_size_calls);
    fprintf(out,
            ", \"estimated_saving_us\": %.3f, \"lookup_overhead_us\": %.3f",
            s->saving_ns / 1e3, s->lookup_ns / 1e3);
    json_uses_hist(out, s->uses_hist);
    fprintf(out, "}");
}

static void json_site(FILE *out, const struct hb_site_summary *s,
                      const struct hb_advice_ctx *adv)
{
    char advice[HB_ADVICE_LEN];
    hb_site_advice(s, adv, advice, sizeof(advice));
    fprintf(out, "{\"name\": ");
    hb_report_json_string(out, s->name);
    fprintf(
        out,
        ", \"op\": \"%s\", \"ranks\": %u, \"calls\": %llu, \"bytes\": %llu, "
        "\"reuse_calls\": %llu, \"reuse_pct\": %.3f, \"hot_calls\": %llu, "
        "\"untracked_calls\": %llu, \"empty_calls\": %llu, \"buffers\": %llu, "
        "\"hot_buffers\": %llu, \"max_reuse\": %llu, \"rerouted_calls\": %llu, \"estimated_saving_us\": %.3f, "
        "\"top_buffers\": [",
        hb_op_name(s->op), s->ranks, (unsigned long long)s->calls,
        (unsigned long long)s->bytes, (unsigned long long)s->reuse_calls,
        hb_site_reuse_pct(s), (unsigned long long)s->hot_calls,
        (unsigned long long)s->untracked_calls,
        (unsigned long long)s->empty_calls, (unsigned long long)s->buffers,
        (unsigned long long)s->hot_buffers, (unsigned long long)s->max_reuse,
        (unsigned long long)s->rerouted_calls, s->saving_ns / 1e3);
    for (uint32_t k = 0; k < s->ntop; k++)
        fprintf(
            out,
            "%s{\"rank\": %d, \"address\": \"0x%llx\", \"size\": %llu, \"uses\": %llu, "
            "\"hot_uses\": %llu, \"hot\": %s}",
            k ? ", " : "", s->top[k].rank, (unsigned long long)s->top[k].addr,
            (unsigned long long)s->top[k].size,
            (unsigned long long)s->top[k].uses,
            (unsigned long long)s->top[k].hot_uses,
            s->top[k].hot ? "true" : "false");
    fprintf(out, "], \"persistent\": %s, \"advice\": ",
            s->persistent ? "true" : "false");
    hb_report_json_string(out, advice);
    fprintf(out, "}");
}

static void json_table(FILE *out, const struct hb_report *r)
{
    fprintf(
        out,
        "{\"buffers\": %llu, \"hot_buffers\": %llu, \"max_buffers_per_rank\": %llu, "
        "\"memory_bytes_per_rank_max\": %llu, \"longest_chain\": %llu, "
        "\"ranks_stopped_adapted\": %u, \"ranks_stopped_full\": %u, "
        "\"adapted_after_calls_min\": %llu, \"adapted_after_buffers_min\": %llu, "
        "\"full_after_calls_min\": %llu}",
        (unsigned long long)r->entries_total,
        (unsigned long long)r->hot_entries_total,
        (unsigned long long)r->entries_max, (unsigned long long)r->memory_max,
        (unsigned long long)r->max_chain, r->ranks_adapted, r->ranks_full,
        (unsigned long long)r->stopped_after_calls_min[0],
        (unsigned long long)r->stopped_after_entries_min[0],
        (unsigned long long)r->stopped_after_calls_min[1]);
}

static void json_cost(FILE *out, const struct hb_report_context *ctx)
{
    const struct hb_costmodel *cm = ctx->cost;
    fprintf(
        out,
        "{\"copy_source\": \"%s\", \"lookup_source\": \"%s\", \"reg_source\": \"%s\", "
        "\"lookup_ns\": %.3f, \"reg_base_us\": %.3f, \"reg_page_us\": %.4f, \"sizes\": [",
        hb_cost_source_name(cm->copy_src), hb_cost_source_name(cm->lookup_src),
        hb_cost_source_name(cm->reg_src), cm->lookup_ns, cm->reg_base_us,
        cm->reg_page_us);
    for (unsigned k = 6; k <= 16; k++) {
        uint64_t size = 1ull << k;
        uint32_t t = hb_threshold_for(ctx->thresholds, ctx->tp, size);
        fprintf(out,
                "%s{\"size\": %llu, \"copy_ns\": %.2f, \"reg_us\": %.3f, "
                "\"break_even_uses\": %.1f, \"threshold\": %lld}",
                k > 6 ? ", " : "", (unsigned long long)size,
                hb_cost_copy_ns(cm, size), hb_cost_reg_ns(cm, size) / 1e3,
                hb_cost_break_even(cm, size),
                t == HB_NEVER ? -1LL : (long long)t);
    }
    fprintf(out,
            "], \"copy_routine\": \"%s\", \"copy_routine_source\": \"%s\", "
            "\"probe_memcpy_ns\": %.1f, \"probe_pieces_ns\": %.1f}",
            hb_copy_routine_name((enum hb_copy_routine)cm->copy_routine),
            hb_cost_source_name(cm->routine_src), cm->probe_memcpy_ns,
            cm->probe_pieces_ns);
}

static void json_config(FILE *out, const struct hb_report_context *ctx)
{
    struct config_entry e;
    fprintf(out, "{");
    for (size_t i = 0; i < hb_var_count; i++) {
        config_entry(ctx, i, &e);
        fprintf(out, "%s\"%s\": {\"value\": ", i ? ", " : "", e.name);
        hb_report_json_string(out, e.v);
        fprintf(out, ", \"default\": %s}", e.is_default ? "true" : "false");
    }
    fprintf(out, "}");
}

void hb_report_render_json(FILE *out, const struct hb_report *r,
                           const struct hb_report_context *ctx)
{
    fprintf(out,
            "{\"hotbuf_report_version\": 1, \"ranks\": %d, \"mpi_library\": ",
            r->nranks);
    hb_report_json_string(out, ctx->mpi_library);
    fprintf(out, ", \"thread_level\": \"%s\",\n \"classes\": {",
            ctx->thread_level);
    for (unsigned op = 0; op < HB_OP_COUNT; op++) {
        fprintf(out, "%s\n  \"%s\": ", op ? "," : "", hb_op_name(op));
        json_class(out, &r->cls[op]);
    }
    fprintf(out, "},\n \"sites_total\": %llu, \"other_site_calls\": %llu,",
            (unsigned long long)r->sites_total,
            (unsigned long long)r->site_overflow_calls);
    /* only then: small jobs' reports stay as they were */
    if (r->sites_left_out)
        fprintf(out,
                " \"sites_left_out\": %llu,"
                " \"site_calls_left_out\": %llu,",
                (unsigned long long)r->sites_left_out,
                (unsigned long long)r->site_calls_left_out);
    struct hb_advice_ctx adv;
    hb_advice_ctx_init(&adv, r, ctx);
    fprintf(out, "\n \"sites\": [");
    for (size_t i = 0; i < r->nsites; i++) {
        fprintf(out, "%s\n  ", i ? "," : "");
        json_site(out, &r->sites[i], &adv);
    }
    fprintf(out, "],\n \"table\": ");
    json_table(out, r);
    for (size_t k = 0; k < r->layout.n; k++) {
        fprintf(out, ",\n \"%s\": ", r->layout.sec[k]->name);
        r->layout.sec[k]->render_json(out, r->acc[k], r);
    }
    fprintf(out, ",\n \"cost_model\": ");
    json_cost(out, ctx);
    fprintf(out, ",\n \"config\": ");
    json_config(out, ctx);
    fprintf(out, ",\n \"notes\": [");
    for (int i = 0; i < ctx->nnotes; i++) {
        fprintf(out, "%s", i ? ", " : "");
        hb_report_json_string(out, ctx->notes[i]);
    }
    fprintf(out, "]}\n");
}
