/* HOTBUF_* configuration: one table, parsed once.
 *
 * Every tunable lives in config_vars.def as one row (name, type, default,
 * range, help).  Parsing, validation, the report's "effective
 * configuration" section and the README check all read that table, so a
 * variable cannot be added without a default, a range and a description.
 */
#ifndef HOTBUF_CONFIG_H
#define HOTBUF_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum hb_report_mode {
    HB_REPORT_OFF,
    HB_REPORT_TEXT,
    HB_REPORT_JSON,
    HB_REPORT_BOTH,
    HB_REPORT_HTML /* text, JSON and the page tools/hotbuf-report draws */
};
enum hb_memmon_mode { HB_MEMMON_ON, HB_MEMMON_OFF, HB_MEMMON_NONE };
enum hb_copy_mode { HB_COPY_AUTO, HB_COPY_USE_MEMCPY, HB_COPY_USE_PIECES };

enum hb_var_type {
    HB_VAR_BOOL,
    HB_VAR_INT,
    HB_VAR_SIZE,
    HB_VAR_DOUBLE,
    HB_VAR_ENUM,
    HB_VAR_STRING
};

struct hb_config {
#define HB_VAR(field, name, type, ctype, def, min, max, help) ctype field;
#include "config_vars.def"
#undef HB_VAR
};

/* Description of one variable, for parsing and printing. */
struct hb_var_desc {
    const char *name; /* full environment name, e.g. "HOTBUF_HASH_BITS" */
    enum hb_var_type type;
    size_t offset;   /* of the field in struct hb_config */
    const char *def; /* default, as text */
    double min, max; /* accepted range for numbers */
    const char *help;
};

extern const struct hb_var_desc hb_var_table[];
extern const size_t hb_var_count;

/* Accepted words for HB_VAR_ENUM variables (HOTBUF_REPORT, HOTBUF_MEMMON). */
const char *const *hb_var_enum_words(const struct hb_var_desc *d);

/* Fill *cfg from the environment via getenv_fn (getenv in production).
 * Each invalid value is described by one line passed to warn(); the
 * variable keeps its default.  Returns the number of invalid values. */
int hb_config_load(struct hb_config *cfg,
                   const char *(*getenv_fn)(const char *),
                   void (*warn)(const char *line, void *ctx), void *ctx);

/* Writes the value of variable d in cfg as text into buf. */
void hb_config_format(const struct hb_config *cfg, const struct hb_var_desc *d,
                      char *buf, size_t len);

/* 1 if the variable's value in cfg equals its default (0: the user changed it). */
int hb_config_is_default(const struct hb_config *cfg,
                         const struct hb_var_desc *d);

/* Settings every rank must share: whether it takes part in hotbuf's
 * collectives at all (HOTBUF_ENABLE) and what decides the path of a
 * collective (HOTBUF_INTRANODE, HOTBUF_ALLGATHER, HOTBUF_AG_*).  A per-rank
 * wrapper script or an MPMD launch can give ranks different values; every
 * rank then takes the smallest.  hb_config_shared_pack writes them as
 * HB_CONFIG_NSHARED values followed by their complements, so that one
 * MPI_MIN reduction yields both minima and maxima; hb_config_shared_apply
 * stores the minima and describes each setting that differed to note(). */
#define HB_CONFIG_NSHARED 9
void hb_config_shared_pack(const struct hb_config *cfg,
                           uint64_t v[2 * HB_CONFIG_NSHARED]);
int hb_config_shared_apply(struct hb_config *cfg,
                           const uint64_t min[2 * HB_CONFIG_NSHARED],
                           void (*note)(const char *line, void *ctx),
                           void *ctx);

#endif
