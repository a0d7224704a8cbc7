/* Unit tests for the HOTBUF_* configuration (shim/config.c): defaults,
 * accepted spellings of every type, one warning per invalid value, the
 * format/is_default round trip, and the README's table of variables. */
#define _GNU_SOURCE

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config/config.h"

/* ---- injectable environment and warning sink ---------------------------- */

#define MAX_ENV 64
#define MAX_WARN 32

static const char *env_name[MAX_ENV], *env_value[MAX_ENV];
static int env_n;

static const char *fake_getenv(const char *name)
{
    for (int i = 0; i < env_n; i++)
        if (!strcmp(env_name[i], name))
            return env_value[i];
    return NULL;
}

static void env_clear(void)
{
    env_n = 0;
}

static void env_set(const char *name, const char *value)
{
    env_name[env_n] = name;
    env_value[env_n] = value;
    env_n++;
}

struct warnings {
    int n;
    char line[MAX_WARN][512];
};

static void collect_warn(const char *line, void *ctx)
{
    struct warnings *w = ctx;
    if (w->n < MAX_WARN)
        snprintf(w->line[w->n], sizeof(w->line[0]), "%s", line);
    w->n++;
}

/* Loads with the current fake environment; cfg is poisoned first so a field
 * the loader forgets to set cannot pass by accident. */
static int load(struct hb_config *cfg, struct warnings *w)
{
    memset(cfg, 0xA5, sizeof(*cfg));
    memset(w, 0, sizeof(*w));
    return hb_config_load(cfg, fake_getenv, collect_warn, w);
}

static const struct hb_var_desc *var(const char *name)
{
    for (size_t i = 0; i < hb_var_count; i++)
        if (!strcmp(hb_var_table[i].name, name))
            return &hb_var_table[i];
    fprintf(stderr, "no variable %s\n", name);
    return NULL;
}

static void format(const struct hb_config *cfg, const char *name, char *buf,
                   size_t len)
{
    const struct hb_var_desc *d = var(name);
    buf[0] = 0;
    if (d)
        hb_config_format(cfg, d, buf, len);
}

/* ---- defaults -------------------------------------------------------------- */

/* The formatted default of every variable.  A variable added to
 * config_vars.def without a row here fails the test. */
static const struct {
    const char *name, *formatted;
} expected_defaults[] = {
    {"HOTBUF_ENABLE", "1"},
    {"HOTBUF_HASH_BITS", "20"},
    {"HOTBUF_TABLE_MAX_ENTRIES", "262144"},
    {"HOTBUF_MIN_SIZE", "128"},
    {"HOTBUF_EAGER_LIMIT", "8192"},
    {"HOTBUF_SPECULATIVE", "0.25"},
    {"HOTBUF_THRESHOLD", "0"},
    {"HOTBUF_COPY_NS_PER_KB", "auto"},
    {"HOTBUF_COPY", "auto"},
    {"HOTBUF_LOOKUP_NS", "auto"},
    {"HOTBUF_REG_BASE_US", "auto"},
    {"HOTBUF_REG_PAGE_US", "auto"},
    {"HOTBUF_ADAPT", "1"},
    {"HOTBUF_ADAPT_HOT_PCT", "20"},
    {"HOTBUF_ADAPT_CHAIN", "3"},
    {"HOTBUF_CALLSITE_DEPTH", "1"},
    {"HOTBUF_MAX_SITES", "4096"},
    {"HOTBUF_REPORT", "text"},
    {"HOTBUF_REPORT_FILE", ""},
    {"HOTBUF_REPORT_SITES", "10"},
    {"HOTBUF_REPORT_BUFFERS", "3"},
    {"HOTBUF_DEVICE", ""},
    {"HOTBUF_PORT", "1"},
    {"HOTBUF_REGCACHE_MAX_ENTRIES", "4096"},
    {"HOTBUF_REGCACHE_MAX_BYTES", "0"},
    {"HOTBUF_MEMMON", "on"},
    {"HOTBUF_RMA", "1"},
    {"HOTBUF_INTRANODE", "0"},
    {"HOTBUF_CONNECT_TIMEOUT", "60"},
    {"HOTBUF_ALLGATHER", "1"},
    {"HOTBUF_AG_ZCOPY", "131072"},
    {"HOTBUF_AG_DIRECT", "0"},
    {"HOTBUF_AG_CHUNK", "0"},
    {"HOTBUF_AG_RING", "131072"},
    {"HOTBUF_AG_MCAST", "0"},
    {"HOTBUF_AG_MCAST_TIMEOUT", "0.2"},
    {"HOTBUF_AG_BUFFER", "524288"},
    {"HOTBUF_P2P", "1"},
    {"HOTBUF_P2P_PULL", "auto"},
    {"HOTBUF_P2P_RING", "0"},
    {"HOTBUF_P2P_PULL_NS", "1000"},
    {"HOTBUF_P2P_IDLE", "65536"},
    {"HOTBUF_ALLOC_MEM", "4194304"},
    {"HOTBUF_P2P_RNDV", "1"},
    {"HOTBUF_P2P_RNDV_MIN", "0"},
};
#define NDEFAULTS (sizeof(expected_defaults) / sizeof(expected_defaults[0]))

