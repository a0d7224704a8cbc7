/* The RDMA operations in flight on a window: kept until the next
 * synchronization, completed there (or when the send queue is full), and
 * redone on PMPI when their peer failed (see rma.h).  Uses only the state
 * it is given: route, epoch and win call it, it calls none of them. */
#include <stdlib.h>

#include "core/progress.h"
#include "regcache/regcache.h"
#include "rma_int.h"

int hb_rma_remember(struct hb_win *w, const struct hb_rma_pending *p)
{
    if (w->npend == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        void *np = realloc(w->pend, cap * sizeof(*w->pend));
        if (!np)
            return -1;
        w->pend = np;
        w->cap = cap;
    }
    w->pend[w->npend++] = *p;
    return 0;
}

/* The peer failed before the operation was known complete (or the test
 * fault said so): do it again on PMPI, still inside the epoch (the
 * closing PMPI call completes it). */
static void reissue(struct hb_rma *m, const struct hb_win *w,
                    const struct hb_rma_pending *p)
{
    if (p->is_get)
        PMPI_Get(p->obuf, p->ocount, p->otype, p->target, p->tdisp, p->tcount,
                 p->ttype, w->win);
    else
        PMPI_Put(p->obuf, p->ocount, p->otype, p->target, p->tdisp, p->tcount,
                 p->ttype, w->win);
    m->stats.reissued++;
}

void hb_rma_complete(struct hb_rma *m, struct hb_win *w, int target)
{
    struct hb_transport *t = hb_rma_transport(m);
    size_t keep = 0;
    for (size_t i = 0; i < w->npend; i++) {
        struct hb_rma_pending *p = &w->pend[i];
        if (target >= 0 && p->target != target) {
            w->pend[keep++] = *p;
            continue;
        }
        if (p->failed ||
            hb_transport_wait(t, &p->op, hb_progress_yield, NULL) != HB_TR_OK)
            reissue(m, w, p);
        hb_regcache_put(m->ctx->rdma->cache, p->region);
    }
    w->npend = keep;
}
