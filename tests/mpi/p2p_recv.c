/* Every receive-side call hotbuf wraps, in C, at 2 ranks: each rank sends
 * to the other and receives with Recv, Irecv, Recv_init, Sendrecv(_replace),
 * Isendrecv(_replace) and the large-count forms (MPI-4), Probe, Iprobe,
 * Mprobe, Improbe + Mrecv/Imrecv, completes with every Wait/Test form
 * (STATUS(ES)_IGNORE included), Request_get_status, cancels a receive,
 * frees requests and communicators, reads MPI_TAG_UB.  Rank 0 prints every
 * rank's results (statuses, counts, indices, data digests): the output is
 * deterministic and must not change under hotbuf (tests/run-tests.sh
 * p2p_recv; p2p_route checks that every call reached hotbuf). */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"

/* MPI_STATUSES_IGNORE is a null array to gcc 12 (MPICH's mpi.h), and
 * MPI_Attr_get is deprecated but still what programs call. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define LOG_LEN 8192
#define N 64

static char log_text[LOG_LEN];
static size_t log_used;
static int peer;

static void out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_used += (size_t)vsnprintf(log_text + log_used, LOG_LEN - log_used, fmt,
                                  ap);
    va_end(ap);
}

/* A status as the application sees it (source, tag, count of ints). */
static void status_out(const char *what, const MPI_Status *st)
{
    int count = -1;
    MPI_Get_count(st, MPI_INT, &count);
    out("%s src=%d tag=%d count=%d\n", what, st->MPI_SOURCE, st->MPI_TAG,
        count);
}

static void fill(int *buf, int n, int seed)
{
    for (int i = 0; i < n; i++)
        buf[i] = seed * 1000 + i;
}

static void data_out(const char *what, const int *buf, int n)
{
    out("%s data=%lx\n", what, digest(buf, (size_t)n * sizeof(int)));
}

static void send_tags(int first, int n, int len)
{
    int buf[N];
    for (int t = first; t < first + n; t++) {
        fill(buf, len, t);
        MPI_Send(buf, len, MPI_INT, peer, t, MPI_COMM_WORLD);
    }
}

