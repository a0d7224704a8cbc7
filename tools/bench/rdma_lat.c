/* Raw latency of hotbuf's verbs transport (shim/transport/), 2 ranks in the
 * soft-RoCE guest; tools/bench/run-bench-rdma.sh puts perftest beside it.
 *
 *   rdma_lat [ITERS]        (default 200, like perftest -n 200; 20 warm-up rounds)
 *
 * write     ping-pong as ib_write_lat does it: rank 0 RDMA-writes SIZE bytes
 *           into rank 1, rank 1 polls the last byte, writes back, rank 0
 *           polls; one sample = round trip / 2.  Posts are unsignaled
 *           (one in signal_every signaled), inline up to max_inline, and the
 *           pollers run hb_transport_progress meanwhile, as a caller would.
 * write_imm the same with RDMA WRITE WITH IMMEDIATE, each side waiting for
 *           the immediate's receive completion (the notification path).
 * send      the same with SEND WITH IMMEDIATE into the receive buffers the
 *           transport posted in advance (recv_bytes = 64 KiB here), each
 *           side waiting for on_recv, which reads the last byte (as a
 *           receiver copying out would touch the data); inline up to
 *           max_inline, as write and write_imm.
 * send_noinline  the same, never inline (the NIC reads the source buffer).
 * read      rank 0 posts a signaled RDMA READ of SIZE bytes and waits
 *           (hb_transport_wait); one sample = post to completion.  Rank 1
 *           sleeps meanwhile (not spinning in MPI), like perftest's server.
 * reg       ibv_reg_mr / ibv_dereg_mr of 4 KiB .. 4 MiB (pages touched
 *           first), and memcpy of the same size: R, C and R/C, the reuse
 *           count from which registering pays (the paper's n > R/(C-V)).
 * RDMA_LAT_OPS (comma list; default write,write_imm,send,send_noinline,
 * read,reg) picks the modes, RDMA_LAT_INLINE the inline size asked for
 * (default the transport's 64; the INFO line says what the device gave).
 * Output: "RESULT key=value ..." lines (median "typical" as perftest's
 * t_typical, mean "avg", minimum "min", 99th percentile "p99"). */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transport/transport.h"

#define MAXSZ (64 * 1024)
#define WARM 20

static int rank;
static MPI_Comm comm;
static volatile uint64_t imm_seen, recv_seen;
static volatile uint8_t recv_last; /* last byte of the last SEND received */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *op, size_t size, double *s, int n)
{
    qsort(s, (size_t)n, sizeof(double), cmp_d);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += s[i];
    printf(
        "RESULT op=%s size=%zu iters=%d typical=%.2f avg=%.2f min=%.2f p99=%.2f\n",
        op, size, n, s[n / 2], sum / n, s[0],
        s[(int)(n * 0.99) < n ? (int)(n * 0.99) : n - 1]);
    fflush(stdout);
}

static int allgather_cb(const void *mine, void *all, size_t bytes, void *ctx)
{
    return PMPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                          *(MPI_Comm *)ctx) == MPI_SUCCESS
               ? 0
               : -1;
}

static void on_imm(void *ctx, int peer, uint32_t imm, uint32_t len)
{
    imm_seen++;
}

static void on_recv(void *ctx, int peer, uint32_t imm, const void *data,
                    uint32_t len)
{
    recv_last = len ? ((const uint8_t *)data)[len - 1] : 0;
    recv_seen++;
}

struct remote {
    uint64_t addr;
    uint32_t rkey, pad;
};

static struct hb_transport *t;
static struct ibv_mr *mr;
static uint8_t *buf; /* [0, MAXSZ): landing area; [MAXSZ, 2 MAXSZ): source */
static struct remote peer_mem;
static uint32_t max_inline;

#define NO_INLINE 0x100 /* post(): never inline */

