/* The buffer-reuse report printed at MPI_Finalize.
 *
 * Pipeline, one file a step:
 *   report_local.c   tracker of this rank -> hb_rank_summary + site summaries
 *   report_gather.c  gathers fixed-size records on rank 0 (PMPI, bounded per rank)
 *   report_merge.c   N rank records -> hb_report (pure, unit-tested)
 *   report_render.c  hb_report -> text and JSON (pure)
 * The records are plain data sent as MPI_BYTE: every rank runs the same
 * library build, so the layout is the same everywhere.
 *
 * The report knows the tracker's numbers (classes, sites, the table) and
 * nothing else by name.  Whatever else it says comes from sections
 * (struct hb_report_section): each owner (RDMA bring-up, each subsystem)
 * defines its record, how records of several ranks merge and how the
 * merged one is rendered.  One rank's record is the generic header
 * (struct hb_rank_summary) followed by each section's record, in the order
 * of the section list the caller passes (the same on every rank).
 */
#ifndef HOTBUF_REPORT_H
#define HOTBUF_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "track/costmodel.h"
#include "track/ops.h"

#define HB_TOP_SIZES 4
#define HB_TOP_BUFFERS 16
/* Buffers by uses, in powers of two: bucket k holds the buffers used
 * 2^k .. 2^(k+1)-1 times, the last one every buffer used more. */
#define HB_USES_BUCKETS 24
#define HB_NAME_LEN 200
#define HB_NOTE_LEN 400
#define HB_MAX_NOTES 8
#define HB_REPORT_MAX_SECTIONS 16
/* The name of site 0, the calls past HOTBUF_MAX_SITES. */
#define HB_SITE_OTHER_NAME "<other call sites>"

/* Row of a reason table X-macro: _(ENUM, "name"), the name being the word
 * in the text report and the key in the JSON one.  Expand the table with
 * HB_REPORT_ENUM for the enum and HB_REPORT_NAME for the names. */
#define HB_REPORT_ENUM(e, name) e,
#define HB_REPORT_NAME(e, name) name,

/* Buffer counts a class and a call site both report, summed over ranks. */
#define HB_BUFFER_SUMS(_) _(buffers) _(hot_buffers)

struct hb_class_summary {
    HB_CALL_COUNTERS(HB_COUNTER_FIELD) /* track/ops.h */
    uint64_t zero_calls, proc_null_calls;
    HB_BUFFER_SUMS(HB_COUNTER_FIELD)
    uint64_t max_reuse;
    uint64_t top_size[HB_TOP_SIZES],
        top_size_calls[HB_TOP_SIZES]; /* by calls, descending */
    uint64_t distinct_sizes; /* counted exactly (merged: the most on a rank) */
    uint64_t
        other_size_calls; /* calls at sizes past HB_SIZES_EXACT: not in top_size */
    double saving_ns;     /* hot calls x C(own size) - R per registration */
    double lookup_ns;     /* tracked calls x V: what tracking itself costs */
    uint64_t uses_hist[HB_USES_BUCKETS]; /* tracked buffers by uses */
};

static inline unsigned hb_uses_bucket(uint64_t uses)
{
    unsigned k = uses ? 63 - (unsigned)__builtin_clzll(uses) : 0;
    return k < HB_USES_BUCKETS ? k : HB_USES_BUCKETS - 1;
}

struct hb_rank_summary {
    struct hb_class_summary cls[HB_OP_COUNT];
    uint64_t table_entries, table_hot, table_memory, max_chain;
    uint64_t stopped; /* enum hb_stop_reason */
    uint64_t stopped_after_entries, stopped_after_calls;
    uint64_t sites, site_overflow_calls;
    uint64_t nsites; /* site summaries this rank sends */
};

struct hb_site_buffer {
    uint64_t addr, size, uses, hot_uses;
    int32_t rank, hot;
};

