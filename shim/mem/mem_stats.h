/* The report's MPI_Alloc_mem section (shim/mem/).  MPI-free (the report's
 * unit test renders it); mem_alloc.c keeps one rank's record. */
#ifndef HOTBUF_MEM_STATS_H
#define HOTBUF_MEM_STATS_H

#include <stdint.h>

#include "report/report.h"

/* Why an MPI_Alloc_mem went to the MPI: _(enum, "name"). */
#define HB_MEM_PASS_REASONS(_)                                                 \
    _(HB_MEM_PASS_OFF, "off")           /* HOTBUF_ALLOC_MEM=0, not running */  \
    _(HB_MEM_PASS_NO_CACHE, "no_cache") /* no device or no monitor */          \
    _(HB_MEM_PASS_INFO, "info")         /* info keys: hints for the MPI */     \
    _(HB_MEM_PASS_SIZE, "size")         /* size 0 or less */                   \
    _(HB_MEM_PASS_FAILED, "failed")     /* a chunk not mapped or registered */ \
    _(HB_MEM_PASS_CAP, "cap") /* a chunk longer than the cache may pin */

enum hb_mem_pass { HB_MEM_PASS_REASONS(HB_REPORT_ENUM) HB_MEM_PASS_COUNT };

/* One rank's record; merged: sums (peak_in_use too: the ranks' peaks). */
struct hb_mem_record {
    uint64_t served, served_bytes; /* Alloc_mem calls from the chunks */
    uint64_t freed;                /* Free_mem calls that gave one back */
    uint64_t freed_mpi;            /* Free_mem calls passed to the MPI */
    uint64_t chunks, chunk_bytes;  /* registered once each */
    uint64_t peak_in_use;
    uint64_t passed[HB_MEM_PASS_COUNT];
};

extern const struct hb_report_section hb_mem_section;

#endif