static void test_defaults(void)
{
    struct hb_config cfg;
    struct warnings w;
    env_clear();
    CHECK_EQ_U64(load(&cfg, &w), 0);
    CHECK_EQ_U64(w.n, 0);

    /* Typed fields, straight from the struct. */
    CHECK(cfg.enable == 1);
    CHECK(cfg.hash_bits == 20);
    CHECK_EQ_U64(cfg.table_max, 262144);
    CHECK_EQ_U64(cfg.min_size, 128);
    CHECK_EQ_U64(cfg.eager_limit, 8192);
    CHECK(cfg.speculative == 0.25);
    CHECK(cfg.threshold == 0);
    CHECK(cfg.copy_ns_per_kb == -1);
    CHECK(cfg.lookup_ns == -1);
    CHECK(cfg.reg_base_us == -1);
    CHECK(cfg.reg_page_us == -1);
    CHECK(cfg.adapt == 1);
    CHECK(cfg.adapt_hot_pct == 20);
    CHECK(cfg.adapt_chain == 3);
    CHECK(cfg.callsite_depth == 1);
    CHECK(cfg.max_sites == 4096);
    CHECK(cfg.report == HB_REPORT_TEXT);
    CHECK(cfg.report_file && !strcmp(cfg.report_file, ""));
    CHECK(cfg.report_sites == 10);
    CHECK(cfg.report_buffers == 3);
    CHECK(cfg.device && !strcmp(cfg.device, ""));
    CHECK(cfg.port == 1);
    CHECK(cfg.regcache_entries == 4096);
    CHECK_EQ_U64(cfg.regcache_bytes, 0);
    CHECK(cfg.memmon == HB_MEMMON_ON);
    CHECK(cfg.copy == HB_COPY_AUTO);
    CHECK(cfg.rma == 1);
    CHECK(cfg.intranode == 0);
    CHECK(cfg.connect_timeout == 60);
    CHECK(cfg.allgather == 1);
    CHECK_EQ_U64(cfg.ag_zcopy, 131072);
    CHECK_EQ_U64(cfg.ag_ring, 131072);
    CHECK_EQ_U64(cfg.ag_buffer, 524288);

    /* Every table row has an expectation, and each formats as expected. */
    CHECK_EQ_U64(hb_var_count, NDEFAULTS);
    for (size_t i = 0; i < hb_var_count; i++) {
        const struct hb_var_desc *d = &hb_var_table[i];
        size_t k = 0;
        while (k < NDEFAULTS && strcmp(expected_defaults[k].name, d->name))
            k++;
        if (k == NDEFAULTS) {
            fprintf(stderr, "no expected default for %s\n", d->name);
            CHECK(k < NDEFAULTS);
            continue;
        }
        char buf[256];
        hb_config_format(&cfg, d, buf, sizeof(buf));
        if (strcmp(buf, expected_defaults[k].formatted))
            fprintf(stderr, "%s formats as \"%s\"\n", d->name, buf);
        CHECK(!strcmp(buf, expected_defaults[k].formatted));
        CHECK(hb_config_is_default(&cfg, d));
        CHECK(d->help && d->help[0]);
        CHECK(!strncmp(d->name, "HOTBUF_", 7));
    }
}

/* ---- valid values ------------------------------------------------------------ */

/* Loads NAME=value alone; returns the formatted result ("" on a warning). */
static int load_one(const char *name, const char *value, struct hb_config *cfg,
                    struct warnings *w)
{
    env_clear();
    env_set(name, value);
    return load(cfg, w);
}

