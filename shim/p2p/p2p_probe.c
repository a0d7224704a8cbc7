/* Probes on a pulled communicator answer from hotbuf's unexpected store
 * by the rule a receive uses (p2p_match.h), after one claiming pass, so a
 * receive with the probe's source and tag gets the probed message.
 * Matched probes hand the application the real MPI_Message that
 * PMPI_Improbe gave hotbuf: Mrecv and Imrecv go to PMPI unchanged. */
#include <limits.h>
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
    return source == MPI_PROC_NULL ? NULL : hb_p2p_comm_recv_call(comm, source);
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
    if (m->kind == MSG_RING) {
        /* a rendezvous record's message is read first (it stays on the
         * list a RESEND is looked up in until then); a matched probe is
         * the match: a DATA_SYNC record's SYNC_ACK */
        if (hb_p2p_rndv_fetch(c, m) != MPI_SUCCESS)
            abort(); /* out of memory with the message out of the store */
        hb_p2p_sync_matched(m);
        hb_p2p_ring_message(m, c->comm, msg); /* takes m */
        return;
    }
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

/* ---- ring messages as MPI messages ------------------------------------
 * A ring message has no MPI_Message of its own: a matched probe sends it
 * to this process on a private duplicate of MPI_COMM_SELF and probes that
 * (one copy, on this rare path only).  The send is nonblocking and MPI may
 * read its buffer as late as the Mrecv (ob1 over btl self gets a message
 * above the eager size from the sender's buffer then), so the entry owns
 * the message until its send completes: freeing it at the probe let the
 * Mrecv read freed memory (AddressSanitizer, p2p_random seed 44 with
 * Isends on the ring; Open MPI's heap then broke at a later free).
 * MPI says the source is 0:
 * Mrecv/Imrecv put the real one back, from this list (few entries: each
 * lives from the probe to the receive), and raise a truncation through
 * the application's communicator, as MPI would: the private one returns
 * errors (its default handler, fatal, aborted a job whose communicator
 * returns them). */
struct ring_out {
    MPI_Message msg;
    MPI_Request send;
    struct p2p_msg *m; /* owned until the send completes */
    uint32_t bytes;
    int source;
    MPI_Comm comm; /* the application's */
};
static struct ring_out *outs;
static int nouts, capouts;

static void reap_sends(void)
{
    for (int i = 0; i < nouts; i++)
        if (outs[i].msg == MPI_MESSAGE_NULL &&
            outs[i].send != MPI_REQUEST_NULL) {
            int done = 0;
            PMPI_Test(&outs[i].send, &done, MPI_STATUS_IGNORE);
            if (done) {
                hb_p2p_msg_free(outs[i].m);
                outs[i].m = NULL;
            }
        }
    while (nouts && outs[nouts - 1].msg == MPI_MESSAGE_NULL &&
           outs[nouts - 1].send == MPI_REQUEST_NULL)
        nouts--;
}

int hb_p2p_ring_message(struct p2p_msg *m, MPI_Comm comm, MPI_Message *msg)
{
    MPI_Status st;
    reap_sends();
    if (nouts == capouts) {
        int cap = capouts ? 2 * capouts : 8;
        struct ring_out *v = realloc(outs, (size_t)cap * sizeof(*v));
        if (!v)
            abort(); /* the message is out of the store already */
        outs = v;
        capouts = cap;
    }
    struct ring_out *o = &outs[nouts++];
    o->m = m;
    o->bytes = m->bytes;
    o->source = m->n.source;
    o->comm = comm;
    PMPI_Isend(m->data, (int)m->bytes, MPI_BYTE, 0, m->n.tag, p2p.self,
               &o->send);
    PMPI_Mprobe(0, m->n.tag, p2p.self, &o->msg, &st);
    *msg = o->msg;
    return MPI_SUCCESS;
}

/* The entry of a handed-out ring message, or NULL. */
static struct ring_out *ring_out_of(MPI_Message msg)
{
    for (int i = 0; msg != MPI_MESSAGE_NULL && i < nouts; i++)
        if (outs[i].msg == msg)
            return &outs[i];
    return NULL;
}

/* A ring message longer than the receive: Open MPI 4.1 writes a truncated
 * message to self past the receive buffer (all of it; AddressSanitizer,
 * p2p_random seed 44), so the message goes to a buffer of its size and
 * the part that fits is unpacked into the receive's, as MPI's truncation
 * over the network leaves it. */
static int ring_mrecv_truncated(struct ring_out *o, void *buf, int count,
                                MPI_Datatype type, MPI_Message *msg,
                                MPI_Status *st)
{
    int size, pos = 0;
    char *whole = malloc(o->bytes);
    if (!whole)
        return MPI_ERR_NO_MEM;
    PMPI_Type_size(type, &size);
    PMPI_Mrecv(whole, (int)o->bytes, MPI_BYTE, msg, st);
    PMPI_Unpack(whole, count * size, &pos, buf, count, type, p2p.self);
    PMPI_Status_set_elements(st, type, count);
    free(whole);
    return MPI_ERR_TRUNCATE;
}

static int fits(const struct ring_out *o, int count, MPI_Datatype type)
{
    int size;
    PMPI_Type_size(type, &size);
    return (uint64_t)count * (uint64_t)size >= o->bytes;
}

/* A handed-out ring message received: its error returned, not raised. */
static int ring_mrecv(struct ring_out *o, void *buf, int count,
                      MPI_Datatype type, MPI_Message *msg, MPI_Status *st)
{
    MPI_Status mine;
    int rc = fits(o, count, type)
                 ? PMPI_Mrecv(buf, count, type, msg, &mine)
                 : ring_mrecv_truncated(o, buf, count, type, msg, &mine);
    mine.MPI_SOURCE = o->source;
    o->msg = MPI_MESSAGE_NULL;
    reap_sends();
    if (st != MPI_STATUS_IGNORE)
        *st = mine;
    return rc;
}

/* A ring message fits in an int count (its bytes do, see
 * ring_mrecv_truncated): a larger one of the large-count forms holds it. */
static int ring_count(MPI_Count count)
{
    return count > INT_MAX ? INT_MAX : (int)count;
}

int hb_p2p_mrecv(void *buf, MPI_Count count, MPI_Datatype type,
                 MPI_Message *msg, MPI_Status *st)
{
    struct ring_out *o = msg ? ring_out_of(*msg) : NULL;
    if (!o)
        return PMPI_C(PMPI_Mrecv)(buf, count, type, msg, st);
    MPI_Comm comm = o->comm; /* o may move in ring_mrecv */
    int rc = ring_mrecv(o, buf, ring_count(count), type, msg, st);
    if (rc != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* The data is here already: received at once, handed back as a complete
 * hotbuf request. */
int hb_p2p_imrecv(void *buf, MPI_Count count, MPI_Datatype type,
                  MPI_Message *msg, MPI_Request *req)
{
    struct ring_out *o = msg ? ring_out_of(*msg) : NULL;
    struct p2p_req *r;
    if (!o)
        return PMPI_C(PMPI_Imrecv)(buf, count, type, msg, req);
    if (!(r = hb_p2p_req_new()) || hb_p2p_req_pool_handle(r) != MPI_SUCCESS) {
        free(r);
        return MPI_ERR_NO_MEM;
    }
    r->comm = o->comm; /* a truncation raised there at completion */
    r->err = ring_mrecv(o, buf, ring_count(count), type, msg, &r->st);
    r->raise = r->err != MPI_SUCCESS;
    r->state = RQ_DONE;
    hb_p2p_req_insert(r);
    *req = r->handle;
    return MPI_SUCCESS;
}