static void blocking(void)
{
    int buf[N];
    MPI_Status st;
    send_tags(1, 2, 8);
    MPI_Recv(buf, N, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    status_out("recv any", &st);
    data_out("recv any", buf, 8);
    MPI_Recv(buf, N, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    data_out("recv ignore", buf, 8);

    int sbuf[N], rbuf[N];
    fill(sbuf, 5, 10);
    MPI_Sendrecv(sbuf, 5, MPI_INT, peer, 3, rbuf, N, MPI_INT, peer, 3,
                 MPI_COMM_WORLD, &st);
    status_out("sendrecv", &st);
    data_out("sendrecv", rbuf, 5);
    fill(buf, 6, 11);
    MPI_Sendrecv_replace(buf, 6, MPI_INT, peer, 4, peer, 4, MPI_COMM_WORLD,
                         &st);
    status_out("sendrecv_replace", &st);
    data_out("sendrecv_replace", buf, 6);
}

static void wait_test(void)
{
    int a[N], b[N], c[N];
    MPI_Request r[3];
    MPI_Status st, sts[3];
    int flag = 0, index = -1, outcount = 0, indices[3];

    MPI_Irecv(a, N, MPI_INT, peer, 10, MPI_COMM_WORLD, &r[0]);
    send_tags(10, 1, 3);
    MPI_Wait(&r[0], &st);
    status_out("wait", &st);
    out("wait null=%d\n", r[0] == MPI_REQUEST_NULL);

    MPI_Irecv(a, N, MPI_INT, peer, 11, MPI_COMM_WORLD, &r[0]);
    send_tags(11, 1, 4);
    for (flag = 0; !flag;)
        MPI_Test(&r[0], &flag, &st);
    status_out("test", &st);

    /* Request_get_status: completes without freeing; Wait frees. */
    MPI_Irecv(a, N, MPI_INT, peer, 12, MPI_COMM_WORLD, &r[0]);
    send_tags(12, 1, 5);
    for (flag = 0; !flag;)
        MPI_Request_get_status(r[0], &flag, &st);
    status_out("get_status", &st);
    out("get_status still=%d\n", r[0] != MPI_REQUEST_NULL);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);

    MPI_Irecv(a, N, MPI_INT, peer, 13, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(b, N, MPI_INT, peer, 14, MPI_COMM_WORLD, &r[1]);
    MPI_Irecv(c, N, MPI_INT, MPI_ANY_SOURCE, 15, MPI_COMM_WORLD, &r[2]);
    send_tags(13, 3, 6);
    MPI_Waitall(3, r, sts);
    for (int i = 0; i < 3; i++)
        status_out("waitall", &sts[i]);
    data_out("waitall", c, 6);

    MPI_Irecv(a, N, MPI_INT, peer, 16, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(b, N, MPI_INT, peer, 17, MPI_COMM_WORLD, &r[1]);
    send_tags(16, 2, 7);
    for (flag = 0; !flag;)
        MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
    data_out("testall", b, 7);

    /* Waitany / Testany: a null request first, so the index is 1. */
    r[0] = MPI_REQUEST_NULL;
    MPI_Irecv(a, N, MPI_INT, peer, 18, MPI_COMM_WORLD, &r[1]);
    send_tags(18, 1, 2);
    MPI_Waitany(2, r, &index, &st);
    out("waitany index=%d\n", index);
    status_out("waitany", &st);
    MPI_Waitany(2, r, &index, &st);
    out("waitany all null index=%d\n", index == MPI_UNDEFINED ? -99 : index);
    MPI_Irecv(a, N, MPI_INT, peer, 19, MPI_COMM_WORLD, &r[1]);
    send_tags(19, 1, 2);
    for (flag = 0; !flag;)
        MPI_Testany(2, r, &index, &flag, MPI_STATUS_IGNORE);
    out("testany index=%d\n", index);
    MPI_Testany(2, r, &index, &flag, &st);
    out("testany all null flag=%d index=%d\n", flag,
        index == MPI_UNDEFINED ? -99 : index);

    /* Waitsome / Testsome: completions gathered until all are done (how
     * many per call depends on timing; which ones and their statuses do
     * not). */
    int done[3] = {0, 0, 0}, tags[3] = {-1, -1, -1};
    r[0] = MPI_REQUEST_NULL;
    MPI_Irecv(a, N, MPI_INT, peer, 20, MPI_COMM_WORLD, &r[1]);
    MPI_Irecv(b, N, MPI_INT, peer, 21, MPI_COMM_WORLD, &r[2]);
    send_tags(20, 2, 3);
    for (;;) {
        MPI_Waitsome(3, r, &outcount, indices, sts);
        if (outcount == MPI_UNDEFINED)
            break;
        for (int i = 0; i < outcount; i++) {
            done[indices[i]]++;
            tags[indices[i]] = sts[i].MPI_TAG;
        }
    }
    out("waitsome done=%d%d%d tags=%d,%d\n", done[0], done[1], done[2],
        tags[1], tags[2]);
    memset(done, 0, sizeof(done));
    MPI_Irecv(a, N, MPI_INT, peer, 22, MPI_COMM_WORLD, &r[0]);
    r[1] = MPI_REQUEST_NULL;
    MPI_Irecv(b, N, MPI_INT, peer, 23, MPI_COMM_WORLD, &r[2]);
    send_tags(22, 2, 3);
    for (;;) {
        MPI_Testsome(3, r, &outcount, indices, MPI_STATUSES_IGNORE);
        if (outcount == MPI_UNDEFINED)
            break;
        for (int i = 0; i < outcount; i++)
            done[indices[i]]++;
    }
    out("testsome done=%d%d%d\n", done[0], done[1], done[2]);
}

static void persistent(void)
{
    int a[N], b[N], s[N];
    MPI_Request r[3];
    MPI_Status sts[3];
    MPI_Recv_init(a, N, MPI_INT, peer, 30, MPI_COMM_WORLD, &r[0]);
    MPI_Recv_init(b, N, MPI_INT, MPI_ANY_SOURCE, 31, MPI_COMM_WORLD, &r[1]);
    MPI_Send_init(s, 4, MPI_INT, peer, 31, MPI_COMM_WORLD, &r[2]);
    for (int round = 0; round < 3; round++) {
        MPI_Start(&r[0]);
        send_tags(30, 1, 4 + round);
        MPI_Wait(&r[0], &sts[0]);
        status_out("recv_init start", &sts[0]);
        fill(s, 4, 40 + round);
        MPI_Startall(2, &r[1]);
        MPI_Waitall(2, &r[1], sts);
        status_out("recv_init startall", &sts[0]);
        data_out("recv_init startall", b, 4);
    }
    for (int i = 0; i < 3; i++)
        MPI_Request_free(&r[i]);
    out("request_free null=%d\n", r[0] == MPI_REQUEST_NULL);
}

static void probes(void)
{
    int buf[N], flag = 0;
    MPI_Status st;
    MPI_Message msg;
    MPI_Request r;

    send_tags(40, 4, 9);
    MPI_Probe(peer, 40, MPI_COMM_WORLD, &st);
    status_out("probe", &st);
    MPI_Recv(buf, N, MPI_INT, peer, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (flag = 0; !flag;)
        MPI_Iprobe(MPI_ANY_SOURCE, 41, MPI_COMM_WORLD, &flag, &st);
    status_out("iprobe", &st);
    MPI_Recv(buf, N, MPI_INT, peer, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Mprobe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st);
    status_out("mprobe", &st);
    MPI_Mrecv(buf, N, MPI_INT, &msg, &st);
    status_out("mrecv", &st);
    data_out("mrecv", buf, 9);
    out("mrecv null=%d\n", msg == MPI_MESSAGE_NULL);
    for (flag = 0; !flag;)
        MPI_Improbe(peer, 43, MPI_COMM_WORLD, &flag, &msg, &st);
    status_out("improbe", &st);
    MPI_Imrecv(buf, N, MPI_INT, &msg, &r);
    MPI_Wait(&r, &st);
    status_out("imrecv", &st);
    data_out("imrecv", buf, 9);
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    out("mprobe proc_null no_proc=%d src=%d\n", msg == MPI_MESSAGE_NO_PROC,
        st.MPI_SOURCE == MPI_PROC_NULL);
}

static void cancel(void)
{
    int buf[N], cancelled = 0;
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(buf, N, MPI_INT, peer, 999, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &cancelled);
    out("cancel recv cancelled=%d null=%d\n", cancelled,
        r == MPI_REQUEST_NULL);
}

static void tag_ub(void)
{
    int *v = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
    out("tag_ub %d\n", flag ? *v : -1);
    int *w = NULL;
    MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &w, &flag);
    out("tag_ub %d\n", flag ? *w : -1);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &v, &flag);
    out("wtime_is_global flag=%d\n", flag);
}

static void communicators(void)
{
    MPI_Comm dup, dup2;
    int buf[N];
    MPI_Status st;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    fill(buf, 3, 50);
    MPI_Sendrecv_replace(buf, 3, MPI_INT, peer, 5, peer, 5, dup, &st);
    status_out("dup sendrecv_replace", &st);
    MPI_Comm_free(&dup);
    out("comm_free null=%d\n", dup == MPI_COMM_NULL);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
    MPI_Comm_disconnect(&dup2);
    out("comm_disconnect null=%d\n", dup2 == MPI_COMM_NULL);
}

#if MPI_VERSION >= 4
/* MPICH 4.0.2's Wait leaves the status of an Isendrecv(_replace) request
 * unwritten (plain MPI: the caller's old contents stay), so only their data
 * is printed. */
static void mpi4(void)
{
    int a[N], b[N];
    MPI_Request r;
    MPI_Status st;
    fill(a, 4, 60);
    MPI_Isendrecv(a, 4, MPI_INT, peer, 60, b, N, MPI_INT, peer, 60,
                  MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    data_out("isendrecv", b, 4);
    fill(a, 5, 61);
    MPI_Isendrecv_replace(a, 5, MPI_INT, peer, 61, peer, 61, MPI_COMM_WORLD,
                          &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    data_out("isendrecv_replace", a, 5);

    /* Large counts (small values). */
    send_tags(62, 1, 3);
    MPI_Recv_c(b, (MPI_Count)N, MPI_INT, peer, 62, MPI_COMM_WORLD, &st);
    status_out("recv_c", &st);
    MPI_Irecv_c(b, (MPI_Count)N, MPI_INT, peer, 63, MPI_COMM_WORLD, &r);
    send_tags(63, 1, 3);
    MPI_Wait(&r, &st);
    status_out("irecv_c", &st);
    MPI_Recv_init_c(b, (MPI_Count)N, MPI_INT, peer, 64, MPI_COMM_WORLD, &r);
    MPI_Start(&r);
    send_tags(64, 1, 3);
    MPI_Wait(&r, &st);
    MPI_Request_free(&r);
    status_out("recv_init_c", &st);
    fill(a, 4, 65);
    MPI_Sendrecv_c(a, 4, MPI_INT, peer, 65, b, N, MPI_INT, peer, 65,
                   MPI_COMM_WORLD, &st);
    status_out("sendrecv_c", &st);
    MPI_Sendrecv_replace_c(a, 4, MPI_INT, peer, 66, peer, 66, MPI_COMM_WORLD,
                           &st);
    status_out("sendrecv_replace_c", &st);
    MPI_Isendrecv_c(a, 4, MPI_INT, peer, 67, b, N, MPI_INT, peer, 67,
                    MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    data_out("isendrecv_c", b, 4);
    MPI_Isendrecv_replace_c(a, 4, MPI_INT, peer, 68, peer, 68, MPI_COMM_WORLD,
                            &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    data_out("mpi4", a, 4);
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "p2p_recv: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = 1 - rank;
    blocking();
    wait_test();
    persistent();
    probes();
    cancel();
    tag_ub();
    communicators();
#if MPI_VERSION >= 4
    mpi4();
#endif
    static char all[2][LOG_LEN];
    MPI_Gather(log_text, LOG_LEN, MPI_CHAR, all, LOG_LEN, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < 2; r++)
            printf("== rank %d\n%s", r, all[r]);
    MPI_Finalize();
    return 0;
}