static void expect_valid(const char *name, const char *value,
                         const char *formatted)
{
    struct hb_config cfg;
    struct warnings w;
    int bad = load_one(name, value, &cfg, &w);
    char buf[256];
    format(&cfg, name, buf, sizeof(buf));
    if (bad || w.n || strcmp(buf, formatted))
        fprintf(
            stderr,
            "%s=\"%s\": %d invalid, %d warnings, value \"%s\" (want \"%s\")\n",
            name, value, bad, w.n, buf, formatted);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(w.n, 0);
    CHECK(!strcmp(buf, formatted));
}

static void test_valid(void)
{
    struct hb_config cfg;
    struct warnings w;

    /* bool words, any case */
    static const char *const yes[] = {"1",   "yes", "on",  "true",
                                      "YES", "On",  "True"};
    static const char *const no[] = {"0",  "no",  "off",  "false",
                                     "NO", "Off", "FALSE"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        expect_valid("HOTBUF_ADAPT", yes[i], "1");
        expect_valid("HOTBUF_ENABLE", yes[i], "1");
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        expect_valid("HOTBUF_ADAPT", no[i], "0");
        expect_valid("HOTBUF_ENABLE", no[i], "0");
    }
    load_one("HOTBUF_ENABLE", "off", &cfg, &w);
    CHECK(cfg.enable == 0);

    /* int, inclusive bounds */
    expect_valid("HOTBUF_HASH_BITS", "8", "8");
    expect_valid("HOTBUF_HASH_BITS", "28", "28");
    expect_valid("HOTBUF_HASH_BITS", "16", "16");
    load_one("HOTBUF_HASH_BITS", "12", &cfg, &w);
    CHECK(cfg.hash_bits == 12);
    expect_valid("HOTBUF_THRESHOLD", "2147483647", "2147483647");
    expect_valid("HOTBUF_CALLSITE_DEPTH", "0", "0");
    expect_valid("HOTBUF_MAX_SITES", "65535",
                 "65535"); /* site ids are 16 bits */

    /* size, with binary suffixes in either case */
    expect_valid("HOTBUF_EAGER_LIMIT", "8K", "8192");
    expect_valid("HOTBUF_EAGER_LIMIT", "16k", "16384");
    expect_valid("HOTBUF_EAGER_LIMIT", "1M", "1048576");
    expect_valid("HOTBUF_EAGER_LIMIT", "1G", "1073741824");
    expect_valid("HOTBUF_EAGER_LIMIT", "4096", "4096");
    expect_valid("HOTBUF_MIN_SIZE", "0", "0");
    expect_valid("HOTBUF_MIN_SIZE", "1K", "1024");
    expect_valid("HOTBUF_MIN_SIZE", "2KiB", "2048");
    load_one("HOTBUF_EAGER_LIMIT", "64K", &cfg, &w);
    CHECK_EQ_U64(cfg.eager_limit, 65536);
    /* an entry count: a plain integer */
    expect_valid("HOTBUF_TABLE_MAX_ENTRIES", "16", "16");
    expect_valid("HOTBUF_TABLE_MAX_ENTRIES", "268435456", "268435456");
    load_one("HOTBUF_TABLE_MAX_ENTRIES", "1048576", &cfg, &w);
    CHECK_EQ_U64(cfg.table_max, 1048576);

    /* double */
    expect_valid("HOTBUF_SPECULATIVE", "0.5", "0.5");
    expect_valid("HOTBUF_SPECULATIVE", "0.001", "0.001");
    expect_valid("HOTBUF_SPECULATIVE", "16", "16");
    expect_valid("HOTBUF_ADAPT_HOT_PCT", "100", "100");
    load_one("HOTBUF_SPECULATIVE", "0.125", &cfg, &w);
    CHECK(cfg.speculative == 0.125);

    /* enum, case-insensitive */
    static const struct {
        const char *text;
        enum hb_report_mode mode;
        const char *formatted;
    } modes[] = {
        {"text", HB_REPORT_TEXT, "text"}, {"json", HB_REPORT_JSON, "json"},
        {"both", HB_REPORT_BOTH, "both"}, {"off", HB_REPORT_OFF, "off"},
        {"JSON", HB_REPORT_JSON, "json"}, {"Both", HB_REPORT_BOTH, "both"},
        {"html", HB_REPORT_HTML, "html"}, {"OFF", HB_REPORT_OFF, "off"},
        {"Text", HB_REPORT_TEXT, "text"},
    };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        expect_valid("HOTBUF_REPORT", modes[i].text, modes[i].formatted);
        load_one("HOTBUF_REPORT", modes[i].text, &cfg, &w);
        CHECK(cfg.report == (int)modes[i].mode);
    }

    /* string: taken as is */
    expect_valid("HOTBUF_REPORT_FILE", "/tmp/hotbuf-report",
                 "/tmp/hotbuf-report");
    expect_valid("HOTBUF_DEVICE", "rxe0", "rxe0");
    load_one("HOTBUF_DEVICE", "mlx5_0", &cfg, &w);
    CHECK(cfg.device && !strcmp(cfg.device, "mlx5_0"));

    /* "auto" for the cost doubles -> -1; numbers too */
    static const char *const cost_vars[] = {
        "HOTBUF_COPY_NS_PER_KB", "HOTBUF_LOOKUP_NS", "HOTBUF_REG_BASE_US",
        "HOTBUF_REG_PAGE_US"};
    for (size_t i = 0; i < 4; i++) {
        expect_valid(cost_vars[i], "auto", "auto");
        expect_valid(cost_vars[i], "AUTO", "auto");
        expect_valid(cost_vars[i], "150", "150");
    }
    load_one("HOTBUF_COPY_NS_PER_KB", "Auto", &cfg, &w);
    CHECK(cfg.copy_ns_per_kb == -1);
    load_one("HOTBUF_REG_BASE_US", "2.5", &cfg, &w);
    CHECK(cfg.reg_base_us == 2.5);
    load_one("HOTBUF_LOOKUP_NS", "0", &cfg, &w);
    CHECK(cfg.lookup_ns == 0);

    /* Several valid values at once all land. */
    env_clear();
    env_set("HOTBUF_HASH_BITS", "24");
    env_set("HOTBUF_EAGER_LIMIT", "32K");
    env_set("HOTBUF_REPORT", "both");
    env_set("HOTBUF_ADAPT", "no");
    CHECK_EQ_U64(load(&cfg, &w), 0);
    CHECK(cfg.hash_bits == 24 && cfg.eager_limit == 32768 &&
          cfg.report == HB_REPORT_BOTH && cfg.adapt == 0);
    CHECK(cfg.min_size == 128 &&
          cfg.speculative == 0.25); /* untouched ones keep defaults */
}

