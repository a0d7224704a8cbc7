/* HOTBUF_* parsing and validation (see config.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct hb_var_desc hb_var_table[] = {
#define HB_VAR(field, name, type, ctype, def, min, max, help)                  \
    {name, type, offsetof(struct hb_config, field), def, min, max, help},
#include "config_vars.def"
#undef HB_VAR
};
const size_t hb_var_count = sizeof(hb_var_table) / sizeof(hb_var_table[0]);

static const char *const report_words[] = {"off",  "text", "json",
                                           "both", "html", NULL};
static const char *const memmon_words[] = {"on", "off", "none", NULL};
static const char *const copy_words[] = {"auto", "memcpy", "pieces", NULL};

const char *const *hb_var_enum_words(const struct hb_var_desc *d)
{
    if (!strcmp(d->name, "HOTBUF_MEMMON"))
        return memmon_words;
    if (!strcmp(d->name, "HOTBUF_COPY"))
        return copy_words;
    return report_words;
}

/* Parses text into a double, with an optional binary size suffix for
 * HB_VAR_SIZE.  Returns 0 on success. */
static int parse_number(const char *text, enum hb_var_type type, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !isfinite(v))
        return -1;
    if (type == HB_VAR_SIZE && *end) {
        static const char suffixes[] = "kmg";
        const char *s = strchr(suffixes, *end | 0x20);
        if (!s)
            return -1;
        v *= (double)(1ULL << (10 * (s - suffixes + 1)));
        end++;
        if ((*end | 0x20) == 'i') /* accept "KiB"-style too */
            end++;
        if ((*end | 0x20) == 'b')
            end++;
    }
    if (*end)
        return -1;
    if ((type == HB_VAR_INT || type == HB_VAR_SIZE) && v != floor(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *text, double *out)
{
    static const char *const yes[] = {"1", "yes", "true", "on", NULL};
    static const char *const no[] = {"0", "no", "false", "off", NULL};
    for (int i = 0; yes[i]; i++)
        if (!strcasecmp(text, yes[i]))
            return *out = 1, 0;
    for (int i = 0; no[i]; i++)
        if (!strcasecmp(text, no[i]))
            return *out = 0, 0;
    return -1;
}

static int parse_enum(const struct hb_var_desc *d, const char *text,
                      double *out)
{
    const char *const *w = hb_var_enum_words(d);
    for (int i = 0; w[i]; i++)
        if (!strcasecmp(text, w[i]))
            return *out = i, 0;
    return -1;
}

static int is_auto(const struct hb_var_desc *d, const char *text)
{
    return d->type == HB_VAR_DOUBLE && !strcmp(d->def, "auto") &&
           !strcasecmp(text, "auto");
}

/* Parses text for d into *out; 0 if valid and in range. */
static int parse_value(const struct hb_var_desc *d, const char *text,
                       double *out)
{
    if (is_auto(d, text))
        return *out = -1, 0;
    int rc;
    switch (d->type) {
    case HB_VAR_BOOL: return parse_bool(text, out);
    case HB_VAR_ENUM: return parse_enum(d, text, out);
    default: rc = parse_number(text, d->type, out); break;
    }
    if (rc == 0 && (*out < d->min || *out > d->max))
        rc = -1;
    return rc;
}

static void store(struct hb_config *cfg, const struct hb_var_desc *d, double v,
                  const char *text)
{
    char *field = (char *)cfg + d->offset;
    switch (d->type) {
    case HB_VAR_BOOL:
    case HB_VAR_INT:
    case HB_VAR_ENUM: *(int *)field = (int)v; break;
    case HB_VAR_SIZE: *(uint64_t *)field = (uint64_t)v; break;
    case HB_VAR_DOUBLE: *(double *)field = v; break;
    case HB_VAR_STRING: *(const char **)field = text; break;
    }
}

static void describe_range(const struct hb_var_desc *d, char *buf, size_t len)
{
    switch (d->type) {
    case HB_VAR_BOOL:
        snprintf(buf, len, "0 or 1 (or no/yes, off/on, false/true)");
        return;
    case HB_VAR_ENUM: {
        const char *const *w = hb_var_enum_words(d);
        size_t used = 0;
        for (int i = 0; w[i] && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                     i ? (w[i + 1] ? ", " : " or ") : "", w[i]);
        return;
    }
    case HB_VAR_SIZE:
        snprintf(buf, len,
                 "a byte count (suffix K, M or G allowed) in %.0f..%.0f",
                 d->min, d->max);
        return;
    case HB_VAR_INT:
        snprintf(buf, len, "an integer in %.0f..%.0f", d->min, d->max);
        return;
    default:
        snprintf(buf, len, "%sa number in %g..%g",
                 strcmp(d->def, "auto") ? "" : "auto or ", d->min, d->max);
        return;
    }
}

int hb_config_load(struct hb_config *cfg,
                   const char *(*getenv_fn)(const char *),
                   void (*warn)(const char *line, void *ctx), void *ctx)
{
    int invalid = 0;
    for (size_t i = 0; i < hb_var_count; i++) {
        const struct hb_var_desc *d = &hb_var_table[i];
        double v = 0;
        if (d->type == HB_VAR_STRING) {
            const char *text = getenv_fn(d->name);
            store(cfg, d, 0, text ? text : d->def);
            continue;
        }
        parse_value(d, d->def, &v); /* defaults are valid by construction */
        store(cfg, d, v, NULL);
        const char *text = getenv_fn(d->name);
        if (!text)
            continue;
        if (parse_value(d, text, &v) == 0) {
            store(cfg, d, v, NULL);
            continue;
        }
        char range[128], line[512];
        describe_range(d, range, sizeof(range));
        snprintf(line, sizeof(line),
                 "%s=\"%s\" is invalid (expected %s); using the default %s",
                 d->name, text, range, d->def);
        warn(line, ctx);
        invalid++;
    }
    return invalid;
}

void hb_config_format(const struct hb_config *cfg, const struct hb_var_desc *d,
                      char *buf, size_t len)
{
    const char *field = (const char *)cfg + d->offset;
    switch (d->type) {
    case HB_VAR_BOOL:
    case HB_VAR_INT: snprintf(buf, len, "%d", *(const int *)field); break;
    case HB_VAR_ENUM:
        snprintf(buf, len, "%s", hb_var_enum_words(d)[*(const int *)field]);
        break;
    case HB_VAR_SIZE:
        snprintf(buf, len, "%llu",
                 (unsigned long long)*(const uint64_t *)field);
        break;
    case HB_VAR_DOUBLE:
        if (*(const double *)field < 0)
            snprintf(buf, len, "auto");
        else
            snprintf(buf, len, "%g", *(const double *)field);
        break;
    case HB_VAR_STRING:
        snprintf(buf, len, "%s", *(const char *const *)field);
        break;
    }
}

int hb_config_is_default(const struct hb_config *cfg,
                         const struct hb_var_desc *d)
{
    struct hb_config def;
    double v = 0;
    if (d->type == HB_VAR_STRING)
        return !strcmp(*(const char *const *)((const char *)cfg + d->offset),
                       d->def);
    parse_value(d, d->def, &v);
    store(&def, d, v, NULL);
    char a[64], b[64];
    hb_config_format(cfg, d, a, sizeof(a));
    hb_config_format(&def, d, b, sizeof(b));
    return !strcmp(a, b);
}

static const char *const shared_names[HB_CONFIG_NSHARED] = {
    "HOTBUF_ENABLE",    "HOTBUF_INTRANODE", "HOTBUF_ALLGATHER",
    "HOTBUF_AG_ZCOPY",  "HOTBUF_AG_RING",   "HOTBUF_AG_BUFFER",
    "HOTBUF_AG_DIRECT", "HOTBUF_AG_CHUNK",  "HOTBUF_AG_MCAST",
};

static const struct hb_var_desc *find_var(const char *name)
{
    for (size_t i = 0; i < hb_var_count; i++)
        if (!strcmp(hb_var_table[i].name, name))
            return &hb_var_table[i];
    return NULL;
}

static uint64_t shared_get(const struct hb_config *cfg,
                           const struct hb_var_desc *d)
{
    const char *field = (const char *)cfg + d->offset;
    return d->type == HB_VAR_SIZE ? *(const uint64_t *)field
                                  : (uint64_t) * (const int *)field;
}

void hb_config_shared_pack(const struct hb_config *cfg,
                           uint64_t v[2 * HB_CONFIG_NSHARED])
{
    for (int i = 0; i < HB_CONFIG_NSHARED; i++) {
        v[i] = shared_get(cfg, find_var(shared_names[i]));
        v[HB_CONFIG_NSHARED + i] = ~v[i];
    }
}

int hb_config_shared_apply(struct hb_config *cfg,
                           const uint64_t min[2 * HB_CONFIG_NSHARED],
                           void (*note)(const char *line, void *ctx), void *ctx)
{
    int differed = 0;
    for (int i = 0; i < HB_CONFIG_NSHARED; i++) {
        const struct hb_var_desc *d = find_var(shared_names[i]);
        uint64_t lo = min[i], hi = ~min[HB_CONFIG_NSHARED + i];
        if (lo != hi) {
            char line[200];
            snprintf(
                line, sizeof(line),
                "%s differs between ranks (%llu..%llu); all ranks use %llu",
                d->name, (unsigned long long)lo, (unsigned long long)hi,
                (unsigned long long)lo);
            note(line, ctx);
            differed++;
        }
        store(cfg, d, (double)lo, NULL);
    }
    return differed;
}
