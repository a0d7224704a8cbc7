/* A deliberately broken receive side, preloaded to show that
 * tests/mpi/p2p_progress catches a library that owns matching but has no
 * progress inside MPI: MPI_Irecv only records the receive (an inactive
 * persistent request), and MPI sees it when the application next calls
 * MPI_Waitall, as hotbuf's pull would without its progress hook.  Wraps
 * just what p2p_progress calls; not for other programs. */
#include <mpi.h>

#define MAXLAZY 64

static MPI_Request lazy[MAXLAZY];
static int nlazy;

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    if (nlazy == MAXLAZY)
        return PMPI_Irecv(buf, count, type, src, tag, comm, req);
    int rc = PMPI_Recv_init(buf, count, type, src, tag, comm, req);
    if (rc == MPI_SUCCESS)
        lazy[nlazy++] = *req;
    return rc;
}

static int is_lazy(MPI_Request r)
{
    for (int i = 0; i < nlazy; i++)
        if (lazy[i] == r)
            return 1;
    return 0;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    for (int i = 0; i < n; i++)
        if (is_lazy(reqs[i]))
            PMPI_Start(&reqs[i]);
    int rc = PMPI_Waitall(n, reqs, sts);
    for (int i = 0; i < n; i++)
        if (is_lazy(reqs[i]))
            PMPI_Request_free(&reqs[i]); /* sets MPI_REQUEST_NULL */
    nlazy = 0;
    return rc;
}