static void post(int op, size_t size, uint32_t imm, unsigned flags,
                 struct hb_tr_op *o)
{
    int peer = 1 - rank, rc;
    if (op != HB_TR_READ && size <= max_inline && !(flags & NO_INLINE))
        flags |= HB_TR_F_INLINE;
    flags &= ~NO_INLINE;
    for (;;) {
        switch (op) {
        case HB_TR_WRITE:
            rc = hb_transport_write(t, peer, buf + MAXSZ, size, mr->lkey,
                                    peer_mem.addr, peer_mem.rkey, flags, o);
            break;
        case HB_TR_WRITE_IMM:
            rc = hb_transport_write_imm(t, peer, buf + MAXSZ, size, mr->lkey,
                                        peer_mem.addr, peer_mem.rkey, imm,
                                        flags, o);
            break;
        case HB_TR_SEND:
            rc = hb_transport_send(t, peer, buf + MAXSZ, size, mr->lkey, imm,
                                   flags, o);
            break;
        default:
            rc = hb_transport_read(t, peer, buf + MAXSZ, size, mr->lkey,
                                   peer_mem.addr, peer_mem.rkey, flags, o);
            break;
        }
        if (rc == HB_TR_OK)
            return;
        if (rc != HB_TR_AGAIN && rc != HB_TR_BUSY) {
            fprintf(stderr, "rdma_lat: post failed (%d): %s\n", rc,
                    hb_transport_peer_reason(t, peer));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        hb_transport_progress(t);
    }
}

/* Waits for the last byte of the landing area to become v. */
static void poll_byte(size_t size, uint8_t v)
{
    volatile uint8_t *p = buf + size - 1;
    unsigned spins = 0;
    while (*p != v)
        if ((++spins & 15) == 0)
            hb_transport_progress(t);
}

static void bench_write(size_t size, int iters, int imm)
{
    double *s = malloc(sizeof(double) * (size_t)iters);
    struct hb_tr_op o;
    int op = imm ? HB_TR_WRITE_IMM : HB_TR_WRITE;
    memset(buf, 0, MAXSZ);
    PMPI_Barrier(comm);
    for (int i = -WARM; i < iters; i++) {
        uint8_t v = (uint8_t)((i & 0x7f) + 1);
        buf[MAXSZ + size - 1] = v;
        if (rank == 0) {
            double t0 = now_us();
            uint64_t want = imm_seen + 1;
            post(op, size, (uint32_t)i, 0, &o);
            if (imm)
                while (imm_seen < want)
                    hb_transport_progress(t);
            else
                poll_byte(size, v);
            if (i >= 0)
                s[i] = (now_us() - t0) / 2;
        } else {
            uint64_t want = imm_seen + 1;
            if (imm)
                while (imm_seen < want)
                    hb_transport_progress(t);
            else
                poll_byte(size, v);
            post(op, size, (uint32_t)i, 0, &o);
        }
    }
    /* let the last unsignaled writes complete before the next size */
    hb_transport_wait(t, &o, NULL, NULL);
    PMPI_Barrier(comm);
    if (rank == 0)
        report(imm ? "write_imm" : "write", size, s, iters);
    free(s);
}

/* Waits for the next SEND and checks that its last byte is v. */
static void wait_recv(uint64_t want, uint8_t v)
{
    while (recv_seen < want)
        hb_transport_progress(t);
    if (recv_last != v) {
        fprintf(stderr, "rdma_lat: SEND carried %u, want %u\n",
                (unsigned)recv_last, (unsigned)v);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

static void bench_send(size_t size, int iters, int inl)
{
    double *s = malloc(sizeof(double) * (size_t)iters);
    struct hb_tr_op o;
    unsigned flags = inl ? 0 : NO_INLINE;
    PMPI_Barrier(comm);
    for (int i = -WARM; i < iters; i++) {
        uint8_t v = (uint8_t)((i & 0x7f) + 1);
        uint64_t want = recv_seen + 1;
        buf[MAXSZ + size - 1] = v;
        if (rank == 0) {
            double t0 = now_us();
            post(HB_TR_SEND, size, (uint32_t)i, flags, &o);
            wait_recv(want, v);
            if (i >= 0)
                s[i] = (now_us() - t0) / 2;
        } else {
            wait_recv(want, v);
            post(HB_TR_SEND, size, (uint32_t)i, flags, &o);
        }
    }
    hb_transport_wait(t, &o, NULL, NULL);
    PMPI_Barrier(comm);
    if (rank == 0)
        report(inl ? "send" : "send_noinline", size, s, iters);
    free(s);
}

static void bench_read(size_t size, int iters)
{
    double *s = malloc(sizeof(double) * (size_t)iters);
    struct hb_tr_op o;
    PMPI_Barrier(comm);
    if (rank == 1)
        usleep(1000); /* rank 0 starts reading while rank 1 goes to sleep */
    if (rank == 0) {
        for (int i = -WARM; i < iters; i++) {
            double t0 = now_us();
            post(HB_TR_READ, size, 0, HB_TR_F_SIGNAL, &o);
            if (hb_transport_wait(t, &o, NULL, NULL) != HB_TR_OK) {
                fprintf(stderr, "rdma_lat: read failed: %s\n",
                        hb_transport_peer_reason(t, 1));
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            if (i >= 0)
                s[i] = now_us() - t0;
        }
        report("read", size, s, iters);
    }
    /* rank 1 has nothing to do during reads: it sleeps instead of spinning in
     * a barrier, so the CPU is free for the emulated NIC (perftest's read
     * server sleeps in a socket read likewise) */
    MPI_Request rq;
    int done = 0;
    PMPI_Ibarrier(comm, &rq);
    while (!done) {
        PMPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (!done && rank == 1)
            nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    free(s);
}

static void bench_reg(void)
{
    struct ibv_pd *pd = hb_transport_pd(t);
    for (size_t size = 4096; size <= 4u << 20; size *= 2) {
        int reps = size <= (256u << 10) ? 41 : 15;
        double *r = malloc(sizeof(double) * (size_t)reps),
               *d = malloc(sizeof(double) * (size_t)reps),
               *c = malloc(sizeof(double) * (size_t)reps);
        uint8_t *a = NULL, *b = NULL;
        if (posix_memalign((void **)&a, 4096, size) ||
            posix_memalign((void **)&b, 4096, size))
            MPI_Abort(MPI_COMM_WORLD, 2);
        memset(a, 1, size);
        memset(b, 2, size);
        for (int i = 0; i < reps; i++) {
            double t0 = now_us();
            struct ibv_mr *m =
                ibv_reg_mr(pd, a, size,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ);
            double t1 = now_us();
            if (!m) {
                perror("rdma_lat: ibv_reg_mr");
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            ibv_dereg_mr(m);
            double t2 = now_us();
            memcpy(b, a, size);
            __asm__ volatile("" ::"r"(b) : "memory");
            double t3 = now_us();
            r[i] = t1 - t0, d[i] = t2 - t1, c[i] = t3 - t2;
        }
        qsort(r, (size_t)reps, sizeof(double), cmp_d);
        qsort(d, (size_t)reps, sizeof(double), cmp_d);
        qsort(c, (size_t)reps, sizeof(double), cmp_d);
        double R = r[reps / 2], C = c[reps / 2];
        printf(
            "RESULT op=reg size=%zu reps=%d reg=%.2f dereg=%.2f per_page=%.3f copy=%.2f "
            "reg_over_copy=%.1f\n",
            size, reps, R, d[reps / 2], R / (double)(size / 4096), C,
            C > 0 ? R / C : 0);
        fflush(stdout);
        free(a), free(b), free(r), free(d), free(c);
    }
}

/* Whether RDMA_LAT_OPS (a comma list; unset: all) names op. */
static int want(const char *op)
{
    const char *l = getenv("RDMA_LAT_OPS");
    size_t n = strlen(op);
    for (const char *p = l; p && *p;
         p += strcspn(p, ",") + (p[strcspn(p, ",")] != 0))
        if (strncmp(p, op, n) == 0 && (p[n] == ',' || p[n] == 0))
            return 1;
    return !l || !*l;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 200, n;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &n);
    if (n != 2 || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "rdma_lat: run with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    struct hb_transport_params p;
    hb_transport_params_default(&p);
    p.device = getenv("RXEVM_DEV") ? getenv("RXEVM_DEV") : "";
    p.on_imm = on_imm;
    p.on_recv = on_recv;
    p.recv_bytes = MAXSZ;
    p.peer_budget += (size_t)p.rq_depth * MAXSZ;
    if (getenv("RDMA_LAT_INLINE"))
        p.max_inline = (uint32_t)atoi(getenv("RDMA_LAT_INLINE"));
    char why[256] = "";
    int ok = hb_transport_open(&p, rank, 2, &t, why, sizeof(why)) == 0, all;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all) {
        fprintf(stderr, "rdma_lat: rank %d: %s\n", rank, why);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (hb_transport_bootstrap(t, allgather_cb, &comm, why, sizeof(why)))
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (posix_memalign((void **)&buf, 4096, 2 * MAXSZ))
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(buf, 0, 2 * MAXSZ);
    mr = ibv_reg_mr(hb_transport_pd(t), buf, 2 * MAXSZ,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                        IBV_ACCESS_REMOTE_READ);
    if (!mr)
        MPI_Abort(MPI_COMM_WORLD, 2);
    struct remote mine = {(uintptr_t)buf, mr->rkey, 0}, both[2];
    PMPI_Allgather(&mine, sizeof(mine), MPI_BYTE, both, sizeof(mine), MPI_BYTE,
                   comm);
    peer_mem = both[1 - rank];
    /* connect: both sides progress until the pair is up */
    double t0 = now_us();
    while (hb_transport_connect(t, 1 - rank) != HB_TR_OK ||
           hb_transport_peer_state(t, 1 - rank) != HB_PEER_CONNECTED) {
        hb_transport_progress(t);
        if (now_us() - t0 > 30e6) {
            fprintf(stderr, "rdma_lat: no connection: %s\n",
                    hb_transport_peer_reason(t, 1 - rank));
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    PMPI_Barrier(comm);
    for (double t1 = now_us(); now_us() - t1 < 100e3;) /* late RTUs */
        hb_transport_progress(t);
    struct hb_transport_info in;
    hb_transport_get_info(t, &in);
    max_inline = in.max_inline;
    if (rank == 0)
        printf(
            "INFO device=%s port=%d gid_index=%d gid_type=\"%s\" mtu=%d max_inline=%u "
            "signal_every=%u sq=%u connect_us=%.0f\n",
            in.device, in.port, in.gid_index, in.gid_type, in.active_mtu,
            in.max_inline, in.signal_every, in.sq_depth, now_us() - t0);
    /* the ping-pong modes interleaved size by size: the emulated machine
     * drifts by tens of percent over a run, so ops compared at one size
     * must run close together */
    for (size_t s = 8; s <= MAXSZ; s *= 2) {
        if (want("write"))
            bench_write(s, iters, 0);
        if (want("write_imm"))
            bench_write(s, iters, 1);
        if (want("send"))
            bench_send(s, iters, 1);
        if (want("send_noinline"))
            bench_send(s, iters, 0);
    }
    for (size_t s = 8; want("read") && s <= MAXSZ; s *= 2)
        bench_read(s, iters);
    if (rank == 0 && want("reg"))
        bench_reg();
    PMPI_Barrier(comm);
    ibv_dereg_mr(mr);
    char cwhy[200] = "";
    if (hb_transport_close(t, cwhy, sizeof(cwhy)))
        fprintf(stderr, "rdma_lat: rank %d: %s\n", rank, cwhy);
    MPI_Finalize();
    return 0;
}