/* ---- invalid values ---------------------------------------------------------- */

/* NAME=value must give exactly one warning naming the variable, quoting the
 * value, stating the accepted range (range_text) and the default, and leave
 * the default in place. */
static void expect_invalid(const char *name, const char *value,
                           const char *range_text)
{
    struct hb_config cfg, def;
    struct warnings w, wd;
    int bad = load_one(name, value, &cfg, &w);
    env_clear();
    load(&def, &wd);
    const struct hb_var_desc *d = var(name);
    if (!d) {
        CHECK(d != NULL);
        return;
    }
    char quoted[256], got[256], want[256], with_default[256];
    snprintf(quoted, sizeof(quoted), "\"%s\"", value);
    snprintf(with_default, sizeof(with_default), "default %s", d->def);
    hb_config_format(&cfg, d, got, sizeof(got));
    hb_config_format(&def, d, want, sizeof(want));
    int ok = bad == 1 && w.n == 1 && strstr(w.line[0], name) &&
             strstr(w.line[0], quoted) && strstr(w.line[0], range_text) &&
             strstr(w.line[0], with_default) && !strcmp(got, want) &&
             hb_config_is_default(&cfg, d);
    if (!ok)
        fprintf(
            stderr,
            "%s=\"%s\": %d invalid, %d warning(s): \"%s\"; value \"%s\" (default \"%s\")\n",
            name, value, bad, w.n, w.n ? w.line[0] : "", got, want);
    CHECK_EQ_U64(bad, 1);
    CHECK_EQ_U64(w.n, 1);
    CHECK(w.n >= 1 && strstr(w.line[0], name));
    CHECK(w.n >= 1 && strstr(w.line[0], quoted));
    CHECK(w.n >= 1 && strstr(w.line[0], range_text));
    CHECK(w.n >= 1 && strstr(w.line[0], with_default));
    CHECK(w.n >= 1 && !strchr(w.line[0], '\n')); /* one line */
    CHECK(!strcmp(got, want));
    CHECK(hb_config_is_default(&cfg, d));
}