struct hb_site_summary {
    char name[HB_NAME_LEN];
    uint32_t op, ranks; /* ranks: how many ranks have this site */
    HB_CALL_COUNTERS(HB_COUNTER_FIELD) /* track/ops.h */
    uint64_t empty_calls; /* zero-byte or MPI_PROC_NULL: no buffer */
    HB_BUFFER_SUMS(HB_COUNTER_FIELD)
    uint64_t max_reuse;
    double saving_ns;
    uint32_t ntop;
    uint32_t persistent; /* a persistent request's site (on some rank) */
    struct hb_site_buffer top[HB_TOP_BUFFERS]; /* by uses, descending */
};

/* A part of the report owned by someone else.  record_size and acc_size
 * are multiples of 8, so records concatenate without padding. */
struct hb_report;

struct hb_report_section {
    const char *name;   /* JSON key */
    size_t record_size; /* one rank's record */
    size_t acc_size;    /* the merged record; 0: record_size */
    /* Folds one rank's record into acc (zeroed at first; ranks in order).
     * NULL: both are structs of uint64_t counters, summed. */
    void (*merge)(void *acc, const void *rec);
    /* The section's lines, between the reuse table and the cost model. */
    void (*render_text)(FILE *out, const void *acc, const struct hb_report *r);
    /* The section's JSON value (an object), after "name": . */
    void (*render_json)(FILE *out, const void *acc, const struct hb_report *r);
    /* Optional: why hot calls of class op stayed on MPI, as the section's
     * reason word ("intranode", ...), or NULL (none did, or the class is
     * not the section's).  The call sites' advice quotes it. */
    const char *(*why_pmpi)(const void *acc, unsigned op);
};

/* The sections of one report, in record order. */
struct hb_report_layout {
    const struct hb_report_section *const *sec;
    size_t n;
};

/* One class after merging all ranks. */
struct hb_class_report {
    struct hb_class_summary sum; /* sums; max_reuse is the maximum */
    uint32_t ranks;              /* ranks with at least one call */
    uint64_t max_reuse_min, max_reuse_max;
    double max_reuse_avg; /* of the per-rank maximum reuse counts */
    uint64_t freq_size_min, freq_size_max;
    double freq_size_avg; /* of the per-rank most frequent sizes */
};

struct hb_report {
    int nranks;
    struct hb_class_report cls[HB_OP_COUNT];
    uint64_t entries_total, entries_max, hot_entries_total, memory_max,
        max_chain;
    uint32_t ranks_adapted, ranks_full; /* ranks whose table stopped growing */
    /* Earliest stop over the ranks, per reason ([0] adapted, [1] full). */
    uint64_t stopped_after_calls_min[2], stopped_after_entries_min[2];
    uint64_t sites_total, site_overflow_calls;
    struct hb_site_summary *sites; /* merged, by calls descending */
    size_t nsites;
    /* Site records not merged, and their calls: their site was new when
     * rank 0's table already held site_cap sites (or memory ran out). */
    uint64_t sites_left_out, site_calls_left_out;
    struct hb_report_layout layout;    /* the sections, in order */
    void *acc[HB_REPORT_MAX_SECTIONS]; /* their merged records */
    /* Merge state, between hb_report_merge_begin and _end. */
    size_t site_cap, site_room, max_buffers, hash_size;
    uint32_t *site_hash;         /* index + 1 into sites; 0: free */
    uint32_t sized[HB_OP_COUNT]; /* ranks with a frequent size */
};

/* What the report says about the run besides the counts. */
struct hb_report_context {
    const struct hb_config *cfg;
    const struct hb_costmodel *cost;
    const struct hb_threshold_params *tp;
    const uint32_t *thresholds; /* HB_SIZE_CLASSES entries */
    const char *mpi_library;
    const char *thread_level;
    char notes[HB_MAX_NOTES][HB_NOTE_LEN];
    int nnotes;
};

/* How the gather is cut so that no MPI count overflows an int and rank
 * 0's memory stays under a fixed budget whatever the number of ranks.
 * Pure arithmetic (unit-tested at 10^6 ranks); the same on every rank,
 * since it depends only on its arguments. */
