/* An MPI that reads a send buffer late, as MPI may: preloaded after
 * hotbuf (LD_PRELOAD), it takes hotbuf's handshake sends (PMPI_Isend of
 * LATE_ISEND_TAG, default 7, in MPI_BYTE) and posts each only at the
 * 40th MPI call of the kinds below after it (a test of its own request
 * answers "not done" until then), or at the first call that may block,
 * its own Wait among them.  UCX does the like
 * while an endpoint connects or its send queue is full: the request keeps
 * a pointer to the buffer, read at a later progress.  MPI-4.0 §3.7.2
 * forbids touching a send buffer before its send completes; a send whose
 * buffer changed before it was posted here prints
 *   late_isend: rank R: the buffer of a pending send changed
 * and the job aborts.  The sends are made with PMPI_Send_init and
 * PMPI_Start, and completed with the handle freed, as an Isend's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LATE_MAX 4096 /* sends held at once */
#define LATE_SNAP 256 /* bytes compared */
#define LATE_AFTER 40 /* MPI calls before a held send is posted */

struct late {
    MPI_Request req; /* MPI_REQUEST_NULL: free entry */
    const void *buf;
    int bytes, started, calls;
    unsigned char snap[LATE_SNAP];
};

static struct late held[LATE_MAX];
static int nheld, tag = -2;

static struct late *find(MPI_Request r)
{
    for (int i = 0; r != MPI_REQUEST_NULL && i < nheld; i++)
        if (held[i].req == r)
            return &held[i];
    return NULL;
}

static void start(struct late *l)
{
    int rank = -1;
    if (l->started)
        return;
    l->started = 1;
    if (memcmp(l->buf, l->snap, (size_t)l->bytes)) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr,
                "late_isend: rank %d: the buffer of a pending send changed\n",
                rank);
        fflush(stderr);
        abort();
    }
    PMPI_Start(&l->req);
}

/* One more MPI call: held sends old enough are posted; all of them when
 * the call may block (else a peer could wait for one forever). */
static void tick(int blocking)
{
    for (int i = 0; i < nheld; i++)
        if (held[i].req != MPI_REQUEST_NULL &&
            (blocking || ++held[i].calls >= LATE_AFTER))
            start(&held[i]);
}

/* The request completed: freed as an Isend's would be. */
static void forget(struct late *l, MPI_Request *req)
{
    PMPI_Request_free(&l->req);
    *req = MPI_REQUEST_NULL;
    l->req = MPI_REQUEST_NULL;
    while (nheld && held[nheld - 1].req == MPI_REQUEST_NULL)
        nheld--;
}

#define REAL(name, ...)                                                        \
    static int (*real)(__VA_ARGS__);                                           \
    if (!real)                                                                 \
        *(void **)&real = dlsym(RTLD_NEXT, name);

int PMPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int t,
               MPI_Comm comm, MPI_Request *req)
{
    REAL("PMPI_Isend", const void *, int, MPI_Datatype, int, int, MPI_Comm,
         MPI_Request *);
    if (tag == -2) {
        const char *s = getenv("LATE_ISEND_TAG");
        tag = s ? atoi(s) : 7;
    }
    tick(0);
    int i = 0;
    while (i < nheld && held[i].req != MPI_REQUEST_NULL)
        i++;
    if (t != tag || type != MPI_BYTE || count > LATE_SNAP || i == LATE_MAX)
        return real(buf, count, type, dest, t, comm, req);
    int rc = PMPI_Send_init(buf, count, type, dest, t, comm, req);
    if (rc != MPI_SUCCESS)
        return rc;
    struct late *l = &held[i];
    l->req = *req;
    l->buf = buf;
    l->bytes = count;
    l->started = l->calls = 0;
    memcpy(l->snap, buf, (size_t)count);
    if (i == nheld)
        nheld++;
    return rc;
}

int PMPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    REAL("PMPI_Test", MPI_Request *, int *, MPI_Status *);
    struct late *l = find(*req);
    tick(0);
    if (!l)
        return real(req, flag, st);
    if (!l->started) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    int rc = real(req, flag, st);
    if (rc == MPI_SUCCESS && *flag)
        forget(l, req);
    return rc;
}

int PMPI_Wait(MPI_Request *req, MPI_Status *st)
{
    REAL("PMPI_Wait", MPI_Request *, MPI_Status *);
    struct late *l = find(*req);
    tick(1);
    if (!l)
        return real(req, st);
    int rc = real(req, st);
    if (rc == MPI_SUCCESS)
        forget(l, req);
    return rc;
}

/* Calls hotbuf's progress makes all the time: they count. */
int PMPI_Iprobe(int src, int t, MPI_Comm comm, int *flag, MPI_Status *st)
{
    REAL("PMPI_Iprobe", int, int, MPI_Comm, int *, MPI_Status *);
    tick(0);
    return real(src, t, comm, flag, st);
}

int PMPI_Improbe(int src, int t, MPI_Comm comm, int *flag, MPI_Message *m,
                 MPI_Status *st)
{
    REAL("PMPI_Improbe", int, int, MPI_Comm, int *, MPI_Message *,
         MPI_Status *);
    tick(0);
    return real(src, t, comm, flag, m, st);
}

int PMPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag,
                 MPI_Status *st)
{
    REAL("PMPI_Testany", int, MPI_Request *, int *, int *, MPI_Status *);
    tick(0);
    return real(n, reqs, idx, flag, st);
}

/* Calls that may block: every held send is posted first. */
int PMPI_Recv(void *buf, int count, MPI_Datatype type, int src, int t,
              MPI_Comm comm, MPI_Status *st)
{
    REAL("PMPI_Recv", void *, int, MPI_Datatype, int, int, MPI_Comm,
         MPI_Status *);
    tick(1);
    return real(buf, count, type, src, t, comm, st);
}

int PMPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int t,
              MPI_Comm comm)
{
    REAL("PMPI_Send", const void *, int, MPI_Datatype, int, int, MPI_Comm);
    tick(1);
    return real(buf, count, type, dest, t, comm);
}

int PMPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    REAL("PMPI_Waitall", int, MPI_Request *, MPI_Status *);
    tick(1);
    return real(n, reqs, sts);
}

int PMPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *st)
{
    REAL("PMPI_Waitany", int, MPI_Request *, int *, MPI_Status *);
    tick(1);
    return real(n, reqs, idx, st);
}

int PMPI_Barrier(MPI_Comm comm)
{
    REAL("PMPI_Barrier", MPI_Comm);
    tick(1);
    return real(comm);
}