static void test_invalid(void)
{
    /* int */
    expect_invalid("HOTBUF_HASH_BITS", "abc", "8..28"); /* non-numeric */
    expect_invalid("HOTBUF_HASH_BITS", "", "8..28");    /* empty */
    expect_invalid("HOTBUF_HASH_BITS", "29", "8..28");  /* above range */
    expect_invalid("HOTBUF_HASH_BITS", "7", "8..28");   /* below range */
    expect_invalid("HOTBUF_HASH_BITS", "2.5", "8..28"); /* fractional int */
    expect_invalid("HOTBUF_HASH_BITS", "20x", "8..28"); /* trailing junk */
    expect_invalid("HOTBUF_HASH_BITS", "8K",
                   "8..28"); /* suffix only for sizes */
    expect_invalid("HOTBUF_THRESHOLD", "2147483648", "0..2147483647");
    expect_invalid("HOTBUF_THRESHOLD", "-1", "0..2147483647");
    expect_invalid("HOTBUF_P2P_IDLE", "-1", "0..2147483647");
    expect_invalid("HOTBUF_P2P_PULL_NS", "-5", "0..1e+09");
    expect_invalid("HOTBUF_P2P_IDLE", "64K", "0..2147483647"); /* a count */
    expect_invalid("HOTBUF_ADAPT_CHAIN", "1", "2..1000000");
    expect_invalid("HOTBUF_MAX_SITES", "65536", "16..65535");
    expect_invalid("HOTBUF_TABLE_MAX_ENTRIES", "8", "16..268435456");
    expect_invalid("HOTBUF_TABLE_MAX_ENTRIES", "268435457", "16..268435456");
    expect_invalid("HOTBUF_TABLE_MAX_ENTRIES", "1M",
                   "16..268435456"); /* a count, not a size */
    /* size */
    expect_invalid("HOTBUF_MIN_SIZE", "1.5", "0..1073741824");
    expect_invalid("HOTBUF_MIN_SIZE", "8Q", "0..1073741824");
    expect_invalid("HOTBUF_MIN_SIZE", "8KX", "0..1073741824");
    expect_invalid("HOTBUF_MIN_SIZE", "-1", "0..1073741824");
    expect_invalid("HOTBUF_MIN_SIZE", "1.5K1", "0..1073741824");
    expect_invalid("HOTBUF_EAGER_LIMIT", "2G", "1..1073741824");
    expect_invalid("HOTBUF_EAGER_LIMIT", "0", "1..1073741824");
    expect_invalid("HOTBUF_EAGER_LIMIT", "lots", "1..1073741824");
    /* double */
    expect_invalid("HOTBUF_SPECULATIVE", "auto",
                   "0.001..16"); /* "auto" not allowed here */
    expect_invalid("HOTBUF_SPECULATIVE", "0", "0.001..16");
    expect_invalid("HOTBUF_SPECULATIVE", "17", "0.001..16");
    expect_invalid("HOTBUF_SPECULATIVE", "nan", "0.001..16");
    expect_invalid("HOTBUF_SPECULATIVE", "0.25.", "0.001..16");
    expect_invalid("HOTBUF_ADAPT_HOT_PCT", "100.5", "0..100");
    expect_invalid("HOTBUF_COPY_NS_PER_KB", "0", "0.001..1e+09");
    expect_invalid("HOTBUF_COPY_NS_PER_KB", "fast", "auto or a number");
    expect_invalid("HOTBUF_COPY", "rep", "auto, memcpy or pieces");
    expect_invalid("HOTBUF_LOOKUP_NS", "-5", "auto or a number in 0..1e+09");
    /* bool */
    expect_invalid("HOTBUF_ENABLE", "2", "0 or 1");
    expect_invalid("HOTBUF_ENABLE", "maybe", "0 or 1");
    expect_invalid("HOTBUF_ADAPT", "", "0 or 1");
    /* enum */
    expect_invalid("HOTBUF_REPORT", "xml", "off, text, json, both or html");
    expect_invalid("HOTBUF_REPORT", "texts", "off, text, json, both or html");
    expect_invalid("HOTBUF_REPORT", "1", "off, text, json, both or html");

    /* Counting: three bad values among good ones -> 3, one line each. */
    struct hb_config cfg;
    struct warnings w;
    env_clear();
    env_set("HOTBUF_HASH_BITS", "99");
    env_set("HOTBUF_EAGER_LIMIT", "16K");
    env_set("HOTBUF_REPORT", "yaml");
    env_set("HOTBUF_ADAPT", "off");
    env_set("HOTBUF_SPECULATIVE", "x");
    CHECK_EQ_U64(load(&cfg, &w), 3);
    CHECK_EQ_U64(w.n, 3);
    int seen_bits = 0, seen_report = 0, seen_spec = 0;
    for (int i = 0; i < w.n && i < MAX_WARN; i++) {
        seen_bits += strstr(w.line[i], "HOTBUF_HASH_BITS=\"99\"") != NULL;
        seen_report += strstr(w.line[i], "HOTBUF_REPORT=\"yaml\"") != NULL;
        seen_spec += strstr(w.line[i], "HOTBUF_SPECULATIVE=\"x\"") != NULL;
    }
    CHECK(seen_bits == 1 && seen_report == 1 && seen_spec == 1);
    CHECK(cfg.hash_bits == 20 && cfg.report == HB_REPORT_TEXT &&
          cfg.speculative == 0.25);
    CHECK(cfg.eager_limit == 16384 && cfg.adapt == 0);
}

