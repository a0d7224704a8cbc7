/* The sending side's order bookkeeping (see p2p_pair.h). */
#include "p2p_pair.h"

void hb_pp_peer_init(struct hb_pp_peer *p)
{
    p->rseq = 0;
    hb_list_init(&p->unacked);
}

void hb_pp_init(struct hb_pp *pp)
{
    pp->state = HB_PP_MPI;
    pp->mpi_since = pp->last_ring = 0;
    pp->unfenced = 0;
}

void hb_pp_granted(struct hb_pp *pp)
{
    if (pp->state == HB_PP_MPI)
        pp->state = HB_PP_GRANTED;
}

/* The stamps start at the first marker: m at the receiver counts from
 * there too (MPI data sent while GRANTED comes before the marker, where
 * the receiver's merge releases it as plain MPI).  last_ring keeps an
 * earlier period's value (the design's "or the last rseq of c from an
 * earlier LIVE period"). */
int hb_pp_open(struct hb_pp *pp)
{
    if (pp->state != HB_PP_GRANTED)
        return 0;
    pp->state = HB_PP_LIVE;
    pp->mpi_since = 0;
    pp->unfenced = 0;
    return 1;
}

void hb_pp_ring(struct hb_pp *pp, struct hb_pp_peer *peer,
                struct hb_pp_rec *rec)
{
    rec->rseq = ++peer->rseq;
    rec->mpi_before = pp->mpi_since;
    pp->last_ring = rec->rseq;
    pp->unfenced = 1;
    hb_list_add_head(&peer->unacked, &rec->link);
}

void hb_pp_acked(struct hb_pp_rec *rec)
{
    hb_list_del(&rec->link);
}

int hb_pp_mpi(struct hb_pp *pp, uint32_t *k)
{
    int fence = pp->unfenced;
    *k = pp->last_ring;
    pp->unfenced = 0;
    pp->mpi_since += pp->state == HB_PP_LIVE || pp->state == HB_PP_DEAD;
    return fence;
}

struct hb_pp_rec *hb_pp_oldest_unacked(const struct hb_pp_peer *peer)
{
    if (hb_list_empty(&peer->unacked))
        return NULL;
    return hb_container_of(hb_list_tail(&peer->unacked), struct hb_pp_rec,
                           link);
}

void hb_pp_dead(struct hb_pp *pp)
{
    if (pp->state == HB_PP_GRANTED || pp->state == HB_PP_LIVE)
        pp->state = HB_PP_DEAD;
}
