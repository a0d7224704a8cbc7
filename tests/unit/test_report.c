/* Unit tests for the report pipeline: tracker -> rank summary
 * (report_local.c), N rank summaries -> merged report (report_merge.c), and
 * the text and JSON renderings (report_render.c).  The JSON is checked with
 * a small strict parser. */
#define _GNU_SOURCE /* open_memstream */

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixtures.h"
#include "util/copy.h"
#include "coll/allgather_stats.h"
#include "rdma/rdma_stats.h"
#include "report/report.h"
#include "report/report_local.h"
#include "rma/rma_stats.h"
#include "track/tracker.h"

/* The sections as the library lays them out, and one rank's record. */
static const struct hb_report_section *const sections[] = {
    &hb_rdma_section, &hb_rma_section, &hb_ag_section};
static const struct hb_report_layout layout = {sections, 3};
static const struct hb_report_layout no_sections = {NULL, 0};

struct rank_record {
    struct hb_rank_summary h;
    struct hb_rdma_record rdma;
    struct hb_rma_summary rma;
    struct hb_ag_summary ag;
};

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

/* ---- a strict JSON validator (RFC 8259 grammar) ------------------------------ */

struct json {
    const char *p;
    int depth;
};

static void json_ws(struct json *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

static int json_value(struct json *j);

static int json_string_ok(struct json *j)
{
    if (*j->p++ != '"')
        return 0;
    for (;;) {
        unsigned char c = (unsigned char)*j->p++;
        if (c == '"')
            return 1;
        if (c < 0x20) /* includes the terminating NUL */
            return 0;
        if (c != '\\')
            continue;
        c = (unsigned char)*j->p++;
        if (c == 'u') {
            for (int i = 0; i < 4; i++, j->p++)
                if (!strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
                    return 0;
        } else if (!c || !strchr("\"\\/bfnrt", c)) {
            return 0;
        }
    }
}

static int digits(struct json *j)
{
    const char *s = j->p;
    while (*j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > s;
}

static int json_number(struct json *j)
{
    if (*j->p == '-')
        j->p++;
    if (*j->p == '0')
        j->p++;
    else if (!digits(j))
        return 0;
    if (*j->p == '.') {
        j->p++;
        if (!digits(j))
            return 0;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-')
            j->p++;
        if (!digits(j))
            return 0;
    }
    return 1;
}

/* Object (close '}') or array (close ']') after its opening bracket. */
static int json_members(struct json *j, char close)
{
    json_ws(j);
    if (*j->p == close)
        return j->p++, 1;
    for (;;) {
        json_ws(j);
        if (close == '}') {
            if (!json_string_ok(j))
                return 0;
            json_ws(j);
            if (*j->p++ != ':')
                return 0;
        }
        if (!json_value(j))
            return 0;
        json_ws(j);
        if (*j->p == close)
            return j->p++, 1;
        if (*j->p++ != ',')
            return 0;
    }
}

static int json_value(struct json *j)
{
    json_ws(j);
    if (++j->depth > 64)
        return 0;
    int ok;
    switch (*j->p) {
    case '{':
        j->p++;
        ok = json_members(j, '}');
        break;
    case '[':
        j->p++;
        ok = json_members(j, ']');
        break;
    case '"': ok = json_string_ok(j); break;
    case 't': ok = !strncmp(j->p, "true", 4) && (j->p += 4); break;
    case 'f': ok = !strncmp(j->p, "false", 5) && (j->p += 5); break;
    case 'n': ok = !strncmp(j->p, "null", 4) && (j->p += 4); break;
    default: ok = json_number(j); break;
    }
    j->depth--;
    return ok;
}

/* 1 if text is exactly one JSON value (whitespace around allowed). */
static int json_valid(const char *text)
{
    struct json j = {text, 0};
    if (!json_value(&j))
        return 0;
    json_ws(&j);
    return *j.p == 0;
}

static void test_json_validator(void)
{
    CHECK(json_valid(
        "{\"a\": [1, -2.5e3, true, false, null, \"x\\\"\\\\\\u00e9\"], \"b\": {}}"));
    CHECK(json_valid(" [] \n"));
    CHECK(!json_valid("{\"a\": }"));
    CHECK(!json_valid("[1, ]"));
    CHECK(!json_valid("{\"a\" 1}"));
    CHECK(!json_valid("{\"a\": 1"));
    CHECK(!json_valid("[1]]"));
    CHECK(!json_valid("\"x\\q\""));
    CHECK(!json_valid("\"x\ty\""));
    CHECK(!json_valid("\"abc"));
    CHECK(!json_valid("01"));
    CHECK(!json_valid("1."));
    CHECK(!json_valid("{a: 1}"));
    CHECK(!json_valid("[nan]"));
    CHECK(!json_valid("{\"a\": 1}{"));
    CHECK(!json_valid(""));
}

/* ---- shared set-up --------------------------------------------------------------- */

static const char *empty_env(const char *name)
{
    (void)name;
    return NULL;
}
static const char *bits18_env(const char *name)
{
    return !strcmp(name, "HOTBUF_HASH_BITS") ? "18" : NULL;
}
static void no_warn(const char *line, void *ctx)
{
    (void)line;
    (void)ctx;
}

static struct hb_config cfg;
static struct hb_costmodel cm;
static struct hb_threshold_params tp = {
    .speculative = 0.25, .min_size = 128, .eager_limit = 8192};
static uint32_t thr[HB_SIZE_CLASSES];

static struct hb_report_context context(void)
{
    struct hb_report_context ctx;
    memset(&ctx, 0, sizeof(ctx));
    hb_config_load(&cfg, empty_env, no_warn, NULL);
    cm = model();
    hb_cost_thresholds(&cm, &tp, thr);
    ctx.cfg = &cfg;
    ctx.cost = &cm;
    ctx.tp = &tp;
    ctx.thresholds = thr;
    ctx.mpi_library = "Test \"MPI\" 4.1";
    ctx.thread_level = "MPI_THREAD_SINGLE";
    snprintf(ctx.notes[0], HB_NOTE_LEN, "a \"quoted\" note \\ here");
    ctx.nnotes = 1;
    return ctx;
}

typedef void (*render_fn)(FILE *, const struct hb_report *,
                          const struct hb_report_context *);

static char *render(render_fn fn, const struct hb_report *r,
                    const struct hb_report_context *ctx)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return strdup("");
    fn(f, r, ctx);
    fclose(f);
    return buf;
}

/* The line of text starting with prefix, copied into line (or ""). */
static const char *line_of(const char *text, const char *prefix, char *line,
                           size_t len)
{
    size_t n = strlen(prefix);
    line[0] = 0;
    for (const char *p = text; p && *p;
         p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, prefix, n)) {
            const char *end = strchr(p, '\n');
            size_t l = end ? (size_t)(end - p) : strlen(p);
            snprintf(line, len, "%.*s", (int)(l < len ? l : len - 1), p);
            break;
        }
    return line;
}

#define HAS(text, s) has((text), (s), __LINE__)
static int has(const char *text, const char *s, int line)
{
    if (strstr(text, s))
        return 1;
    fprintf(stderr, "line %d: output lacks \"%s\"\n", line, s);
    return 0;
}

/* ---- rank summary from a tracker ---------------------------------------------------- */

/* Real code addresses, so the symbolizer has names to find. */
__attribute__((noinline, used)) static void site_fn_a(void)
{
    __asm__ volatile("");
}
__attribute__((noinline, used)) static void site_fn_b(void)
{
    __asm__ volatile("");
}
__attribute__((noinline, used)) static void site_fn_c(void)
{
    __asm__ volatile("");
}
#define RET(fn) ((void *)((uintptr_t)(fn) + 1))
#define BUF_A ((char *)0x7f0000100000)
#define SMALL ((char *)0x7f0000200000)

static void fill_tracker(struct hb_tracker *t)
{
    struct hb_table_params p = {.bits = 16,
                                .max_entries = 1 << 20,
                                .adapt = 1,
                                .adapt_hot_pct = 20,
                                .adapt_chain = 3};
    struct hb_threshold_params fixed = {.speculative = 0.25,
                                        .min_size = 128,
                                        .eager_limit = 8192,
                                        .fixed = 100};
    struct hb_costmodel m = model();
    CHECK(hb_tracker_init(t, &p, 1, 64, &fixed, &m) == 0);
    uint16_t sa = hb_tracker_site(t, HB_OP_SEND, RET(site_fn_a));
    uint16_t sb = hb_tracker_site(t, HB_OP_SEND, RET(site_fn_b));
    uint16_t sc = hb_tracker_site(t, HB_OP_PUT, RET(site_fn_c));
    for (int i = 0; i < 1000; i++) {
        struct hb_use a = {BUF_A, 1024, 1024};
        hb_tracker_record(t, HB_OP_SEND, &a, sa);
        if (i < 500) {
            struct hb_use s = {SMALL + 256 * i, 256, 256};
            hb_tracker_record(t, HB_OP_SEND, &s, sb);
        }
    }
    for (int i = 0; i < 10; i++) /* 7 zero-byte and 3 MPI_PROC_NULL puts */
        hb_tracker_record_empty(t, HB_OP_PUT, i >= 7, sc);
}

static void test_local(void)
{
    struct hb_tracker t;
    struct hb_rank_summary rs;
    struct hb_site_summary *sites = NULL;
    struct hb_costmodel m = model();
    fill_tracker(&t);
    CHECK(hb_report_local(&t, &m, 2, 10, 3, &rs, &sites) == 0);

    const struct hb_class_summary *c = &rs.cls[HB_OP_SEND];
    CHECK_EQ_U64(c->calls, 1500);
    CHECK_EQ_U64(c->bytes, 1000 * 1024 + 500 * 256);
    CHECK_EQ_U64(c->reuse_calls, 999);
    CHECK_EQ_U64(c->hot_calls, 901);
    CHECK_EQ_U64(c->untracked_calls, 0);
    CHECK_EQ_U64(c->buffers, 501);
    CHECK_EQ_U64(c->hot_buffers, 1);
    CHECK_EQ_U64(c->max_reuse, 1000);
    CHECK_EQ_U64(c->top_size[0], 1024);
    CHECK_EQ_U64(c->top_size_calls[0], 1000);
    CHECK_EQ_U64(c->top_size[1], 256);
    CHECK_EQ_U64(c->top_size_calls[1], 500);
    CHECK_EQ_U64(c->top_size_calls[2], 0);
    /* one hot buffer: hot_uses x C(1 KiB) - R(1 KiB) = 901 x 100 - 10250 ns */
    CHECK(close_to(c->saving_ns, 901 * 100.0 - 10250.0));
    CHECK(close_to(c->lookup_ns, 1500 * 20.0));
    const struct hb_class_summary *p = &rs.cls[HB_OP_PUT];
    CHECK_EQ_U64(p->calls, 10);
    CHECK_EQ_U64(p->zero_calls, 7);
    CHECK_EQ_U64(p->proc_null_calls, 3);
    CHECK_EQ_U64(p->buffers, 0);
    CHECK(p->lookup_ns == 0); /* empty calls are not looked up */
    CHECK_EQ_U64(rs.cls[HB_OP_GET].calls, 0);
    CHECK_EQ_U64(rs.table_entries, 501);
    CHECK_EQ_U64(rs.table_hot, 1);
    CHECK_EQ_U64(rs.table_memory, hb_table_memory(&t.table));
    CHECK_EQ_U64(rs.max_chain, t.table.max_chain);
    CHECK_EQ_U64(rs.stopped, HB_GROWING);
    CHECK_EQ_U64(rs.sites, 3);
    CHECK_EQ_U64(rs.site_overflow_calls, 0);

    /* site summaries: busiest first, symbolized, top buffers by uses */
    CHECK_EQ_U64(rs.nsites, 3);
    if (rs.nsites == 3 && sites) {
        const struct hb_site_summary *a = &sites[0], *b = &sites[1],
                                     *s3 = &sites[2];
        if (!strstr(a->name, "site_fn_a") || !strstr(b->name, "site_fn_b") ||
            !strstr(s3->name, "site_fn_c"))
            fprintf(stderr, "site names: \"%s\", \"%s\", \"%s\"\n", a->name,
                    b->name, s3->name);
        CHECK(strstr(a->name, "site_fn_a") != NULL);
        CHECK(strstr(b->name, "site_fn_b") != NULL);
        CHECK(strstr(s3->name, "site_fn_c") != NULL);
        CHECK(a->op == HB_OP_SEND && b->op == HB_OP_SEND &&
              s3->op == HB_OP_PUT);
        CHECK(a->ranks == 1 && b->ranks == 1 && s3->ranks == 1);
        CHECK_EQ_U64(a->calls, 1000);
        CHECK_EQ_U64(a->bytes, 1000 * 1024);
        CHECK_EQ_U64(a->reuse_calls, 999);
        CHECK_EQ_U64(a->hot_calls, 901);
        CHECK_EQ_U64(a->buffers, 1);
        CHECK_EQ_U64(a->hot_buffers, 1);
        CHECK_EQ_U64(a->max_reuse, 1000);
        CHECK(close_to(a->saving_ns, 901 * 100.0 - 10250.0));
        CHECK_EQ_U64(a->ntop, 1);
        CHECK(a->top[0].addr == (uintptr_t)BUF_A && a->top[0].size == 1024 &&
              a->top[0].uses == 1000 && a->top[0].hot_uses == 901 &&
              a->top[0].hot == 1 && a->top[0].rank == 2);
        CHECK_EQ_U64(b->calls, 500);
        CHECK_EQ_U64(b->buffers, 500);
        CHECK_EQ_U64(b->hot_buffers, 0);
        CHECK_EQ_U64(b->max_reuse, 1);
        CHECK(b->saving_ns == 0);
        CHECK_EQ_U64(b->ntop, 3); /* capped at max_buffers */
        CHECK(b->top[0].uses == 1 && b->top[0].size == 256 && !b->top[0].hot);
        CHECK_EQ_U64(s3->calls, 10);
        CHECK_EQ_U64(s3->buffers, 0);
        CHECK_EQ_U64(s3->ntop, 0);
    }
    free(sites);

    /* max_sites keeps the busiest; max_buffers is capped at HB_TOP_BUFFERS */
    CHECK(hb_report_local(&t, &m, 0, 2, 100, &rs, &sites) == 0);
    CHECK_EQ_U64(rs.nsites, 2);
    if (rs.nsites == 2 && sites) {
        CHECK_EQ_U64(sites[0].calls, 1000);
        CHECK_EQ_U64(sites[1].calls, 500);
        CHECK_EQ_U64(sites[1].ntop, HB_TOP_BUFFERS);
    }

    /* one rank merged and rendered: the numbers survive */
    struct hb_report r;
    const struct hb_site_summary *const sp[1] = {sites};
    CHECK(hb_report_merge(&r, &no_sections, &rs, 1, sp, 10, 3) == 0);
    CHECK_EQ_U64(r.cls[HB_OP_SEND].sum.calls, 1500);
    CHECK_EQ_U64(r.cls[HB_OP_SEND].max_reuse_max, 1000);
    CHECK_EQ_U64(r.cls[HB_OP_SEND].freq_size_max, 1024);
    CHECK_EQ_U64(r.nsites, 2);
    struct hb_report_context ctx = context();
    char *json = render(hb_report_render_json, &r, &ctx);
    CHECK(json_valid(json));
    CHECK(HAS(
        json,
        "\"calls\": 1500, \"bytes\": 1152000, \"buffers\": 501, \"reuse_calls\": 999"));
    CHECK(HAS(json, "site_fn_a"));
    free(json);
    hb_report_free(&r);
    free(sites);
    hb_tracker_destroy(&t);
}

/* Most frequent sizes are ordered by calls, not by size, and capped at
 * HB_TOP_SIZES. */
static void test_local_sizes(void)
{
    struct hb_tracker t;
    struct hb_table_params p = {.bits = 12, .max_entries = 1000};
    struct hb_threshold_params fixed = {.speculative = 0.25,
                                        .min_size = 128,
                                        .eager_limit = 8192,
                                        .fixed = 100};
    struct hb_costmodel m = model();
    CHECK(hb_tracker_init(&t, &p, 1, 64, &fixed, &m) == 0);
    /* size x uses: 32 x1, 64 x2, 512 x6, 2048 x(2+1) on two buffers, 4096 x4 */
    static const struct {
        uintptr_t addr;
        uint64_t size;
        int uses;
    } bufs[] = {
        {0x10000, 32, 1},   {0x20000, 64, 2},   {0x30000, 512, 6},
        {0x40000, 2048, 2}, {0x50000, 2048, 1}, {0x60000, 4096, 4},
    };
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        for (int k = 0; k < bufs[i].uses; k++) {
            struct hb_use u = {(void *)bufs[i].addr, bufs[i].size,
                               bufs[i].size};
            hb_tracker_record(&t, HB_OP_GET, &u, HB_SITE_OTHER);
        }
    struct hb_rank_summary rs;
    struct hb_site_summary *sites = NULL;
    CHECK(hb_report_local(&t, &m, 0, 10, 3, &rs, &sites) == 0);
    const struct hb_class_summary *c = &rs.cls[HB_OP_GET];
    static const uint64_t want_size[HB_TOP_SIZES] = {512, 4096, 2048, 64};
    static const uint64_t want_calls[HB_TOP_SIZES] = {6, 4, 3, 2};
    for (int k = 0; k < HB_TOP_SIZES; k++) {
        CHECK_EQ_U64(c->top_size[k], want_size[k]);
        CHECK_EQ_U64(c->top_size_calls[k], want_calls[k]);
    }
    CHECK_EQ_U64(c->buffers, 6);
    CHECK_EQ_U64(c->max_reuse, 6);
    CHECK_EQ_U64(c->hot_buffers, 0);
    CHECK(c->saving_ns == 0);
    /* calls without a site are listed as <other call sites> */
    CHECK_EQ_U64(rs.nsites, 1);
    if (rs.nsites == 1 && sites)
        CHECK(!strcmp(sites[0].name, "<other call sites>") &&
              sites[0].calls == 16);
    free(sites);
    hb_tracker_destroy(&t);
}

/* Issue 10: every call counts at its own size.  One buffer at 1 KiB x600
 * then 32 KiB x1000 (site A), one buffer at 82 sizes with the i-th used
 * i+1 times (site B, NetPIPE-like).  Sizes, the most frequent size, the
 * saving (hot calls at their own size, R once) and the top buffer's size
 * (its largest) must follow the calls, not the buffers' last sizes. */
#define NP_SIZES 82
static uint64_t np_size(int i)
{
    return 100 + 37 * (uint64_t)i;
} /* 100 B .. 3.1 KiB */

static void fill_sizes(struct hb_tracker *t)
{
    struct hb_table_params p = {.bits = 12, .max_entries = 1000};
    struct hb_threshold_params fixed = {.speculative = 0.25,
                                        .min_size = 128,
                                        .eager_limit = 8192,
                                        .fixed = 100};
    struct hb_costmodel m = model();
    CHECK(hb_tracker_init(t, &p, 1, 64, &fixed, &m) == 0);
    uint16_t sa = hb_tracker_site(t, HB_OP_SEND, RET(site_fn_a));
    uint16_t sb = hb_tracker_site(t, HB_OP_SEND, RET(site_fn_b));
    for (int i = 0; i < 1600; i++) {
        struct hb_use u = {BUF_A, i < 600 ? 1024 : 32768,
                           i < 600 ? 1024 : 32768};
        hb_tracker_record(t, HB_OP_SEND, &u, sa);
    }
    for (int i = 0; i < NP_SIZES; i++)
        for (int k = 0; k <= i; k++) {
            struct hb_use u = {SMALL, np_size(i), np_size(i)};
            hb_tracker_record(t, HB_OP_SEND, &u, sb);
        }
}

/* NetPIPE buffer: hot from its 100th use, uses 1..3403 run over sizes
 * 0..81 with size i ending at use (i+1)(i+2)/2; all sizes but the first
 * (100 B) are eligible.  Saving: each hot call's copy minus R at each size
 * the registration grew to. */
static double np_saving(void)
{
    double saving = 0;
    uint64_t use = 0, reg = 0;
    for (int i = 0; i < NP_SIZES; i++)
        for (int k = 0; k <= i; k++) {
            uint64_t size = np_size(i);
            if (++use < 100 || size < 128)
                continue;
            saving += size / 1024.0 * 100.0;
            if (size > reg) {
                reg = size;
                saving -= 10000.0 + 250.0 * (double)((size + 4095) / 4096);
            }
        }
    return saving;
}

static void test_local_sizes_per_call(void)
{
    struct hb_tracker t;
    fill_sizes(&t);
    struct hb_rank_summary rs;
    struct hb_site_summary *sites = NULL;
    struct hb_costmodel m = model();
    CHECK(hb_report_local(&t, &m, 1, 10, 3, &rs, &sites) == 0);
    const struct hb_class_summary *c = &rs.cls[HB_OP_SEND];
    CHECK_EQ_U64(c->calls, 1600 + NP_SIZES * (NP_SIZES + 1) / 2);
    static const uint64_t want_size[HB_TOP_SIZES] = {32768, 1024, 100 + 37 * 81,
                                                     100 + 37 * 80};
    static const uint64_t want_calls[HB_TOP_SIZES] = {1000, 600, 82, 81};
    for (int k = 0; k < HB_TOP_SIZES; k++) {
        CHECK_EQ_U64(c->top_size[k], want_size[k]);
        CHECK_EQ_U64(c->top_size_calls[k], want_calls[k]);
    }
    /* buffer A: 501 hot calls at 1 KiB, R(1 KiB) once; none at 32 KiB */
    double want_a = 501 * 100.0 - 10250.0;
    CHECK_EQ_U64(c->hot_calls, 501 + (NP_SIZES * (NP_SIZES + 1) / 2 - 99));
    CHECK(close_to(c->saving_ns, want_a + np_saving()));
    CHECK_EQ_U64(rs.nsites, 2);
    if (rs.nsites == 2 && sites) {
        /* busiest first: B (3403 calls), then A */
        const struct hb_site_summary *a = &sites[1], *b = &sites[0];
        CHECK(strstr(a->name, "site_fn_a") && strstr(b->name, "site_fn_b"));
        CHECK_EQ_U64(a->calls, 1600);
        CHECK_EQ_U64(a->hot_calls, 501);
        CHECK(close_to(a->saving_ns, want_a));
        CHECK(a->ntop == 1 && a->top[0].size == 32768 &&
              a->top[0].uses == 1600 && a->top[0].hot_uses == 501 &&
              a->top[0].hot);
        CHECK(b->ntop == 1 && b->top[0].size == np_size(NP_SIZES - 1));
        CHECK(close_to(b->saving_ns, np_saving()));
    }

    /* two ranks alike: merged sizes add up, the most frequent is exact */
    struct hb_rank_summary two[2] = {rs, rs};
    const struct hb_site_summary *const sp[2] = {sites, sites};
    struct hb_report r;
    CHECK(hb_report_merge(&r, &no_sections, two, 2, sp, 10, 3) == 0);
    const struct hb_class_report *cr = &r.cls[HB_OP_SEND];
    CHECK(cr->freq_size_min == 32768 && cr->freq_size_max == 32768);
    CHECK_EQ_U64(cr->sum.top_size[1], 1024);
    CHECK_EQ_U64(cr->sum.top_size_calls[1], 1200);
    struct hb_report_context ctx = context();
    char *json = render(hb_report_render_json, &r, &ctx);
    CHECK(HAS(
        json,
        "\"top_sizes\": [{\"size\": 32768, \"calls\": 2000}, "
        "{\"size\": 1024, \"calls\": 1200}, {\"size\": 3097, \"calls\": 164}, "
        "{\"size\": 3060, \"calls\": 162}], \"distinct_sizes\": 84, "
        "\"other_size_calls\": 0"));
    free(json);
    char *text = render(hb_report_render_text, &r, &ctx);
    CHECK(
        HAS(text,
            "send sizes (84 distinct): 32 KiB x2000, 1 KiB x1200, 3097 B x164, "
            "3060 B x162\n"));
    free(text);
    hb_report_free(&r);
    free(sites);
    hb_tracker_destroy(&t);
}

/* ---- merging three synthetic ranks ------------------------------------------------- */

static void set_top(struct hb_class_summary *c, int n, const uint64_t *size,
                    const uint64_t *calls)
{
    for (int k = 0; k < n; k++) {
        c->top_size[k] = size[k];
        c->top_size_calls[k] = calls[k];
    }
}

static struct hb_site_summary site(const char *name, unsigned op,
                                   uint64_t calls, uint64_t max_reuse, int rank,
                                   int ntop, const uint64_t *uses)
{
    struct hb_site_summary s;
    memset(&s, 0, sizeof(s));
    snprintf(s.name, sizeof(s.name), "%s", name);
    s.op = op;
    s.ranks = 1;
    s.calls = calls;
    s.bytes = calls * 100;
    s.reuse_calls = calls / 2;
    s.hot_calls = calls / 4;
    s.buffers = (uint64_t)ntop + 1;
    s.hot_buffers = ntop > 0;
    s.max_reuse = max_reuse;
    s.saving_ns = 1000.0 * (rank + 1);
    s.ntop = (uint32_t)ntop;
    for (int k = 0; k < ntop; k++)
        s.top[k] = (struct hb_site_buffer){
            .addr = 0xa0 + 0x10 * (uint64_t)rank + (uint64_t)k,
            .size = 1024,
            .uses = uses[k],
            .hot_uses = uses[k] / 2,
            .rank = rank,
            .hot = uses[k] >= 50};
    return s;
}

#define QUOTE_NAME "x \"q\" \\ y\t"

struct synthetic {
    struct rank_record rk[3];
    struct hb_site_summary s0[3], s1[2], s2[2];
    const struct hb_site_summary *sites[3];
};

static void synthetic(struct synthetic *y)
{
    memset(y, 0, sizeof(*y));
    struct hb_class_summary *c;

    c = &y->rk[0].h.cls[HB_OP_SEND];
    *c = (struct hb_class_summary){.calls = 100,
                                   .bytes = 100000,
                                   .reuse_calls = 60,
                                   .hot_calls = 20,
                                   .untracked_calls = 1,
                                   .zero_calls = 5,
                                   .proc_null_calls = 5,
                                   .buffers = 30,
                                   .hot_buffers = 2,
                                   .max_reuse = 50,
                                   .saving_ns = 1000,
                                   .lookup_ns = 1800};
    set_top(c, 4, (uint64_t[]){1024, 64, 8, 4}, (uint64_t[]){67, 20, 2, 1});
    c = &y->rk[1].h.cls[HB_OP_SEND];
    *c = (struct hb_class_summary){.calls = 200,
                                   .bytes = 300000,
                                   .reuse_calls = 150,
                                   .hot_calls = 100,
                                   .proc_null_calls = 10,
                                   .buffers = 40,
                                   .hot_buffers = 3,
                                   .max_reuse = 120,
                                   .saving_ns = 5000,
                                   .lookup_ns = 3800};
    set_top(c, 2, (uint64_t[]){256, 1024}, (uint64_t[]){150, 40});
    c = &y->rk[2].h.cls[HB_OP_SEND];
    *c = (struct hb_class_summary){.calls = 80,
                                   .bytes = 5000,
                                   .reuse_calls = 20,
                                   .untracked_calls = 4,
                                   .zero_calls = 2,
                                   .buffers = 25,
                                   .max_reuse = 10,
                                   .lookup_ns = 1560};
    set_top(c, 4, (uint64_t[]){64, 1024, 32, 16}, (uint64_t[]){40, 10, 5, 3});
    c->distinct_sizes = HB_SIZES_EXACT; /* its size table overflowed */
    c->other_size_calls = 9;
    y->rk[0].h.cls[HB_OP_SEND].distinct_sizes = 4;
    y->rk[1].h.cls[HB_OP_SEND].distinct_sizes = 2;
    c = &y->rk[1].h.cls[HB_OP_PUT];
    *c = (struct hb_class_summary){.calls = 7,
                                   .bytes = 14336,
                                   .reuse_calls = 3,
                                   .buffers = 4,
                                   .max_reuse = 4,
                                   .lookup_ns = 140};
    set_top(c, 1, (uint64_t[]){2048}, (uint64_t[]){7});

    y->rk[0].h.table_entries = 30, y->rk[0].h.table_hot = 2,
    y->rk[0].h.table_memory = 1000000;
    y->rk[0].h.max_chain = 2, y->rk[0].h.sites = 5;
    y->rk[1].h.table_entries = 44, y->rk[1].h.table_hot = 3,
    y->rk[1].h.table_memory = 2000000;
    y->rk[1].h.max_chain = 4, y->rk[1].h.sites = 7,
    y->rk[1].h.site_overflow_calls = 11;
    y->rk[1].h.stopped = HB_STOP_FULL, y->rk[1].h.stopped_after_entries = 16;
    y->rk[1].h.stopped_after_calls = 500;
    y->rk[2].h.table_entries = 25, y->rk[2].h.table_memory = 1500000,
    y->rk[2].h.max_chain = 3;
    y->rk[2].h.sites = 2;
    y->rk[2].h.stopped = HB_STOP_ADAPTED, y->rk[2].h.stopped_after_entries = 40;
    y->rk[2].h.stopped_after_calls = 300;

    /* "main (a.c:10)" as a send on every rank and as a put on rank 0 */
    y->s0[0] = site("main (a.c:10)", HB_OP_SEND, 80, 50, 0, 3,
                    (uint64_t[]){50, 20, 5});
    y->s0[1] = site("main (a.c:10)", HB_OP_PUT, 3, 2, 0, 0, NULL);
    y->s0[2] = site(QUOTE_NAME, HB_OP_SEND, 1, 1, 0, 0, NULL);
    y->s1[0] = site("main (a.c:10)", HB_OP_SEND, 150, 120, 1, 2,
                    (uint64_t[]){120, 30});
    y->s1[1] = site("loop (b.c:5)", HB_OP_SEND, 40, 7, 1, 0, NULL);
    y->s2[0] = site("loop (b.c:5)", HB_OP_SEND, 2, 2, 2, 0, NULL);
    y->s2[1] =
        site("main (a.c:10)", HB_OP_SEND, 40, 10, 2, 1, (uint64_t[]){10});
    y->rk[0].h.nsites = 3, y->rk[1].h.nsites = 2, y->rk[2].h.nsites = 2;
    /* one-sided: rank 1's puts partly rerouted, a shared window, a failed peer */
    y->rk[1].h.cls[HB_OP_PUT].rerouted_calls = 5;
    y->s0[1].rerouted_calls = 2;
    y->rk[0].rma.windows = 1, y->rk[0].rma.windows_rdma = 1;
    y->rk[0].rma.ops_rdma = 5, y->rk[0].rma.bytes_rdma = 10240;
    y->rk[0].rma.ops_pmpi[HB_RMA_CONNECTING] = 2;
    y->rk[1].rma.windows = 2, y->rk[1].rma.windows_rdma = 1;
    y->rk[1].rma.windows_pmpi[HB_WIN_SHARED] = 1,
    y->rk[1].rma.ops_pmpi[HB_RMA_CONNECTING] = 1;
    y->rk[2].rdma.s.up = 1, y->rk[2].rdma.s.peers_failed = 1,
    y->rk[2].rdma.nfailed = 1, y->rk[2].rdma.s.imm_dropped = 2;
    y->rk[2].rdma.failed[0] =
        (struct hb_failed_peer){2, 0, "no answer to the connection request"};
    /* allgather: two ranks' communicators served, one on PMPI */
    y->rk[0].ag.comms = 2, y->rk[0].ag.comms_rdma = 1,
    y->rk[0].ag.comms_pmpi[HB_AGC_NO_RDMA] = 1;
    y->rk[0].ag.calls_rdma = 3, y->rk[0].ag.bytes_rdma = 3000,
    y->rk[0].ag.algos[HB_AG_RING_COPY] = 3;
    y->rk[1].ag.comms = 1, y->rk[1].ag.comms_rdma = 1,
    y->rk[1].ag.calls_rdma = 4;
    y->rk[1].ag.algos[HB_AG_RD_ZCOPY] = 4,
    y->rk[1].ag.calls_pmpi[HB_AGP_NONBLOCKING] = 2;
    y->rk[0].ag.writes = 9, y->rk[0].ag.ops = 9, y->rk[1].ag.writes = 16;
    y->rk[1].ag.ops = 16, y->rk[1].ag.imm_stray = 1;
    y->sites[0] = y->s0, y->sites[1] = y->s1, y->sites[2] = y->s2;
}

static void test_merge(void)
{
    struct synthetic y;
    struct hb_report r;
    synthetic(&y);
    CHECK(sizeof(struct rank_record) == hb_report_record_size(&layout));
    CHECK(hb_report_merge(&r, &layout, y.rk, 3, y.sites, 10, 3) == 0);
    CHECK(r.nranks == 3);

    const struct hb_class_report *s = &r.cls[HB_OP_SEND];
    CHECK_EQ_U64(s->ranks, 3);
    CHECK_EQ_U64(s->sum.calls, 380);
    CHECK_EQ_U64(s->sum.bytes, 405000);
    CHECK_EQ_U64(s->sum.reuse_calls, 230);
    CHECK_EQ_U64(s->sum.hot_calls, 120);
    CHECK_EQ_U64(s->sum.untracked_calls, 5);
    CHECK_EQ_U64(s->sum.zero_calls, 7);
    CHECK_EQ_U64(s->sum.proc_null_calls, 15);
    CHECK_EQ_U64(s->sum.buffers, 95);
    CHECK_EQ_U64(s->sum.hot_buffers, 5);
    CHECK_EQ_U64(s->sum.max_reuse, 120); /* the maximum, not a sum */
    CHECK(close_to(s->sum.saving_ns, 6000));
    CHECK(close_to(s->sum.lookup_ns, 7160));
    CHECK_EQ_U64(s->max_reuse_min, 10);
    CHECK_EQ_U64(s->max_reuse_max, 120);
    CHECK(close_to(s->max_reuse_avg, 60));
    CHECK_EQ_U64(s->freq_size_min, 64);
    CHECK_EQ_U64(s->freq_size_max, 1024);
    CHECK(close_to(s->freq_size_avg, (1024 + 256 + 64) / 3.0));
    /* merged top sizes: 256 x150 (pushes out rank 0's 4 x1), 1024 x(67+40+10),
     * 64 x(20+40), 32 x5 (pushes out 8 x2); 16 x3 does not fit */
    static const uint64_t want_size[HB_TOP_SIZES] = {256, 1024, 64, 32};
    static const uint64_t want_calls[HB_TOP_SIZES] = {150, 117, 60, 5};
    for (int k = 0; k < HB_TOP_SIZES; k++) {
        CHECK_EQ_U64(s->sum.top_size[k], want_size[k]);
        CHECK_EQ_U64(s->sum.top_size_calls[k], want_calls[k]);
    }
    /* reuse % over calls that named a buffer: 230 / (380 - 7 - 15) */
    CHECK(close_to(hb_reuse_pct(&s->sum), 100.0 * 230 / 358));

    const struct hb_class_report *p = &r.cls[HB_OP_PUT];
    CHECK_EQ_U64(p->ranks, 1); /* ranks without calls do not count */
    CHECK_EQ_U64(p->sum.calls, 7);
    CHECK(p->max_reuse_min == 4 && p->max_reuse_max == 4 &&
          close_to(p->max_reuse_avg, 4));
    CHECK(p->freq_size_min == 2048 && p->freq_size_max == 2048 &&
          close_to(p->freq_size_avg, 2048));
    CHECK(p->sum.top_size[0] == 2048 && p->sum.top_size_calls[0] == 7);
    const struct hb_class_report *g = &r.cls[HB_OP_GET];
    CHECK(g->ranks == 0 && g->sum.calls == 0 && g->max_reuse_max == 0 &&
          g->max_reuse_avg == 0);

    CHECK_EQ_U64(r.entries_total, 99);
    CHECK_EQ_U64(r.entries_max, 44);
    CHECK_EQ_U64(r.hot_entries_total, 5);
    CHECK_EQ_U64(r.memory_max, 2000000);
    CHECK_EQ_U64(r.max_chain, 4);
    CHECK_EQ_U64(r.ranks_adapted, 1);
    CHECK_EQ_U64(r.ranks_full, 1);
    /* per reason: rank 2 adapted after 40 buffers / 300 calls, rank 1 filled
     * up after 16 buffers / 500 calls */
    CHECK_EQ_U64(r.stopped_after_calls_min[0], 300);
    CHECK_EQ_U64(r.stopped_after_entries_min[0], 40);
    CHECK_EQ_U64(r.stopped_after_calls_min[1], 500);
    CHECK_EQ_U64(r.stopped_after_entries_min[1], 16);
    CHECK_EQ_U64(r.sites_total, 14);
    CHECK_EQ_U64(r.site_overflow_calls, 11);

    /* sites: same (op, name) merged, sorted by calls */
    CHECK_EQ_U64(r.nsites, 4);
    if (r.nsites == 4) {
        const struct hb_site_summary *m = &r.sites[0], *l = &r.sites[1],
                                     *mp = &r.sites[2], *q = &r.sites[3];
        CHECK(!strcmp(m->name, "main (a.c:10)") && m->op == HB_OP_SEND);
        CHECK_EQ_U64(m->ranks, 3);
        CHECK_EQ_U64(m->calls, 270);
        CHECK_EQ_U64(m->bytes, 27000);
        CHECK_EQ_U64(m->reuse_calls, 40 + 75 + 20);
        CHECK_EQ_U64(m->hot_calls, 20 + 37 + 10);
        CHECK_EQ_U64(m->buffers, 4 + 3 + 2);
        CHECK_EQ_U64(m->hot_buffers, 3);
        CHECK_EQ_U64(m->max_reuse, 120);
        CHECK(close_to(m->saving_ns, 1000 + 2000 + 3000));
        /* top buffers of all ranks by uses, capped at 3: 120 (rank 1), 50 (0), 30 (1) */
        CHECK_EQ_U64(m->ntop, 3);
        CHECK(m->top[0].uses == 120 && m->top[0].rank == 1 &&
              m->top[0].addr == 0xb0);
        CHECK(m->top[1].uses == 50 && m->top[1].rank == 0 &&
              m->top[1].addr == 0xa0);
        CHECK(m->top[2].uses == 30 && m->top[2].rank == 1 &&
              m->top[2].addr == 0xb1);
        CHECK(!strcmp(l->name, "loop (b.c:5)") && l->op == HB_OP_SEND);
        CHECK(l->ranks == 2 && l->calls == 42 && l->max_reuse == 7);
        /* same name, other class: its own site */
        CHECK(!strcmp(mp->name, "main (a.c:10)") && mp->op == HB_OP_PUT);
        CHECK(mp->ranks == 1 && mp->calls == 3);
        CHECK(!strcmp(q->name, QUOTE_NAME) && q->calls == 1);
    }
    for (size_t i = 1; i < r.nsites; i++)
        CHECK(r.sites[i - 1].calls >= r.sites[i].calls);

    /* rendering ------------------------------------------------------------ */
    struct hb_report_context ctx = context();
    cm.copy_routine = HB_COPY_PIECES; /* as timed on the emulated CPU */
    cm.routine_src = HB_COST_MEASURED;
    cm.probe_memcpy_ns = 128000;
    cm.probe_pieces_ns = 21500;
    char *text = render(hb_report_render_text, &r, &ctx);
    char line[1024];
    CHECK(HAS(
        text,
        "==== hotbuf buffer-reuse report: 3 rank(s), Test \"MPI\" 4.1, thread level "
        "MPI_THREAD_SINGLE ===="));
    line_of(text, "send ", line, sizeof(line));
    CHECK(HAS(line, " 380 "));
    CHECK(HAS(line, " 396 KiB ")); /* 405000 B */
    CHECK(HAS(line, " 95 "));
    CHECK(HAS(line, " 64.2%")); /* 230 / 358 */
    CHECK(HAS(line, " 10-120 (60) "));
    CHECK(HAS(line, " 64-1024 (448) "));
    CHECK(HAS(line, " 31.6%")); /* hot calls 120 / 380 */
    CHECK(HAS(line, " 6.0 us"));
    line_of(text, "put ", line, sizeof(line));
    CHECK(HAS(line, " 7 ") && HAS(line, " 4-4 (4) ") &&
          HAS(line, " 2048-2048 (2048) "));
    CHECK(HAS(
        text,
        "  send sizes (256 distinct): 256 B x150, 1 KiB x117, 64 B x60, 32 B x5; "
        "9 calls at sizes past the first 256 distinct (not itemized); 7 zero-byte, "
        "15 to MPI_PROC_NULL, 5 untracked"));
    CHECK(HAS(text, "call sites (busiest 4 of 14"));
    line_of(text, "  1 send ", line, sizeof(line));
    CHECK(HAS(line, " 270 ") && HAS(line, "main (a.c:10)"));
    CHECK(HAS(
        text,
        "buffers: rank 1 0xb0 1 KiB x120 hot, rank 0 0xa0 1 KiB x50 hot, rank 1 0xb1 1 KiB x30\n"));
    line_of(text, "  2 send ", line, sizeof(line));
    CHECK(HAS(line, " 42 ") && HAS(line, "loop (b.c:5)"));
    line_of(text, "  3 put ", line, sizeof(line));
    CHECK(HAS(line, "main (a.c:10)"));
    CHECK(
        HAS(text,
            "reuse table: 99 buffers tracked (at most 44 on one rank), 5 hot"));
    CHECK(HAS(text, "longest chain 4"));
    /* each stop line gives the numbers of the ranks it talks about: the
     * adapted rank stopped after 40 buffers / 300 calls, the full one after
     * 500 calls */
    CHECK(HAS(
        text,
        "stopped growing on 1 rank(s) by adaptation (under 20% hot, a chain of 3) "
        "after 40 buffers / 300 calls"));
    CHECK(HAS(text,
              "stopped growing on 1 rank(s) at its limit of 262144 buffers "
              "(HOTBUF_TABLE_MAX_ENTRIES) after 500 calls"));
    CHECK(HAS(text, "cost model: C 12 ns @128 B, 800 ns @8 KiB (user)"));
    CHECK(HAS(text, "hotbuf's copies: pieces (measured; 64 KiB in 128.0 us by "
                    "memcpy, 21.5 us in 4 KiB pieces)\n"));
    /* thresholds by hand: ceil(0.25 * R / (C - V)) */
    CHECK(HAS(
        text,
        "hot after (uses): 128 B never; 256 B 513; 512 B 86; 1.0 KiB 33; 2.0 KiB 15; "
        "4.0 KiB 7; 8.0 KiB 4;"));
    CHECK(HAS(text, " HOTBUF_HASH_BITS=20 ") &&
          HAS(text, " HOTBUF_REPORT=text"));
    CHECK(strchr(strchr(text, '*') ? strchr(text, '*') + 1 : "", '*') ==
          NULL); /* only "(* = ...)" */
    CHECK(HAS(text, "note: a \"quoted\" note \\ here\n"));
    CHECK(HAS(text, "==== end of hotbuf report ====\n"));
    line_of(text, "  3 put ", line, sizeof(line));
    CHECK(HAS(line, " 2 ")); /* rdma ops at that site */
    CHECK(HAS(
        text,
        "  rank 2 -> rank 0 on PMPI: no answer to the connection request\n"));
    CHECK(HAS(
        text,
        "one-sided: 3 window(s) x ranks, 2 with hotbuf's RDMA; on PMPI: shared 1\n"));
    CHECK(HAS(
        text,
        "  5 put/get moved by hotbuf's RDMA (10 KiB); hot ones left on PMPI: "
        "connecting 3\n"));
    CHECK(HAS(
        text,
        "allgather: 3 communicator(s) x ranks, 2 with hotbuf's RDMA; on PMPI: "
        "no_rdma 1\n  7 call(s) x ranks on hotbuf's RDMA (2.9 KiB received): "
        "rd_zcopy 4, ring_copy 3; left on MPI: nonblocking 2\n"
        "  25 write(s) in 25 RDMA operation(s); 1 stray immediate(s)\n"));
    CHECK(HAS(text, "  2 RDMA immediate(s) of no registered class dropped\n"));
    free(text);

    char *json = render(hb_report_render_json, &r, &ctx);
    if (!json_valid(json))
        fprintf(stderr, "invalid JSON:\n%s\n", json);
    CHECK(json_valid(json));
    CHECK(HAS(json, "\"hotbuf_report_version\": 1, \"ranks\": 3"));
    CHECK(HAS(json, "\"copy_routine\": \"pieces\", \"copy_routine_source\": "
                    "\"measured\", \"probe_memcpy_ns\": 128000.0, "
                    "\"probe_pieces_ns\": 21500.0}"));
    CHECK(HAS(json, "\"mpi_library\": \"Test \\\"MPI\\\" 4.1\""));
    CHECK(
        HAS(json,
            "\"send\": {\"calls\": 380, \"bytes\": 405000, \"buffers\": 95, "
            "\"reuse_calls\": 230, \"reuse_pct\": 64.246, \"hot_calls\": 120"));
    CHECK(HAS(
        json,
        "\"zero_byte_calls\": 7, \"proc_null_calls\": 15, \"rerouted_calls\": 0, "
        "\"ranks_with_calls\": 3"));
    CHECK(HAS(json,
              "\"max_reuse\": {\"min\": 10, \"max\": 120, \"avg\": 60.00}"));
    CHECK(HAS(
        json,
        "\"most_frequent_size\": {\"min\": 64, \"max\": 1024, \"avg\": 448.00}"));
    CHECK(HAS(
        json,
        "\"top_sizes\": [{\"size\": 256, \"calls\": 150}, {\"size\": 1024, \"calls\": "
        "117}, {\"size\": 64, \"calls\": 60}, {\"size\": 32, \"calls\": 5}], "
        "\"distinct_sizes\": 256, \"other_size_calls\": 9, "
        "\"estimated_saving_us\": 6.000, \"lookup_overhead_us\": 7.160"));
    CHECK(HAS(
        json,
        "\"name\": \"main (a.c:10)\", \"op\": \"send\", \"ranks\": 3, \"calls\": 270"));
    CHECK(HAS(
        json,
        "{\"rank\": 1, \"address\": \"0xb0\", \"size\": 1024, \"uses\": 120, "
        "\"hot_uses\": 60, \"hot\": true}"));
    CHECK(HAS(json, "\"name\": \"x \\\"q\\\" \\\\ y\\u0009\""));
    CHECK(HAS(json, "\"a \\\"quoted\\\" note \\\\ here\""));
    CHECK(HAS(json, "\"ranks_stopped_adapted\": 1, \"ranks_stopped_full\": 1"));
    CHECK(HAS(json, "\"sites_total\": 14, \"other_site_calls\": 11"));
    CHECK(HAS(json, "{\"size\": 4096, \"copy_ns\": 400.00, \"reg_us\": 10.250, "
                    "\"break_even_uses\": 27.0, \"threshold\": 7}"));
    CHECK(HAS(json, "{\"size\": 128, \"copy_ns\": 12.50, \"reg_us\": 10.250, "
                    "\"break_even_uses\": -1.0, \"threshold\": -1}"));
    CHECK(HAS(json, "{\"size\": 16384, ")); /* above the eager limit: */
    CHECK(strstr(json, "{\"size\": 16384, ") &&
          HAS(strstr(json, "{\"size\": 16384, "), "\"threshold\": -1}"));
    CHECK(HAS(json,
              "\"HOTBUF_HASH_BITS\": {\"value\": \"20\", \"default\": true}"));
    CHECK(HAS(
        json,
        "\"proc_null_calls\": 0, \"rerouted_calls\": 5, \"ranks_with_calls\": 1"));
    CHECK(HAS(json, "\"op\": \"put\", \"ranks\": 1, \"calls\": 3, ") &&
          HAS(strstr(json, "\"op\": \"put\", \"ranks\": 1, \"calls\": 3, "),
              "\"rerouted_calls\": 2, "));
    CHECK(HAS(json, "\"failed_peers\": [{\"rank\": 2, \"peer\": 0, \"reason\": "
                    "\"no answer to the connection request\"}]"));
    CHECK(HAS(
        json,
        "\"rma\": {\"windows\": 3, \"windows_rdma\": 2, \"windows_pmpi\": "
        "{\"shared\": 1, \"dynamic\": 0, \"intercomm\": 0, \"no_rdma\": 0, "
        "\"registration\": 0, \"multiple_worlds\": 0}, \"ops_rdma\": 5, \"bytes_rdma\": 10240"));
    CHECK(HAS(json,
              "\"ops_pmpi\": {\"datatype\": 0, \"intranode\": 0, \"self\": 0, "
              "\"connecting\": 3, "));
    CHECK(HAS(
        json,
        "\"allgather\": {\"comms\": 3, \"comms_rdma\": 2, \"comms_pmpi\": "
        "{\"intercomm\": 0, \"no_rdma\": 1, \"single_rank\": 0, "
        "\"multiple_worlds\": 0, \"intranode\": 0, \"unreachable\": 0, "
        "\"memory\": 0}, \"calls_rdma\": 7, \"bytes_rdma\": 3000, \"algorithms\": "
        "{\"rd_copy\": 0, \"rd_zcopy\": 4, \"ring_copy\": 3, \"ring_zcopy\": 0, "
        "\"direct\": 0, \"mcast\": 0}, "
        "\"calls_pmpi\": {\"comm\": 0, \"empty\": 0, \"nonblocking\": 2, "
        "\"threads\": 0, \"too_large\": 0, \"unregistered\": 0}, "
        "\"writes\": 25, \"ops\": 25, \"imm_stray\": 1, "
        "\"mc_nacks\": 0, \"mc_repairs\": 0, \"mc_stale\": 0}"));
    CHECK(HAS(json, "\"memmon_events\": 0, \"imm_dropped\": 2"));
    free(json);

    /* a value set by the user is starred in the text, not default in the JSON */
    hb_config_load(&cfg, bits18_env, no_warn, NULL);
    text = render(hb_report_render_text, &r, &ctx);
    json = render(hb_report_render_json, &r, &ctx);
    CHECK(HAS(text, " HOTBUF_HASH_BITS=18* "));
    CHECK(HAS(json,
              "\"HOTBUF_HASH_BITS\": {\"value\": \"18\", \"default\": false}"));
    CHECK(json_valid(json));
    free(text);
    free(json);
    hb_report_free(&r);
    CHECK(r.sites == NULL && r.nsites == 0);

    /* caps: 2 sites, 2 buffers per site */
    CHECK(hb_report_merge(&r, &layout, y.rk, 3, y.sites, 2, 2) == 0);
    CHECK_EQ_U64(r.nsites, 2);
    if (r.nsites == 2) {
        CHECK(r.sites[0].calls == 270 && r.sites[1].calls == 42);
        CHECK_EQ_U64(r.sites[0].ntop, 2);
        CHECK(r.sites[0].top[0].uses == 120 && r.sites[0].top[1].uses == 50);
    }
    hb_report_free(&r);

    /* no ranks at all: still a report */
    CHECK(hb_report_merge(&r, &layout, NULL, 0, NULL, 10, 3) == 0);
    CHECK(r.nranks == 0 && r.nsites == 0 && r.cls[HB_OP_SEND].sum.calls == 0);
    json = render(hb_report_render_json, &r, &ctx);
    text = render(hb_report_render_text, &r, &ctx);
    CHECK(json_valid(json));
    CHECK(HAS(text, "0 rank(s)"));
    free(json);
    free(text);
    hb_report_free(&r);
}

static void test_reuse_pct(void)
{
    struct hb_class_summary c;
    memset(&c, 0, sizeof(c));
    c.calls = 100, c.zero_calls = 10, c.proc_null_calls = 10,
    c.reuse_calls = 40;
    CHECK(close_to(hb_reuse_pct(&c), 50.0));
    c.zero_calls = 0, c.proc_null_calls = 0;
    CHECK(close_to(hb_reuse_pct(&c), 40.0));
    c.calls = 5, c.zero_calls = 3, c.proc_null_calls = 2, c.reuse_calls = 0;
    CHECK(hb_reuse_pct(&c) == 0); /* nothing named a buffer */
    memset(&c, 0, sizeof(c));
    CHECK(hb_reuse_pct(&c) == 0);
}

static void test_top_buffers(void)
{
    struct hb_site_buffer top[3];
    uint32_t n = 0;
    static const uint64_t uses[] = {5, 9, 1, 7, 9, 2, 10};
    for (size_t i = 0; i < sizeof(uses) / sizeof(uses[0]); i++) {
        struct hb_site_buffer b = {.addr = i, .uses = uses[i]};
        hb_top_buffers_insert(top, &n, 3, &b);
    }
    CHECK_EQ_U64(n, 3);
    CHECK(top[0].uses == 10 && top[1].uses == 9 && top[2].uses == 9);
    CHECK(top[1].addr == 1 && top[2].addr == 4); /* ties keep arrival order */
    n = 0;
    struct hb_site_buffer b = {.uses = 3};
    hb_top_buffers_insert(top, &n, 0, &b);
    CHECK_EQ_U64(n, 0);
}

/* ---- merging one rank at a time, with a bounded site table ------------ */

/* Rank by rank with room for 2 sites: rank 0's first two sites fill the
 * table; records of other sites are left out and counted; the two kept
 * stay exact (every rank's records of them folded in). */
static void test_merge_bounded(void)
{
    struct synthetic y;
    struct hb_report r;
    synthetic(&y);
    CHECK(hb_report_merge_begin(&r, &layout, 2, 3) == 0);
    for (int i = 0; i < 3; i++)
        hb_report_merge_rank(&r, &y.rk[i], y.sites[i], y.rk[i].h.nsites);
    hb_report_merge_end(&r, 10);
    CHECK(r.nranks == 3);
    CHECK_EQ_U64(r.cls[HB_OP_SEND].sum.calls, 380); /* classes: all ranks */
    CHECK(close_to(r.cls[HB_OP_SEND].max_reuse_avg, 60));
    CHECK_EQ_U64(r.nsites, 2);
    CHECK_EQ_U64(r.sites_left_out, 3); /* quote, loop x2 */
    CHECK_EQ_U64(r.site_calls_left_out, 43);
    if (r.nsites == 2) {
        CHECK(!strcmp(r.sites[0].name, "main (a.c:10)"));
        CHECK(r.sites[0].calls == 270 && r.sites[0].ranks == 3);
        CHECK(r.sites[0].ntop == 3 && r.sites[0].top[0].uses == 120);
        CHECK(r.sites[1].op == HB_OP_PUT && r.sites[1].calls == 3);
    }
    struct hb_report_context ctx = context();
    char *text = render(hb_report_render_text, &r, &ctx);
    char *json = render(hb_report_render_json, &r, &ctx);
    CHECK(HAS(text, "  3 site record(s) of ranks, 43 calls, left out: "
                    "rank 0 merges at most 2 distinct sites\n"));
    CHECK(json_valid(json));
    CHECK(HAS(json, "\"other_site_calls\": 11, \"sites_left_out\": 3, "
                    "\"site_calls_left_out\": 43,\n \"sites\": ["));
    free(text);
    free(json);
    hb_report_free(&r);

    /* with room for all: nothing left out, nothing said about it */
    CHECK(hb_report_merge(&r, &layout, y.rk, 3, y.sites, 10, 3) == 0);
    CHECK(r.sites_left_out == 0 && r.nsites == 4);
    text = render(hb_report_render_text, &r, &ctx);
    json = render(hb_report_render_json, &r, &ctx);
    CHECK(!strstr(text, "left out") && !strstr(json, "left_out"));
    free(text);
    free(json);
    hb_report_free(&r);
}

/* 100000 ranks folded one by one from the same two buffers: exact sums,
 * and rank 0 never holds more than one rank's record. */
static void test_merge_many_ranks(void)
{
    struct synthetic y;
    struct hb_report r;
    const int n = 100000;
    synthetic(&y);
    CHECK(hb_report_merge_begin(&r, &layout, 100, 3) == 0);
    for (int i = 0; i < n; i++)
        hb_report_merge_rank(&r, &y.rk[1], y.s1, 2);
    hb_report_merge_end(&r, 10);
    CHECK(r.nranks == n);
    CHECK_EQ_U64(r.cls[HB_OP_SEND].sum.calls, 200ull * n);
    CHECK_EQ_U64(r.cls[HB_OP_SEND].ranks, n);
    CHECK_EQ_U64(r.sites_total, 7ull * n);
    CHECK(r.nsites == 2 && r.sites_left_out == 0);
    if (r.nsites == 2) {
        CHECK_EQ_U64(r.sites[0].calls, 150ull * n);
        CHECK_EQ_U64(r.sites[0].ranks, n);
        CHECK_EQ_U64(r.sites[1].calls, 40ull * n);
    }
    hb_report_free(&r);
}

/* ---- gather plan: the arithmetic of a 10^6-rank gather, without MPI --- */

/* HOTBUF_REPORT_SITES at its maximum, at 2 .. 10^6 ranks: every MPI count
 * and displacement fits an int, every rank still sends all its sites,
 * and rank 0's memory stays under the budget. */
static void check_plan(int nranks)
{
    const size_t rec = hb_report_record_size(&layout);
    const size_t site = sizeof(struct hb_site_summary);
    struct hb_gather_plan p;
    CHECK(hb_report_gather_plan(nranks, rec, site, 1000, HB_REPORT_BUDGET,
                                &p) == 0);
    CHECK_EQ_U64(p.max_sites, 1000);
    CHECK((long long)p.msg_count >= (long long)(1000 * site));
    CHECK(p.msg_count > 0 && p.msg_count <= INT_MAX);
    CHECK(p.max_displ >= 0 && p.max_displ <= INT_MAX);
    CHECK(p.batch >= 1 && p.rounds >= 0 && p.rounds <= nranks);
    CHECK((long long)p.batch * p.rounds >= nranks - 1);
    CHECK((long long)p.batch * (p.rounds - 1) < nranks - 1 || nranks == 1);
    CHECK(p.site_cap >= p.max_sites);
    if (p.root_bytes > HB_REPORT_BUDGET)
        fprintf(stderr, "%d ranks: rank 0 needs %zu bytes\n", nranks,
                p.root_bytes);
    CHECK(p.root_bytes <= HB_REPORT_BUDGET);
    if (p.max_displ > INT_MAX || p.max_displ < 0)
        fprintf(stderr, "%d ranks: displacement %lld\n", nranks, p.max_displ);
}

static void test_gather_plan(void)
{
    /* The arithmetic this replaces: one Gatherv, rank i's sites at int
     * displacement i x 1000 x sizeof(site), overflowed from ~2270 ranks
     * (and rank 0 held every rank's record and sites: 2.8 GB at 3000). */
    CHECK((long long)2999 * 1000 * (long long)sizeof(struct hb_site_summary) >
          INT_MAX);
    static const int nranks[] = {1, 2, 3000, 100000, 1000000};
    for (size_t i = 0; i < sizeof(nranks) / sizeof(nranks[0]); i++)
        check_plan(nranks[i]);
}

int main(void)
{
    test_json_validator();
    test_local();
    test_local_sizes();
    test_local_sizes_per_call();
    test_merge();
    test_reuse_pct();
    test_top_buffers();
    test_merge_bounded();
    test_merge_many_ranks();
    test_gather_plan();
    return CHECK_DONE();
}
