/* MPI's matching rules for one communicator (see p2p_match.h). */
#include <stdlib.h>

#include "p2p_match.h"

#define MSG_OF(l) hb_container_of(l, struct hb_pm_msg, link)
#define RECV_OF(l) hb_container_of(l, struct hb_pm_recv, link)

static int matches(int want_src, int want_tag, int src, int tag)
{
    return (want_src == HB_PM_ANY || want_src == src) &&
           (want_tag == HB_PM_ANY || want_tag == tag);
}

int hb_pm_init(struct hb_pm *m, int nsrc)
{
    hb_list_init(&m->posted);
    m->nsrc = nsrc;
    m->next_seq = 0;
    m->n_unexp = m->n_posted = 0;
    m->unexp = calloc((size_t)(nsrc > 0 ? nsrc : 1), sizeof(*m->unexp));
    if (!m->unexp)
        return -1;
    for (int i = 0; i < nsrc; i++)
        hb_list_init(&m->unexp[i]);
    return 0;
}

void hb_pm_fini(struct hb_pm *m)
{
    free(m->unexp);
    m->unexp = NULL;
}

/* Lists grow at the head: the oldest element is at the tail, so walking
 * oldest-first goes through ->prev. */
struct hb_pm_recv *hb_pm_arrive(struct hb_pm *m, struct hb_pm_msg *msg)
{
    msg->seq = m->next_seq++;
    hb_list_init(&msg->link);
    for (struct hb_list *l = m->posted.prev; l != &m->posted; l = l->prev) {
        struct hb_pm_recv *r = RECV_OF(l);
        if (matches(r->source, r->tag, msg->source, msg->tag)) {
            hb_list_del(&r->link);
            m->n_posted--;
            return r;
        }
    }
    hb_list_add_head(&m->unexp[msg->source], &msg->link);
    m->n_unexp++;
    return NULL;
}

/* The first message of one sender's queue with a matching tag. */
static struct hb_pm_msg *first_of(const struct hb_list *q, int tag)
{
    for (struct hb_list *l = q->prev; l != q; l = l->prev)
        if (tag == HB_PM_ANY || MSG_OF(l)->tag == tag)
            return MSG_OF(l);
    return NULL;
}

struct hb_pm_msg *hb_pm_peek(const struct hb_pm *m, int source, int tag)
{
    if (source != HB_PM_ANY)
        return source >= 0 && source < m->nsrc
                   ? first_of(&m->unexp[source], tag)
                   : NULL;
    struct hb_pm_msg *best = NULL;
    for (int s = 0; s < m->nsrc && m->n_unexp; s++) {
        struct hb_pm_msg *x = first_of(&m->unexp[s], tag);
        if (x && (!best || x->seq < best->seq))
            best = x;
    }
    return best;
}

void hb_pm_take(struct hb_pm *m, struct hb_pm_msg *msg)
{
    if (!hb_list_linked(&msg->link))
        return;
    hb_list_del(&msg->link);
    m->n_unexp--;
}

struct hb_pm_msg *hb_pm_post(struct hb_pm *m, struct hb_pm_recv *r)
{
    struct hb_pm_msg *msg = hb_pm_peek(m, r->source, r->tag);
    hb_list_init(&r->link);
    if (msg) {
        hb_pm_take(m, msg);
        return msg;
    }
    hb_list_add_head(&m->posted, &r->link);
    m->n_posted++;
    return NULL;
}

void hb_pm_unpost(struct hb_pm *m, struct hb_pm_recv *r)
{
    if (!hb_list_linked(&r->link))
        return;
    hb_list_del(&r->link);
    m->n_posted--;
}

struct hb_pm_msg *hb_pm_first_unexpected(const struct hb_pm *m)
{
    return hb_pm_peek(m, HB_PM_ANY, HB_PM_ANY);
}