/* ---- format / is_default round trip -------------------------------------------- */

/* A valid non-default value per variable. */
static const struct {
    const char *name, *value;
} non_defaults[] = {
    {"HOTBUF_ENABLE", "0"},
    {"HOTBUF_HASH_BITS", "18"},
    {"HOTBUF_TABLE_MAX_ENTRIES", "1048576"},
    {"HOTBUF_MIN_SIZE", "64"},
    {"HOTBUF_EAGER_LIMIT", "12K"},
    {"HOTBUF_SPECULATIVE", "0.5"},
    {"HOTBUF_THRESHOLD", "100"},
    {"HOTBUF_COPY_NS_PER_KB", "123.5"},
    {"HOTBUF_LOOKUP_NS", "20"},
    {"HOTBUF_REG_BASE_US", "10"},
    {"HOTBUF_REG_PAGE_US", "0.25"},
    {"HOTBUF_ADAPT", "no"},
    {"HOTBUF_ADAPT_HOT_PCT", "12.5"},
    {"HOTBUF_ADAPT_CHAIN", "5"},
    {"HOTBUF_CALLSITE_DEPTH", "3"},
    {"HOTBUF_MAX_SITES", "100"},
    {"HOTBUF_REPORT", "JSON"},
    {"HOTBUF_REPORT_FILE", "/tmp/prefix"},
    {"HOTBUF_REPORT_SITES", "20"},
    {"HOTBUF_REPORT_BUFFERS", "5"},
    {"HOTBUF_DEVICE", "rxe0"},
    {"HOTBUF_PORT", "2"},
    {"HOTBUF_REGCACHE_MAX_ENTRIES", "64"},
    {"HOTBUF_REGCACHE_MAX_BYTES", "64M"},
    {"HOTBUF_MEMMON", "None"},
    {"HOTBUF_COPY", "Pieces"},
    {"HOTBUF_RMA", "0"},
    {"HOTBUF_INTRANODE", "1"},
    {"HOTBUF_CONNECT_TIMEOUT", "2.5"},
    {"HOTBUF_ALLGATHER", "0"},
    {"HOTBUF_AG_ZCOPY", "4K"},
    {"HOTBUF_AG_DIRECT", "2K"},
    {"HOTBUF_AG_CHUNK", "16K"},
    {"HOTBUF_AG_RING", "1M"},
    {"HOTBUF_AG_MCAST", "32K"},
    {"HOTBUF_AG_MCAST_TIMEOUT", "0.05"},
    {"HOTBUF_AG_BUFFER", "64K"},
    {"HOTBUF_P2P", "0"},
    {"HOTBUF_P2P_PULL", "all"},
    {"HOTBUF_P2P_RING", "1"},
    {"HOTBUF_P2P_PULL_NS", "250"},
    {"HOTBUF_P2P_IDLE", "100"},
    {"HOTBUF_ALLOC_MEM", "0"},
    {"HOTBUF_P2P_RNDV", "0"},
    {"HOTBUF_P2P_RNDV_MIN", "65536"},
};
#define NNONDEF (sizeof(non_defaults) / sizeof(non_defaults[0]))

