/* TEMPORARY: the pass-through receive side, until the pull engine lands
 * (issue 12, deliverable 2).  The engine replaces this file and deletes
 * it; nothing else depends on it.
 *
 * Every hb_p2p_* function does exactly what the MPI function it is named
 * after does, through PMPI.  hb_p2p_engaged stays 0, so the bindings never
 * come here, except under the test switch HOTBUF_TEST_P2P_PASS=1
 * (tests/run-tests.sh "p2p_route"): then every receive-side call comes
 * here, each function counts its calls, the counts are printed to stderr
 * at exit ("hotbuf-p2p-pass: recv=N ..."), and MPI_TAG_UB shows one less
 * (hb_p2p_tag_ub_hidden), so that a test sees which bindings reach this
 * subsystem and that the attribute queries subtract. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2p.h"

int hb_p2p_engaged;

/* The test switch's counters, one per function. */
#define PASS_FUNCS(X)                                                          \
    X(recv) X(irecv) X(recv_init) X(start) X(startall) X(sendrecv)             \
    X(sendrecv_replace) X(isendrecv) X(isendrecv_replace) X(probe) X(iprobe)   \
    X(mprobe) X(improbe) X(wait) X(test) X(waitall) X(testall) X(waitany)     \
    X(testany) X(waitsome) X(testsome) X(request_get_status) X(cancel)         \
    X(request_free) X(comm_free) X(comm_disconnect)

#define PASS_ENUM(f) PASS_##f,
enum { PASS_FUNCS(PASS_ENUM) PASS_N };
#define PASS_NAME(f) #f,
static const char *const pass_names[PASS_N] = {PASS_FUNCS(PASS_NAME)};

/* Static: the bindings that reach these functions have no context, and
 * this file lives only until the engine lands. */
static struct {
    int testing; /* HOTBUF_TEST_P2P_PASS=1 */
    unsigned long calls[PASS_N];
} pass;

