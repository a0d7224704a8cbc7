/* The receive side under hotbuf's matcher (issue 12): every case of
 * P2P-DESIGN.md §5.7 and §5.9 on a ring, each rank receiving from its
 * left neighbour.  Receives pending when the communicator enters pull
 * (first, for HOTBUF_P2P_PULL=after:2), probes and matched probes,
 * cancel, persistent receives (on a new communicator, and after its
 * free), mixed Waitany/Testsome/Testall arrays,
 * MPI_STATUS_IGNORE, derived datatypes (count and elements), dup'd and
 * split communicators, Comm_free with a receive pending, Sendrecv
 * (_replace), Request_get_status and truncation under MPI_ERRORS_RETURN.
 * Every rank folds what it received (buffers and statuses) into a digest;
 * rank 0 prints them with a line per case.  Deterministic: no wildcard
 * ever has two candidate senders. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"

static unsigned long h = DIGEST_INIT;
static int rank, size, left, right;

static void fold(const void *p, size_t n)
{
    h = digest_more(h, p, n);
}

/* What the application can see of a status. */
static int verbose; /* -v: every rank's digest after each case */

static void fold_status(const MPI_Status *st, MPI_Datatype type)
{
    int v[5] = {st->MPI_SOURCE, st->MPI_TAG, 0, 0, 0};
    MPI_Get_count(st, type, &v[2]);
    MPI_Get_elements(st, type, &v[3]);
    MPI_Test_cancelled(st, &v[4]);
    fold(v, sizeof(v));
    if (verbose > 1)
        fprintf(stderr, "rank %d status %d %d %d %d %d\n", rank, v[0], v[1],
                v[2], v[3], v[4]);
}

static void say(const char *what)
{
    if (verbose)
        fprintf(stderr, "rank %d %016lx after %s\n", rank, h, what);
    if (rank == 0)
        printf("%s\n", what);
}

/* Two receives pending in MPI when the third receive call pulls the
 * communicator (after:2): both are migrated, their handles stay valid. */
