/* Probes on a pulled communicator answer from hotbuf's unexpected store
 * by the rule a receive uses (p2p_match.h), after one claiming pass, so a
 * receive with the probe's source and tag gets the probed message.
 * Matched probes hand the application the real MPI_Message that
 * PMPI_Improbe gave hotbuf: Mrecv and Imrecv go to PMPI unchanged. */
#include <stdlib.h>

#include "core/progress.h"
#include "p2p_int.h"

static struct p2p_msg *look(struct p2p_comm *c, int source, int tag)
{
    struct hb_pm_msg *pm;
    hb_p2p_claim(c);
    pm = hb_pm_peek(&c->m, hb_p2p_translate_source(source),
                    tag == MPI_ANY_TAG ? HB_PM_ANY : tag);
    return pm ? hb_container_of(pm, struct p2p_msg, n) : NULL;
}

static struct p2p_comm *pulled(int source, MPI_Comm comm)
{
    return source == MPI_PROC_NULL ? NULL : hb_p2p_comm_recv_call(comm);
}

static void answer(const struct p2p_msg *m, MPI_Status *st)
{
    p2p.stats.probes_answered++;
    if (st != MPI_STATUS_IGNORE)
        *st = m->st;
}

/* The message leaves the store for the application's MPI_Message. */
static void hand_out(struct p2p_comm *c, struct p2p_msg *m, MPI_Message *msg,
                     MPI_Status *st)
{
    answer(m, st);
    p2p.stats.mprobes++;
    hb_pm_take(&c->m, &m->n);
    p2p.n_unexp--;
    *msg = m->msg;
    free(m);
}

int hb_p2p_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
    HB_P2P_ROUTE(iprobe);
    struct p2p_comm *c = pulled(source, comm);
    struct p2p_msg *m;
    if (!c)
        return PMPI_Iprobe(source, tag, comm, flag, st);
    m = look(c, source, tag);
    *flag = m != NULL;
    if (m)
        answer(m, st);
    return MPI_SUCCESS;
}

int hb_p2p_probe(int source, int tag, MPI_Comm comm, MPI_Status *st)
{
    HB_P2P_ROUTE(probe);
    struct p2p_comm *c = pulled(source, comm);
    struct p2p_msg *m;
    if (!c)
        return PMPI_Probe(source, tag, comm, st);
    while (!(m = look(c, source, tag)))
        hb_progress_yield(NULL);
    answer(m, st);
    return MPI_SUCCESS;
}

int hb_p2p_improbe(int source, int tag, MPI_Comm comm, int *flag,
                   MPI_Message *msg, MPI_Status *st)
{
    HB_P2P_ROUTE(improbe);
    struct p2p_comm *c = pulled(source, comm);
    struct p2p_msg *m;
    if (!c)
        return PMPI_Improbe(source, tag, comm, flag, msg, st);
    m = look(c, source, tag);
    *flag = m != NULL;
    if (m)
        hand_out(c, m, msg, st);
    return MPI_SUCCESS;
}

int hb_p2p_mprobe(int source, int tag, MPI_Comm comm, MPI_Message *msg,
                  MPI_Status *st)
{
    HB_P2P_ROUTE(mprobe);
    struct p2p_comm *c = pulled(source, comm);
    struct p2p_msg *m;
    if (!c)
        return PMPI_Mprobe(source, tag, comm, msg, st);
    while (!(m = look(c, source, tag)))
        hb_progress_yield(NULL);
    hand_out(c, m, msg, st);
    return MPI_SUCCESS;
}
