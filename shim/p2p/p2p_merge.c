/* The release merge of one sender on one communicator (see p2p_merge.h). */
#include "p2p_merge.h"

#define ITEM_OF(l) hb_container_of(l, struct hb_mg_item, link)

void hb_mg_init(struct hb_mg *g)
{
    hb_list_init(&g->pulled);
    hb_list_init(&g->ring);
    g->live = 0;
    g->m = g->rel_max = g->seen_max = 0;
}

/* Lists grow at the head: the oldest item is at the tail. */
static struct hb_mg_item *oldest(const struct hb_list *q)
{
    return hb_list_empty(q) ? NULL : ITEM_OF(hb_list_tail(q));
}

void hb_mg_pulled(struct hb_mg *g, struct hb_mg_item *it)
{
    hb_list_add_head(&g->pulled, &it->link);
}

int hb_mg_ring(struct hb_mg *g, struct hb_mg_item *it)
{
    if (it->rseq <= g->seen_max)
        return -1;
    g->seen_max = it->rseq;
    hb_list_add_head(&g->ring, &it->link);
    return 0;
}

/* The pulled head may go: data always; a marker once every record of c up
 * to its k is released (the first marker at once: it has no records to
 * wait for, and before it nothing of the ring may go). */
static int pulled_ready(const struct hb_mg *g, const struct hb_mg_item *p)
{
    return p->kind != HB_MG_MARKER || !g->live || g->rel_max >= p->stamp;
}

static struct hb_mg_item *take_pulled(struct hb_mg *g, struct hb_mg_item *p)
{
    hb_list_del(&p->link);
    if (p->kind == HB_MG_MPI)
        g->m += g->live;
    else if (!g->live)
        g->live = 1, g->m = 0;
    return p;
}

static struct hb_mg_item *take_ring(struct hb_mg *g, struct hb_mg_item *r)
{
    hb_list_del(&r->link);
    g->rel_max = r->rseq;
    return r;
}

/* At most one of the two heads can go at a time: a ring record whose
 * stamp is m needs the MPI message that would make it m + 1 to wait, and
 * that message sits behind a marker waiting for the record (the sender
 * put one between them).  Either order of the checks is therefore the
 * same; the ring goes first. */
struct hb_mg_item *hb_mg_next(struct hb_mg *g)
{
    struct hb_mg_item *r = oldest(&g->ring), *p = oldest(&g->pulled);
    if (r && g->live && r->stamp == g->m)
        return take_ring(g, r);
    if (p && pulled_ready(g, p))
        return take_pulled(g, p);
    return NULL;
}

int hb_mg_empty(const struct hb_mg *g)
{
    return hb_list_empty(&g->pulled) && hb_list_empty(&g->ring);
}