#define HB_REPORT_BUDGET ((size_t)64 << 20) /* rank 0's memory for it */

struct hb_gather_plan {
    size_t max_sites;    /* site records each rank sends, at most */
    int msg_count;       /* one rank's message in bytes (an MPI count) */
    int batch;           /* ranks whose messages rank 0 holds at once */
    int rounds;          /* batches, for ranks 1..nranks-1 */
    long long max_displ; /* largest byte offset given to MPI */
    size_t site_cap;     /* distinct sites rank 0 merges (then: left out) */
    size_t root_bytes;   /* rank 0's memory for all of it, at most */
};

/* Returns 0, or -1 when even one rank's message cannot fit the budget. */
int hb_report_gather_plan(int nranks, size_t record_size, size_t site_size,
                          size_t max_sites, size_t budget,
                          struct hb_gather_plan *p);

/* Bytes of one rank's record: the header and every section's record. */
size_t hb_report_record_size(const struct hb_report_layout *l);

/* Merges nranks records (record i at records + i x hb_report_record_size)
 * and their site summaries (sites[i] holds rank i's site records,
 * nsites of them).  Keeps at most max_sites sites and max_buffers buffers
 * per site.  Returns 0 or -1 (no memory); free r either way. */
int hb_report_merge(struct hb_report *r, const struct hb_report_layout *l,
                    const void *records, int nranks,
                    const struct hb_site_summary *const *sites,
                    size_t max_sites, size_t max_buffers);
void hb_report_free(struct hb_report *r);

/* The same, one rank at a time, so that rank 0 never holds every rank's
 * records: begin, then merge_rank for rank 0, 1, ... in order (sections
 * fold ranks in order), then end.  At most site_cap distinct sites are
 * kept; a record of a site new past that is counted in sites_left_out.
 * begin returns 0 or -1 (no memory); free r either way. */
int hb_report_merge_begin(struct hb_report *r, const struct hb_report_layout *l,
                          size_t site_cap, size_t max_buffers);
void hb_report_merge_rank(struct hb_report *r, const void *record,
                          const struct hb_site_summary *sites, size_t nsites);
void hb_report_merge_end(struct hb_report *r, size_t max_sites);

void hb_report_render_text(FILE *out, const struct hb_report *r,
                           const struct hb_report_context *ctx);
void hb_report_render_json(FILE *out, const struct hb_report *r,
                           const struct hb_report_context *ctx);

/* Reuse percentage: calls on an already seen buffer, of the calls that
 * named a buffer (zero-byte and MPI_PROC_NULL calls name none). */
double hb_reuse_pct(const struct hb_class_summary *c);
double hb_site_reuse_pct(const struct hb_site_summary *s);

/* Helpers for the sections' renderers. */
const char *hb_report_bytes(double v, char *buf, size_t len); /* "1.5 KiB" */
const char *hb_report_time(double ns, char *buf, size_t len); /* "1.2 ms" */
void hb_report_json_string(FILE *out, const char *s); /* quoted, escaped */
/* "name N, name N" for the nonzero counts[first..count), or "none". */
void hb_report_text_counts(FILE *out, const uint64_t *counts, unsigned first,
                           unsigned count, const char *const *names);
/* The name of the largest nonzero count in counts[first..count), or NULL
 * (for the sections' why_pmpi). */
const char *hb_report_top_reason(const uint64_t *counts, unsigned first,
                                 unsigned count, const char *const *names);
/* {"name": N, ...} for counts[first..count). */
void hb_report_json_counts(FILE *out, const uint64_t *counts, unsigned first,
                           unsigned count, const char *const *names);
/* Opens a subsystem's object with what it serves: {"WHAT": total,
 * "WHAT_rdma": rdma, "WHAT_pmpi": {reason: count, ...} (the caller adds
 * its other keys and the closing brace). */
void hb_report_json_served(FILE *out, const char *what, uint64_t total,
                           uint64_t rdma, const uint64_t *pmpi, unsigned count,
                           const char *const *names);

#endif