static void test_round_trip(void)
{
    struct hb_config cfg, again, def;
    struct warnings w;
    char text[NNONDEF][256];

    env_clear();
    load(&def, &w);
    CHECK_EQ_U64(NNONDEF, hb_var_count);
    for (size_t i = 0; i < NNONDEF; i++)
        env_set(non_defaults[i].name, non_defaults[i].value);
    CHECK_EQ_U64(load(&cfg, &w), 0);
    CHECK_EQ_U64(w.n, 0);
    for (size_t i = 0; i < NNONDEF; i++) {
        const struct hb_var_desc *d = var(non_defaults[i].name);
        if (!d) {
            CHECK(d != NULL);
            continue;
        }
        CHECK(!hb_config_is_default(&cfg, d));
        hb_config_format(&cfg, d, text[i], sizeof(text[i]));
        char dtext[256];
        hb_config_format(&def, d, dtext, sizeof(dtext));
        CHECK(strcmp(text[i], dtext) != 0);
    }
    /* Formatted values load back to the same values, without warnings. */
    env_clear();
    for (size_t i = 0; i < NNONDEF; i++)
        env_set(non_defaults[i].name, text[i]);
    CHECK_EQ_U64(load(&again, &w), 0);
    CHECK_EQ_U64(w.n, 0);
    for (size_t i = 0; i < NNONDEF; i++) {
        const struct hb_var_desc *d = var(non_defaults[i].name);
        char buf[256];
        if (!d)
            continue;
        hb_config_format(&again, d, buf, sizeof(buf));
        if (strcmp(buf, text[i]))
            fprintf(stderr, "%s: \"%s\" reloads as \"%s\"\n", d->name, text[i],
                    buf);
        CHECK(!strcmp(buf, text[i]));
        CHECK(!hb_config_is_default(&again, d));
    }
    CHECK_EQ_U64(again.table_max, 1048576);
    CHECK_EQ_U64(again.eager_limit, 12288);
    CHECK(again.copy_ns_per_kb == 123.5 && again.report == HB_REPORT_JSON);

    /* Defaults written another way still count as defaults. */
    env_clear();
    env_set("HOTBUF_EAGER_LIMIT", "8192");
    env_set("HOTBUF_REPORT", "TEXT");
    env_set("HOTBUF_ENABLE", "yes");
    env_set("HOTBUF_COPY_NS_PER_KB", "auto");
    env_set("HOTBUF_SPECULATIVE", "0.250");
    CHECK_EQ_U64(load(&cfg, &w), 0);
    for (size_t i = 0; i < hb_var_count; i++) {
        CHECK(hb_config_is_default(&cfg, &hb_var_table[i]));
        /* and the defaults' own formatted text reloads to the default */
    }
    char dtexts[64][256];
    env_clear();
    for (size_t i = 0; i < hb_var_count && i < 64; i++) {
        hb_config_format(&def, &hb_var_table[i], dtexts[i], sizeof(dtexts[i]));
        if (hb_var_table[i].type != HB_VAR_STRING)
            env_set(hb_var_table[i].name, dtexts[i]);
    }
    CHECK_EQ_U64(load(&cfg, &w), 0);
    for (size_t i = 0; i < hb_var_count; i++)
        CHECK(hb_config_is_default(&cfg, &hb_var_table[i]));
}

/* ---- README ------------------------------------------------------------------ */

/* 1 if tok occurs in line as a whole token (not inside a longer number or word). */
static int has_token(const char *line, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = strstr(line, tok); p; p = strstr(p + 1, tok)) {
        char before = p == line ? ' ' : p[-1], after = p[n];
        int word_before = before == '_' || before == '.' ||
                          (before >= '0' && before <= '9') ||
                          ((before | 0x20) >= 'a' && (before | 0x20) <= 'z');
        int word_after = after == '_' || (after >= '0' && after <= '9') ||
                         ((after | 0x20) >= 'a' && (after | 0x20) <= 'z') ||
                         (after == '.' && p[n + 1] >= '0' && p[n + 1] <= '9');
        if (!word_before && !word_after)
            return 1;
    }
    return 0;
}

static void test_readme(void)
{
    const char *path = HB_SOURCE_DIR "/README.md";
    FILE *f = fopen(path, "r");
    if (!f)
        fprintf(
            stderr,
            "%s: cannot open (the README must document every HOTBUF_* variable)\n",
            path);
    CHECK(f != NULL); /* a missing README is a failure, not a skip */
    if (!f)
        return;
    struct hb_config def;
    struct warnings w;
    env_clear();
    load(&def, &w);
    int *named = calloc(hb_var_count, sizeof(int)),
        *with_default = calloc(hb_var_count, sizeof(int));
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        for (size_t i = 0; i < hb_var_count; i++) {
            const struct hb_var_desc *d = &hb_var_table[i];
            if (!has_token(line, d->name))
                continue;
            named[i] = 1;
            char formatted[256];
            hb_config_format(&def, d, formatted, sizeof(formatted));
            /* An empty default is written as "(empty)", "" or "unset". */
            if (!d->def[0]
                    ? strstr(line, "empty") || strstr(line, "\"\"") ||
                          strstr(line, "unset")
                    : has_token(line, d->def) || has_token(line, formatted))
                with_default[i] = 1;
        }
    }
    free(line);
    fclose(f);
    for (size_t i = 0; i < hb_var_count; i++) {
        if (!named[i])
            fprintf(stderr, "README.md does not mention %s\n",
                    hb_var_table[i].name);
        else if (!with_default[i])
            fprintf(stderr, "README.md: no line names %s with its default %s\n",
                    hb_var_table[i].name, hb_var_table[i].def);
        CHECK(named[i]);
        CHECK(with_default[i]);
    }
    free(named);
    free(with_default);
}