static void migrate(void)
{
    int a[4] = {0}, b[4] = {0}, c = 0, v = rank * 10;
    MPI_Request q[2];
    MPI_Status st[2];
    MPI_Irecv(a, 4, MPI_INT, left, 14, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(b, 4, MPI_INT, MPI_ANY_SOURCE, 15, MPI_COMM_WORLD, &q[1]);
    MPI_Send(&v, 1, MPI_INT, right, 11, MPI_COMM_WORLD);
    MPI_Recv(&c, 1, MPI_INT, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    int s[4] = {v, v + 1, v + 2, v + 3};
    MPI_Send(s, 3, MPI_INT, right, 14, MPI_COMM_WORLD);
    MPI_Send(s, 2, MPI_INT, right, 15, MPI_COMM_WORLD);
    MPI_Waitall(2, q, st);
    fold(a, sizeof(a));
    fold(b, sizeof(b));
    fold(&c, sizeof(c));
    fold_status(&st[0], MPI_INT);
    fold_status(&st[1], MPI_INT);
    say("migrate: 2 pending receives");
}

/* On a communicator of its own (after:2 pulls it at the third receive
 * call): a receive the application cancelled while it was MPI's must not
 * be migrated (cancelling it twice crashed Open MPI), and a persistent
 * receive that MPI had matched, truncated, must still raise
 * MPI_ERR_TRUNCATE from MPI_Test (Open MPI's Testany drops a persistent
 * request's error). */
static void pending_at_pull(void)
{
    MPI_Comm d;
    int x = 0, p[3] = {-1, -1, -1}, s[3] = {rank, rank + 1, rank + 2};
    int flag = 0, rc = MPI_SUCCESS, v[2] = {0, 0};
    MPI_Request q, pq;
    MPI_Status st;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPICH */
    MPI_Irecv(&x, 1, MPI_INT, left, 16, d, &q);
    MPI_Cancel(&q);
    MPI_Recv_init(p, 2, MPI_INT, left, 17, d, &pq);
    MPI_Send(s, 3, MPI_INT, right, 17, d);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Start(&pq);
    MPI_Iprobe(left, 99, d, &flag, MPI_STATUS_IGNORE);
    while (!flag && rc == MPI_SUCCESS)
        rc = MPI_Test(&pq, &flag, &st);
    MPI_Error_class(rc, &v[0]);
    if (pq != MPI_REQUEST_NULL) /* Open MPI frees it on the error */
        MPI_Request_free(&pq);
    MPI_Wait(&q, &st);
    MPI_Test_cancelled(&st, &v[1]);
    fold(v, sizeof(v));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Barrier(d);
    MPI_Comm_free(&d);
    if (rank == 0)
        printf("pending at pull: persistent %s, cancelled %d\n",
               v[0] == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE" : "other", v[1]);
    say("pending at pull");
}

/* Ssend to itself on a one-rank communicator, its receive posted first:
 * MPICH's self path completes the send inside the receive call, unseen by
 * its progress engine (hotbuf keeps such communicators on MPI). */
static void self_ssend(void)
{
    MPI_Comm one;
    int a[3] = {rank, 7, 9}, b[3] = {0, 0, 0};
    MPI_Request q;
    MPI_Status st;
    MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &one);
    MPI_Irecv(b, 3, MPI_INT, 0, 5, one, &q);
    MPI_Ssend(a, 3, MPI_INT, 0, 5, one);
    MPI_Wait(&q, &st);
    fold(b, sizeof(b));
    fold_status(&st, MPI_INT);
    MPI_Comm_free(&one);
    say("self: Ssend to a posted receive on a one-rank communicator");
}

/* Probe answers what a receive with its source and tag then gets. */
static void probes(void)
{
    int s[3] = {rank, rank + 1, rank + 2}, r[3], flag = 0;
    MPI_Status st;
    MPI_Message msg;
    MPI_Request q;
    for (int t = 21; t <= 23; t++)
        MPI_Send(s, t - 20, MPI_INT, right, t, MPI_COMM_WORLD);
    MPI_Probe(left, 23, MPI_COMM_WORLD, &st);
    fold_status(&st, MPI_INT);
    while (!flag)
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    fold_status(&st, MPI_INT); /* tag 21: the first one */
    MPI_Mprobe(left, 22, MPI_COMM_WORLD, &msg, &st);
    fold_status(&st, MPI_INT);
    memset(r, 0, sizeof(r));
    MPI_Mrecv(r, 3, MPI_INT, &msg, &st);
    fold(r, sizeof(r));
    fold_status(&st, MPI_INT);
    for (flag = 0; !flag;)
        MPI_Improbe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
    fold_status(&st, MPI_INT);
    MPI_Imrecv(r, 3, MPI_INT, &msg, &q);
    MPI_Wait(&q, &st);
    fold_status(&st, MPI_INT);
    MPI_Recv(r, 3, MPI_INT, left, 23, MPI_COMM_WORLD, &st);
    fold(r, sizeof(r));
    fold_status(&st, MPI_INT);
    say("probes: probe, iprobe, mprobe+mrecv, improbe+imrecv");
}

static void cancel(void)
{
    int r = 0, cancelled = 0;
    MPI_Request q;
    MPI_Status st;
    MPI_Irecv(&r, 1, MPI_INT, left, 31, MPI_COMM_WORLD, &q);
    MPI_Cancel(&q);
    MPI_Wait(&q, &st);
    MPI_Test_cancelled(&st, &cancelled);
    fold(&cancelled, sizeof(cancelled));
    say(cancelled ? "cancel: cancelled" : "cancel: NOT cancelled");
}

static void persistent(void)
{
    int a = 0, b = 0, s[2];
    MPI_Request q[2];
    MPI_Status st[2];
    MPI_Recv_init(&a, 1, MPI_INT, left, 41, MPI_COMM_WORLD, &q[0]);
    MPI_Recv_init(&b, 1, MPI_INT, MPI_ANY_SOURCE, 42, MPI_COMM_WORLD, &q[1]);
    for (int round = 0; round < 3; round++) {
        s[0] = rank * 100 + round;
        s[1] = -s[0];
        MPI_Startall(2, q);
        MPI_Send(&s[1], 1, MPI_INT, right, 42, MPI_COMM_WORLD);
        MPI_Send(&s[0], 1, MPI_INT, right, 41, MPI_COMM_WORLD);
        MPI_Waitall(2, q, st);
        fold(&a, sizeof(a));
        fold(&b, sizeof(b));
        fold_status(&st[0], MPI_INT);
        fold_status(&st[1], MPI_INT);
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    say("persistent: 3 rounds of Startall");
}

/* Persistent requests on a new communicator, started first (without
 * progress inside MPI that communicator is found unpullable right then),
 * then after the free of their communicator, which they outlive (MPI-4.0
 * §7.4.3: the free waits for every reference; hotbuf forgot the
 * communicator at the free, MPI has the receive). */
static void persistent_freed(void)
{
    MPI_Comm d;
    MPI_Request q[2];
    MPI_Status st[2];
    int a, s;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Recv_init(&a, 1, MPI_INT, left, 43, d, &q[0]);
    MPI_Send_init(&s, 1, MPI_INT, right, 43, d, &q[1]);
    for (int round = 0; round < 4; round++) {
        if (round == 1)
            MPI_Comm_free(&d);
        a = -1;
        s = rank * 1000 + round;
        MPI_Startall(2, q);
        MPI_Waitall(2, q, st);
        fold(&a, sizeof(a));
        fold_status(&st[0], MPI_INT);
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    say("persistent: on a new communicator, then after its free");
}

/* Arrays that mix hotbuf's receives, MPI's sends and null handles. */
static void mixed(void)
{
    int r[3] = {0}, s[3] = {rank, rank + 7, rank + 9}, idx, flag, n, done = 0;
    int ix[4];
    MPI_Request q[4];
    MPI_Status st, sts[4];
    MPI_Irecv(&r[0], 1, MPI_INT, left, 51, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&s[0], 1, MPI_INT, right, 51, MPI_COMM_WORLD, &q[1]);
    q[2] = MPI_REQUEST_NULL;
    MPI_Irecv(&r[1], 1, MPI_INT, MPI_ANY_SOURCE, 52, MPI_COMM_WORLD, &q[3]);
    MPI_Send(&s[1], 1, MPI_INT, right, 52, MPI_COMM_WORLD);
    int seen[4] = {0};
    while (1) {
        MPI_Waitany(4, q, &idx, &st);
        if (idx == MPI_UNDEFINED)
            break;
        seen[idx]++;
        if (idx != 1)
            fold_status(&st, MPI_INT);
    }
    fold(seen, sizeof(seen));
    if (verbose > 1)
        fprintf(stderr, "rank %d seen %d %d %d %d r %d %d\n", rank, seen[0],
                seen[1], seen[2], seen[3], r[0], r[1]);
    fold(r, sizeof(r));
    /* Testsome with statuses, then without, then Testall. */
    for (int pass = 0; pass < 2; pass++) {
        MPI_Irecv(&r[2], 1, MPI_INT, left, 53 + 3 * pass, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(&s[2], 1, MPI_INT, right, 53 + 3 * pass, MPI_COMM_WORLD, &q[1]);
        q[2] = q[3] = MPI_REQUEST_NULL;
        for (done = 0; done < 2;) {
            MPI_Testsome(4, q, &n, ix, pass ? MPI_STATUSES_IGNORE : sts);
            if (n == MPI_UNDEFINED)
                break;
            for (int k = 0; k < n; k++)
                if (!pass && ix[k] == 0)
                    fold_status(&sts[k], MPI_INT);
            done += n;
        }
        fold(&r[2], sizeof(int));
    }
    MPI_Irecv(&r[0], 1, MPI_INT, left, 54, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&s[0], 1, MPI_INT, right, 54, MPI_COMM_WORLD, &q[1]);
    for (flag = 0; !flag;)
        MPI_Testall(2, q, &flag, sts);
    fold_status(&sts[0], MPI_INT);
    MPI_Irecv(&r[1], 1, MPI_INT, left, 55, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&s[1], 1, MPI_INT, right, 55, MPI_COMM_WORLD, &q[1]);
    MPI_Waitsome(2, q, &n, ix, MPI_STATUSES_IGNORE);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    fold(r, sizeof(r));
    say("mixed: Waitany, Testsome, Testall, Waitsome");
}

/* A vector type: count and elements of a partial message. */
static void datatypes(void)
{
    double s[12], r[12];
    MPI_Datatype vec;
    MPI_Status st;
    for (int i = 0; i < 12; i++)
        s[i] = rank + i * 0.25, r[i] = -1;
    MPI_Type_vector(2, 2, 3, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Request q;
    MPI_Irecv(r, 2, vec, left, 61, MPI_COMM_WORLD, &q);
    MPI_Type_free(&vec); /* legal: the receive keeps it */
    MPI_Send(s, 5, MPI_DOUBLE, right, 61, MPI_COMM_WORLD);
    MPI_Wait(&q, &st);
    MPI_Type_vector(2, 2, 3, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    fold(r, sizeof(r));
    fold_status(&st, vec);
    fold_status(&st, MPI_DOUBLE);
    MPI_Type_free(&vec);
    say("datatypes: partial vector message");
}

/* dup'd and split communicators, one freed with a receive pending. */
static void communicators(void)
{
    MPI_Comm d, sp;
    MPI_Request q[2];
    MPI_Status st;
    int r = -1, s = rank, sr, ss;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sp);
    MPI_Comm_rank(sp, &sr);
    MPI_Comm_size(sp, &ss);
    MPI_Sendrecv(&s, 1, MPI_INT, (sr + 1) % ss, 70, &r, 1, MPI_INT,
                 MPI_ANY_SOURCE, MPI_ANY_TAG, sp, &st);
    fold(&r, sizeof(r));
    fold_status(&st, MPI_INT);
    s = rank * 3;
    MPI_Sendrecv_replace(&s, 1, MPI_INT, right, 72, left, 72, d, &st);
    fold(&s, sizeof(s));
    fold_status(&st, MPI_INT);
    MPI_Irecv(&r, 1, MPI_INT, left, 71, d, &q[0]);
    MPI_Isend(&s, 1, MPI_INT, right, 71, d, &q[1]);
    MPI_Comm_free(&d); /* the receive is still pending */
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    fold(&r, sizeof(r));
    MPI_Comm_free(&sp);
    say("communicators: dup, split, Comm_free with a receive pending");
}

/* Request_get_status does not free; Request_free of a pending receive. */
static void status_calls(void)
{
    int r = 0, s = rank + 5, flag = 0, dummy = 0;
    MPI_Request q, f;
    MPI_Status st;
    MPI_Irecv(&r, 1, MPI_INT, left, 81, MPI_COMM_WORLD, &q);
    MPI_Irecv(&dummy, 1, MPI_INT, left, 82, MPI_COMM_WORLD, &f);
    MPI_Request_free(&f);
    MPI_Send(&s, 1, MPI_INT, right, 82, MPI_COMM_WORLD);
    MPI_Send(&s, 1, MPI_INT, right, 81, MPI_COMM_WORLD);
    while (!flag)
        MPI_Request_get_status(q, &flag, &st);
    fold_status(&st, MPI_INT);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    fold(&r, sizeof(r));
    MPI_Recv(&r, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    fold_status(&st, MPI_INT);
    say("status: Request_get_status, Request_free pending, PROC_NULL");
}

/* Truncation under MPI_ERRORS_RETURN: blocking receives raise it on the
 * communicator's handler (MPI_COMM_WORLD keeps ERRORS_ARE_FATAL), buffer
 * and status as MPI's own Recv leaves them. */
static void truncation(void)
{
    MPI_Comm d;
    int s[8], r[8], rc, cls[3];
    MPI_Request q;
    MPI_Status st;
    for (int i = 0; i < 8; i++)
        s[i] = rank * 8 + i, r[i] = -1;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    MPI_Send(s, 8, MPI_INT, right, 91, d);
    rc = MPI_Recv(r, 4, MPI_INT, left, 91, d, &st);
    MPI_Error_class(rc, &cls[0]);
    fold(r, sizeof(r));
    fold_status(&st, MPI_BYTE);
    MPI_Send(s, 5, MPI_INT, right, 93, d);
    rc = MPI_Sendrecv(s, 0, MPI_INT, right, 94, r, 3, MPI_INT, left, 93, d,
                      &st);
    MPI_Error_class(rc, &cls[1]);
    fold(r, sizeof(r));
    MPI_Recv(r, 0, MPI_INT, left, 94, d, MPI_STATUS_IGNORE);
    /* MPICH raises a Wait's error on MPI_COMM_WORLD's handler */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Send(s, 6, MPI_INT, right, 92, d);
    MPI_Irecv(r, 2, MPI_INT, left, 92, d, &q);
    rc = MPI_Wait(&q, &st);
    MPI_Error_class(rc, &cls[2]);
    fold(r, sizeof(r));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Barrier(d);
    MPI_Comm_free(&d);
    if (rank == 0)
        for (int i = 0; i < 3; i++)
            printf("truncation: %s %s\n",
                   i == 0 ? "Recv" : i == 1 ? "Sendrecv" : "Irecv+Wait",
                   cls[i] == MPI_ERR_TRUNCATE ? "MPI_ERR_TRUNCATE" : "other");
    say("truncation");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    verbose = argc > 1 && !strcmp(argv[1], "-v") ? 1 : argc > 1 && !strcmp(argv[1], "-vv") ? 2 : 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    migrate();
    MPI_Barrier(MPI_COMM_WORLD);
    pending_at_pull();
    self_ssend();
    probes();
    cancel();
    persistent();
    persistent_freed();
    mixed();
    datatypes();
    communicators();
    status_calls();
    truncation();
    unsigned long all[64] = {0};
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, all, 1, MPI_UNSIGNED_LONG, 0,
               MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < size && i < 64; i++)
            printf("rank %d digest %016lx\n", i, all[i]);
    MPI_Finalize();
    return 0;
}
