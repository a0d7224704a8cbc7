/* Subsystems: the parts of hotbuf that reroute a family of MPI calls
 * (persistent requests, one-sided, Allgather; point-to-point next).  The
 * runtime knows none of them by name: each defines one struct hb_subsys,
 * and core/subsys_list.h lists them.
 *
 * Life cycle: after the runtime's own start-up (configuration, RDMA,
 * datatypes, tracker) every subsystem starts, in list order, on every rank
 * that takes part in hotbuf's collectives; before MPI_Finalize, after the
 * report, they stop in reverse order, before the RDMA side is torn down.
 */
#ifndef HOTBUF_SUBSYS_H
#define HOTBUF_SUBSYS_H

#include <stddef.h>

#include "ctx.h"
#include "report/report.h"

struct hb_subsys {
    const char *name;
    /* Collective over ctx->comm when it needs agreement (every rank starts
     * every subsystem).  0, or -1 when it failed (it is still stopped).
     * Being switched off is not a failure.  NULL: nothing to start. */
    int (*start)(const struct hb_ctx *ctx);
    /* Releases everything; may use PMPI and the RDMA side.  NULL: none. */
    void (*stop)(const struct hb_ctx *ctx);
    /* Its part of the report (NULL: none), and how this rank's record is
     * filled (section->record_size bytes, zeroed): by summarize, or else
     * copied from counters (a struct that is its own record). */
    const struct hb_report_section *section;
    void (*summarize)(const struct hb_ctx *ctx, void *rec);
    const void *counters;
};

/* For a start that all ranks must agree on (collective over ctx->comm):
 * 1 when no rank is off (switched off, or unable to take part, e.g. under
 * MPI_THREAD_MULTIPLE) and some rank is able, else 0 on every rank.
 * *any_able (may be NULL): some rank is able. */
int hb_subsys_agree(const struct hb_ctx *ctx, int off, int able, int *any_able);

void hb_subsys_start_all(const struct hb_ctx *ctx);
void hb_subsys_stop_all(const struct hb_ctx *ctx);

/* The report at finalize: every section in list order, this rank's
 * records, then the gather (collective over ctx->comm). */
void hb_subsys_report(const struct hb_ctx *ctx);

#endif