static void hit(int f)
{
    __atomic_fetch_add(&pass.calls[f], 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void pass_switch(void)
{
    const char *v = getenv("HOTBUF_TEST_P2P_PASS");
    pass.testing = v && strcmp(v, "1") == 0;
    hb_p2p_engaged = pass.testing;
}

__attribute__((destructor)) static void pass_counts(void)
{
    if (!pass.testing)
        return;
    char line[1024];
    size_t len = 0;
    for (int f = 0; f < PASS_N && len < sizeof(line); f++)
        len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%lu",
                                pass_names[f], pass.calls[f]);
    fprintf(stderr, "hotbuf-p2p-pass:%s\n", line);
}

/* Counts the pass-through cannot narrow to int go to MPI-4's large-count
 * functions where the library has them. */
#if MPI_VERSION >= 4
#define LARGE(n) ((n) > INT_MAX)
#else
#define LARGE(n) 0
#endif

int hb_p2p_recv(void *buf, MPI_Count count, MPI_Datatype type, int source,
                int tag, MPI_Comm comm, MPI_Status *st)
{
    hit(PASS_recv);
#if MPI_VERSION >= 4
    if (LARGE(count))
        return PMPI_Recv_c(buf, count, type, source, tag, comm, st);
#endif
    return PMPI_Recv(buf, (int)count, type, source, tag, comm, st);
}

int hb_p2p_irecv(void *buf, MPI_Count count, MPI_Datatype type, int source,
                 int tag, MPI_Comm comm, MPI_Request *req)
{
    hit(PASS_irecv);
#if MPI_VERSION >= 4
    if (LARGE(count))
        return PMPI_Irecv_c(buf, count, type, source, tag, comm, req);
#endif
    return PMPI_Irecv(buf, (int)count, type, source, tag, comm, req);
}

int hb_p2p_recv_init(void *buf, MPI_Count count, MPI_Datatype type, int source,
                     int tag, MPI_Comm comm, MPI_Request *req)
{
    hit(PASS_recv_init);
#if MPI_VERSION >= 4
    if (LARGE(count))
        return PMPI_Recv_init_c(buf, count, type, source, tag, comm, req);
#endif
    return PMPI_Recv_init(buf, (int)count, type, source, tag, comm, req);
}

int hb_p2p_start(MPI_Request *req)
{
    hit(PASS_start);
    return PMPI_Start(req);
}

int hb_p2p_startall(int n, MPI_Request reqs[])
{
    hit(PASS_startall);
    return PMPI_Startall(n, reqs);
}

int hb_p2p_sendrecv(const void *sbuf, MPI_Count scount, MPI_Datatype stype,
                    int dest, int stag, void *rbuf, MPI_Count rcount,
                    MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                    MPI_Status *st)
{
    hit(PASS_sendrecv);
#if MPI_VERSION >= 4
    if (LARGE(scount) || LARGE(rcount))
        return PMPI_Sendrecv_c(sbuf, scount, stype, dest, stag, rbuf, rcount,
                               rtype, source, rtag, comm, st);
#endif
    return PMPI_Sendrecv(sbuf, (int)scount, stype, dest, stag, rbuf,
                         (int)rcount, rtype, source, rtag, comm, st);
}

int hb_p2p_sendrecv_replace(void *buf, MPI_Count count, MPI_Datatype type,
                            int dest, int stag, int source, int rtag,
                            MPI_Comm comm, MPI_Status *st)
{
    hit(PASS_sendrecv_replace);
#if MPI_VERSION >= 4
    if (LARGE(count))
        return PMPI_Sendrecv_replace_c(buf, count, type, dest, stag, source,
                                       rtag, comm, st);
#endif
    return PMPI_Sendrecv_replace(buf, (int)count, type, dest, stag, source,
                                 rtag, comm, st);
}

int hb_p2p_isendrecv(const void *sbuf, MPI_Count scount, MPI_Datatype stype,
                     int dest, int stag, void *rbuf, MPI_Count rcount,
                     MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                     MPI_Request *req)
{
    hit(PASS_isendrecv);
#if MPI_VERSION >= 4
    if (LARGE(scount) || LARGE(rcount))
        return PMPI_Isendrecv_c(sbuf, scount, stype, dest, stag, rbuf, rcount,
                                rtype, source, rtag, comm, req);
    return PMPI_Isendrecv(sbuf, (int)scount, stype, dest, stag, rbuf,
                          (int)rcount, rtype, source, rtag, comm, req);
#else
    return MPI_ERR_INTERN; /* no such MPI function: never bound */
#endif
}

int hb_p2p_isendrecv_replace(void *buf, MPI_Count count, MPI_Datatype type,
                             int dest, int stag, int source, int rtag,
                             MPI_Comm comm, MPI_Request *req)
{
    hit(PASS_isendrecv_replace);
#if MPI_VERSION >= 4
    if (LARGE(count))
        return PMPI_Isendrecv_replace_c(buf, count, type, dest, stag, source,
                                        rtag, comm, req);
    return PMPI_Isendrecv_replace(buf, (int)count, type, dest, stag, source,
                                  rtag, comm, req);
#else
    return MPI_ERR_INTERN;
#endif
}

int hb_p2p_probe(int source, int tag, MPI_Comm comm, MPI_Status *st)
{
    hit(PASS_probe);
    return PMPI_Probe(source, tag, comm, st);
}

int hb_p2p_iprobe(int source, int tag, MPI_Comm comm, int *flag,
                  MPI_Status *st)
{
    hit(PASS_iprobe);
    return PMPI_Iprobe(source, tag, comm, flag, st);
}

int hb_p2p_mprobe(int source, int tag, MPI_Comm comm, MPI_Message *msg,
                  MPI_Status *st)
{
    hit(PASS_mprobe);
    return PMPI_Mprobe(source, tag, comm, msg, st);
}

int hb_p2p_improbe(int source, int tag, MPI_Comm comm, int *flag,
                   MPI_Message *msg, MPI_Status *st)
{
    hit(PASS_improbe);
    return PMPI_Improbe(source, tag, comm, flag, msg, st);
}

int hb_p2p_wait(MPI_Request *req, MPI_Status *st)
{
    hit(PASS_wait);
    return PMPI_Wait(req, st);
}

int hb_p2p_test(MPI_Request *req, int *flag, MPI_Status *st)
{
    hit(PASS_test);
    return PMPI_Test(req, flag, st);
}

int hb_p2p_waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    hit(PASS_waitall);
    return PMPI_Waitall(n, reqs, sts);
}

int hb_p2p_testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    hit(PASS_testall);
    return PMPI_Testall(n, reqs, flag, sts);
}

int hb_p2p_waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
    hit(PASS_waitany);
    return PMPI_Waitany(n, reqs, index, st);
}

int hb_p2p_testany(int n, MPI_Request reqs[], int *index, int *flag,
                   MPI_Status *st)
{
    hit(PASS_testany);
    return PMPI_Testany(n, reqs, index, flag, st);
}

int hb_p2p_waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                    MPI_Status sts[])
{
    hit(PASS_waitsome);
    return PMPI_Waitsome(n, reqs, outcount, indices, sts);
}

int hb_p2p_testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                    MPI_Status sts[])
{
    hit(PASS_testsome);
    return PMPI_Testsome(n, reqs, outcount, indices, sts);
}

int hb_p2p_request_get_status(MPI_Request req, int *flag, MPI_Status *st)
{
    hit(PASS_request_get_status);
    return PMPI_Request_get_status(req, flag, st);
}

int hb_p2p_cancel(MPI_Request *req)
{
    hit(PASS_cancel);
    return PMPI_Cancel(req);
}

int hb_p2p_request_free(MPI_Request *req)
{
    hit(PASS_request_free);
    return PMPI_Request_free(req);
}

void hb_p2p_comm_created(MPI_Comm comm)
{
    (void)comm;
}

int hb_p2p_comm_free(MPI_Comm *comm)
{
    hit(PASS_comm_free);
    return PMPI_Comm_free(comm);
}

int hb_p2p_comm_disconnect(MPI_Comm *comm)
{
    hit(PASS_comm_disconnect);
    return PMPI_Comm_disconnect(comm);
}

int hb_p2p_tag_ub_hidden(void)
{
    return pass.testing;
}