static void test_has_token(void)
{
    /* the README matcher itself */
    CHECK(
        has_token("| `HOTBUF_HASH_BITS` | 20 | buckets |", "HOTBUF_HASH_BITS"));
    CHECK(has_token("| `HOTBUF_HASH_BITS` | 20 | buckets |", "20"));
    CHECK(!has_token("HOTBUF_HASH_BITS_X | 20", "HOTBUF_HASH_BITS"));
    CHECK(!has_token("HOTBUF_ADAPT_CHAIN | 3", "HOTBUF_ADAPT"));
    CHECK(!has_token("HOTBUF_X | 20 buckets, 1024", "2"));
    CHECK(!has_token("HOTBUF_X | 0.25", "25"));
    CHECK(!has_token("HOTBUF_X | 1.5", "1"));
    CHECK(has_token("HOTBUF_X (default 1).", "1"));
}

/* Two ranks with different environments: the reduction MPI would do
 * (element-wise minimum) gives both the smallest value of each shared
 * setting, and each difference is described once. */
static void test_shared(void)
{
    struct hb_config a, b;
    struct warnings w;
    uint64_t va[2 * HB_CONFIG_NSHARED], vb[2 * HB_CONFIG_NSHARED],
        min[2 * HB_CONFIG_NSHARED];
    env_clear();
    load(&a, &w);
    env_set("HOTBUF_ENABLE", "0");
    env_set("HOTBUF_AG_BUFFER", "16K");
    env_set("HOTBUF_AG_RING", "1M");   /* larger than a's: a's 128K wins */
    env_set("HOTBUF_AG_MCAST", "64K"); /* a's 0 (off) wins */
    load(&b, &w);
    hb_config_shared_pack(&a, va);
    hb_config_shared_pack(&b, vb);
    for (int i = 0; i < 2 * HB_CONFIG_NSHARED; i++)
        min[i] = va[i] < vb[i] ? va[i] : vb[i];
    memset(&w, 0, sizeof(w));
    CHECK_EQ_U64(hb_config_shared_apply(&a, min, collect_warn, &w), 4);
    CHECK(a.enable == 0);
    CHECK_EQ_U64(a.ag_buffer, 16384);
    CHECK_EQ_U64(a.ag_ring, 131072);
    CHECK_EQ_U64(a.ag_zcopy, 131072);
    CHECK(a.intranode == 0 && a.allgather == 1);
    CHECK_EQ_U64(a.ag_mcast, 0);
    CHECK_EQ_U64(w.n, 4);
    CHECK_STR(w.line[0],
              "HOTBUF_ENABLE differs between ranks (0..1); all ranks use 0");
    CHECK_STR(
        w.line[1],
        "HOTBUF_AG_RING differs between ranks (131072..1048576); all ranks use 131072");
    CHECK_STR(
        w.line[2],
        "HOTBUF_AG_BUFFER differs between ranks (16384..524288); all ranks use 16384");
    CHECK_STR(
        w.line[3],
        "HOTBUF_AG_MCAST differs between ranks (0..65536); all ranks use 0");
    /* the same everywhere: nothing said, nothing changed */
    hb_config_shared_pack(&b, vb);
    memset(&w, 0, sizeof(w));
    CHECK_EQ_U64(hb_config_shared_apply(&b, vb, collect_warn, &w), 0);
    CHECK_EQ_U64(w.n, 0);
    CHECK_EQ_U64(b.ag_ring, 1048576);
    env_clear();
}

int main(void)
{
    test_defaults();
    test_valid();
    test_invalid();
    test_round_trip();
    test_has_token();
    test_readme();
    test_shared();
    return CHECK_DONE();
}
