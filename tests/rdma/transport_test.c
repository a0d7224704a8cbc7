/* hotbuf's verbs transport (shim/transport/) against a real device: run in
 * the soft-RoCE guest (tests/rdma/transport.sh).
 *
 *   transport_test mpi
 *       under mpiexec with 2 or 4 ranks: bootstrap through PMPI_Allgather,
 *       on-demand connection while the target sits in a PMPI_Recv loop,
 *       simultaneous connection from both sides, RDMA WRITE and READ of
 *       8 B .. 1 MiB verified on the other side, WRITE WITH IMMEDIATE,
 *       selective signaling with a fence, back-pressure, a bad rkey (failed
 *       completion), a QP forced into ERROR, a peer that never progresses,
 *       a rank whose open failed, the memory accounting.  Rank 0 prints one
 *       PASS/FAIL line per check (checks are collective: all ranks agree).
 *   transport_test open --name N [--device D] [--port P] [--no-memlock-check]
 *                       (--expect TEXT | --expect-ok)
 *       no MPI: hb_transport_open must fail with TEXT in its reason (or
 *       succeed): missing device, port 2, no device, port down, memlock.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transport/transport.h"

#define MIB (1024 * 1024)

static int rank, nranks;
static MPI_Comm comm,
    ycomm; /* the transport's communicator; one for the yield probe */
static int failures;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- open mode (no MPI) ------------------------------------------------------------- */
static int fake_calls;

/* An allgather of one rank in a job of 3: checks the absent block's shape. */
static int fake_allgather(const void *mine, void *all, size_t bytes, void *ctx)
{
    static const unsigned char zero[HB_TRANSPORT_BOOT_BYTES];
    fake_calls++;
    if (bytes != HB_TRANSPORT_BOOT_BYTES || memcmp(mine, zero, bytes))
        return -1;
    memset(all, 0, 3 * bytes); /* the receive buffer holds 3 blocks */
    return 0;
}

/* A registration left on the transport's PD: close must say so (EBUSY
 * from ibv_dealloc_pd) instead of tearing down silently.  The MR is leaked
 * on purpose; the process exits right after. */
static int close_leak(const struct hb_transport_params *p)
{
    static char page[4096] __attribute__((aligned(4096)));
    struct hb_transport *t = NULL;
    char why[256] = "";
    if (hb_transport_open(p, 0, 3, &t, why, sizeof(why))) {
        printf("FAIL transport/close_leak: second open failed: %s\n", why);
        return 1;
    }
    struct ibv_mr *mr = ibv_reg_mr(hb_transport_pd(t), page, sizeof(page),
                                   IBV_ACCESS_LOCAL_WRITE);
    int rc = hb_transport_close(t, why, sizeof(why));
    int ok = mr && rc != 0 && strstr(why, "registration was left") &&
             !strchr(why, '\n');
    printf("%s transport/close_leak: %s\n", ok ? "PASS" : "FAIL",
           mr ? why : "ibv_reg_mr failed");
    return !ok;
}

static int open_mode(int argc, char **argv)
{
    const char *name = "open", *expect = NULL;
    int expect_ok = 0;
    struct hb_transport_params p;
    hb_transport_params_default(&p);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--name") && i + 1 < argc)
            name = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            p.device = argv[++i];
        else if (!strcmp(argv[i], "--port") && i + 1 < argc)
            p.port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-memlock-check"))
            p.memlock_check = 0;
        else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
            expect = argv[++i];
        else if (!strcmp(argv[i], "--expect-ok"))
            expect_ok = 1;
        else {
            fprintf(stderr, "transport_test: bad argument %s\n", argv[i]);
            return 2;
        }
    }
    struct hb_transport *t = NULL;
    char why[256] = "";
    double t0 = now();
    int rc = hb_transport_open(&p, 0, 3, &t, why, sizeof(why));
    double dt = now() - t0;
    if (expect_ok) {
        if (rc == 0) {
            struct hb_transport_info in;
            hb_transport_get_info(t, &in);
            printf(
                "PASS transport/open_%s: %s port %d gid[%d] %s %s mtu %d inline %u; fork: %s (%.1f ms)\n",
                name, in.device, in.port, in.gid_index, in.gid_type, in.gid,
                in.active_mtu, in.max_inline, in.fork, dt * 1e3);
            if (hb_transport_close(t, why, sizeof(why))) {
                printf("FAIL transport/close_%s: %s\n", name, why);
                return 1;
            }
            return close_leak(&p);
        }
        printf("FAIL transport/open_%s: open failed: %s\n", name, why);
        return 1;
    }
    if (rc == 0) {
        printf(
            "FAIL transport/open_%s: opened, expected an error with \"%s\"\n",
            name, expect);
        hb_transport_close(t, NULL, 0);
        return 1;
    }
    int ok = expect && strstr(why, expect) && !strchr(why, '\n');
    /* the failed rank still takes part in the bootstrap (an absent block) */
    char bwhy[128] = "";
    fake_calls = 0;
    int brc =
        hb_transport_bootstrap(NULL, fake_allgather, NULL, bwhy, sizeof(bwhy));
    int arc = hb_transport_bootstrap_absent(3, fake_allgather, NULL);
    int bok = brc != 0 && arc == 0 && fake_calls == 1;
    printf(
        "%s transport/open_%s: error in %.1f ms: %s%s\n",
        ok && bok ? "PASS" : "FAIL", name, dt * 1e3, why,
        bok ? ""
            : " [bootstrap(NULL) must refuse, bootstrap_absent must take part]");
    return !(ok && bok);
}

/* ---- MPI helpers -------------------------------------------------------------------------- */
static void check(int ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check(int ok, const char *name, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!ok)
        fprintf(stderr, "    rank %d: %s: %s\n", rank, name, detail);
    fflush(stderr);
    PMPI_Barrier(comm);
    if (rank == 0) {
        printf("%s transport/%s (%d ranks): %s\n", all ? "PASS" : "FAIL", name,
               nranks, detail);
        fflush(stdout);
    }
    failures += !all;
}

static int allgather_cb(const void *mine, void *all, size_t bytes, void *ctx)
{
    MPI_Comm c = *(MPI_Comm *)ctx;
    return PMPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                          c) == MPI_SUCCESS
               ? 0
               : -1;
}

static void mpi_yield(void *ctx)
{
    int flag;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, *(MPI_Comm *)ctx, &flag,
                MPI_STATUS_IGNORE);
}

static uint8_t pat(uint32_t seed, size_t i)
{
    uint32_t x =
        seed * 2654435761u ^ (uint32_t)i * 0x9E3779B1u ^ (uint32_t)(i >> 32);
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return (uint8_t)x;
}

static void fill(uint8_t *p, size_t n, uint32_t seed, size_t base)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pat(seed, base + i);
}

static size_t mismatches(const uint8_t *p, size_t n, uint32_t seed, size_t base)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += p[i] != pat(seed, base + i);
    return bad;
}

/* ---- the state of one test instance ------------------------------------------------------------ */
struct imm_log {
    int count[64];
    uint32_t imm[64][32];
    uint32_t len[64][32];
};
static struct imm_log imms;

static void on_imm(void *ctx, int peer, uint32_t imm, uint32_t byte_len)
{
    struct imm_log *l = ctx;
    if (peer < 64 && l->count[peer] < 32) {
        l->imm[peer][l->count[peer]] = imm;
        l->len[peer][l->count[peer]] = byte_len;
    }
    if (peer < 64)
        l->count[peer]++;
}

/* SENDs received: immediate, length, and whether the data was right while
 * on_recv ran (the buffer is posted again after it returns). */
struct recv_log {
    int count[64];
    uint32_t imm[64][64];
    uint32_t len[64][64];
    size_t bad[64];
};
static struct recv_log recvs;

static void on_recv(void *ctx, int peer, uint32_t imm, const void *data,
                    uint32_t len)
{
    struct recv_log *l = &recvs;
    (void)ctx;
    if (peer >= 64)
        return;
    int i = l->count[peer]++;
    if (i < 64) {
        l->imm[peer][i] = imm;
        l->len[peer][i] = len;
    }
    /* message i of rank peer is len bytes of pattern 0x5000 + peer * 64 + i */
    l->bad[peer] +=
        mismatches(data, len, (uint32_t)(0x5000 + peer * 64 + i), 0);
}

/* Buffers: recv (peers write here), src (we write from), rsrc (peers read
 * from), rdst (we read into); 1 MiB each, one MR per transport. */
struct bufs {
    uint8_t *recv, *src, *rsrc, *rdst;
};
struct remote {
    uint64_t recv, rsrc;
    uint32_t rkey, pad;
};
struct inst {
    struct hb_transport *t;
    struct ibv_mr *mr;
    struct remote *rem; /* nranks */
};

static struct bufs B;
static uint8_t *arena;

static int open_inst(struct inst *in, struct hb_transport_params *p, int absent,
                     char *why, size_t len)
{
    memset(in, 0, sizeof(*in));
    int rc = absent ? -1 : hb_transport_open(p, rank, nranks, &in->t, why, len);
    if (rc) { /* as the runtime does it: an absent block after the failed open */
        rc = hb_transport_bootstrap_absent(nranks, allgather_cb, &comm) ? -2
                                                                        : -1;
    } else if (hb_transport_bootstrap(in->t, allgather_cb, &comm, why, len)) {
        rc = -2;
    } else {
        in->mr = ibv_reg_mr(hb_transport_pd(in->t), arena, 4 * MIB,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                IBV_ACCESS_REMOTE_READ);
        rc = in->mr ? 0 : -3;
    }
    /* every rank takes part, also one without a transport */
    struct remote mine = {(uintptr_t)B.recv, (uintptr_t)B.rsrc,
                          in->mr ? in->mr->rkey : 0, 0};
    in->rem = calloc((size_t)nranks, sizeof(*in->rem));
    PMPI_Allgather(&mine, sizeof(mine), MPI_BYTE, in->rem, sizeof(mine),
                   MPI_BYTE, comm);
    return rc;
}

static void close_inst(struct inst *in)
{
    PMPI_Barrier(comm); /* nobody writes into our memory any more */
    if (in->mr)
        ibv_dereg_mr(in->mr);
    char why[200] = "";
    if (hb_transport_close(in->t, why, sizeof(why)))
        printf("FAIL transport/close_rank%d: %s\n", rank, why);
    free(in->rem);
    memset(in, 0, sizeof(*in));
}

/* Posts, connecting on demand and retrying while busy; progress meanwhile. */
static int post_retry(struct inst *in, int peer, int op, void *buf, size_t len,
                      uint64_t raddr, uint32_t rkey, uint32_t imm,
                      unsigned flags, struct hb_tr_op *o, double limit)
{
    double end = now() + limit;
    for (;;) {
        int rc;
        switch (op) {
        case HB_TR_READ:
            rc = hb_transport_read(in->t, peer, buf, len, in->mr->lkey, raddr,
                                   rkey, flags, o);
            break;
        case HB_TR_WRITE_IMM:
            rc = hb_transport_write_imm(in->t, peer, buf, len, in->mr->lkey,
                                        raddr, rkey, imm, flags, o);
            break;
        case HB_TR_SEND:
            rc = hb_transport_send(in->t, peer, buf, len, in->mr->lkey, imm,
                                   flags, o);
            break;
        default:
            rc = hb_transport_write(in->t, peer, buf, len, in->mr->lkey, raddr,
                                    rkey, flags, o);
            break;
        }
        if (rc != HB_TR_AGAIN && rc != HB_TR_BUSY)
            return rc;
        if (now() > end)
            return rc;
        hb_transport_progress(in->t);
        mpi_yield(&ycomm);
    }
}

static void watchdog(int sig)
{
    (void)sig;
    static const char m[] = "FAIL transport/watchdog: the test hung (150 s)\n";
    ssize_t w = write(1, m, sizeof(m) - 1);
    (void)w;
    _exit(3);
}

static const size_t sizes[] = {
    8,     13,    16,     32,     64,     100,     128,    256,   512,
    1000,  1024,  2048,   4095,   4096,   4097,    8192,   16384, 32768,
    65536, 65537, 131072, 262144, 524288, 1000003, 1048576};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* ---- phases ------------------------------------------------------------------------------------- */
static void phase_on_demand(struct inst *in)
{
    /* rank 0 connects to every other rank; each target sits in a PMPI_Recv
     * loop and runs progress only between receives.  While the connection
     * is not there, rank 0 sends its messages with MPI (the fallback). */
    enum { TAG = 11, STOP = -1 };
    int ok = 1, msgs = 0;
    double t0 = now(), worst = 0;
    char detail[160] = "";
    if (rank == 0) {
        for (int r = 1; r < nranks; r++) {
            int iter = 0, rc;
            double ts = now();
            while ((rc = hb_transport_connect(in->t, r)) == HB_TR_AGAIN &&
                   now() - ts < 20) {
                PMPI_Send(&iter, 1, MPI_INT, r, TAG, comm);
                iter++;
                if (iter % 64 == 0)
                    usleep(200);
            }
            int stop = STOP;
            PMPI_Send(&stop, 1, MPI_INT, r, TAG, comm);
            msgs += iter;
            if (now() - ts > worst)
                worst = now() - ts;
            if (rc != HB_TR_OK) {
                ok = 0;
                snprintf(detail, sizeof(detail), "rank %d: %s (%s)", r,
                         rc == HB_TR_AGAIN ? "not connected in 20 s" : "failed",
                         hb_transport_peer_reason(in->t, r));
            }
        }
    } else {
        int v, received = 0;
        do {
            PMPI_Recv(&v, 1, MPI_INT, 0, TAG, comm, MPI_STATUS_IGNORE);
            received++;
            hb_transport_progress(in->t);
        } while (v != STOP);
        /* the RTU may still be on its way: progress until it is in (bounded) */
        double ts = now();
        while (hb_transport_peer_state(in->t, 0) != HB_PEER_CONNECTED &&
               now() - ts < 10)
            hb_transport_progress(in->t);
        if (hb_transport_peer_state(in->t, 0) != HB_PEER_CONNECTED) {
            ok = 0;
            snprintf(detail, sizeof(detail), "target state %s: %s",
                     hb_transport_state_name(hb_transport_peer_state(in->t, 0)),
                     hb_transport_peer_reason(in->t, 0));
        }
        /* on demand: nothing else got connected */
        for (int r = 1; r < nranks; r++)
            if (hb_transport_peer_state(in->t, r) != HB_PEER_IDLE) {
                ok = 0;
                snprintf(
                    detail, sizeof(detail),
                    "rank %d has state %s for untouched rank %d", rank,
                    hb_transport_state_name(hb_transport_peer_state(in->t, r)),
                    r);
            }
    }
    PMPI_Bcast(&msgs, 1, MPI_INT, 0, comm);
    PMPI_Bcast(&worst, 1, MPI_DOUBLE, 0, comm);
    check(
        ok, "on_demand_connect",
        "rank 0 -> %d peer(s) sitting in PMPI_Recv loops; %d MPI fallback messages meanwhile, "
        "slowest connection %.1f ms, total %.1f ms%s%s",
        nranks - 1, msgs, worst * 1e3, (now() - t0) * 1e3,
        detail[0] ? "; " : "", detail);
}

static void phase_simultaneous(struct inst *in)
{
    PMPI_Barrier(comm);
    double t0 = now();
    for (int r = 0; r < nranks; r++)
        if (r != rank)
            hb_transport_connect(
                in->t, r); /* every REQ goes out before any is handled */
    int ok = 0;
    while (now() - t0 < 20) {
        hb_transport_progress(in->t);
        ok = 1;
        for (int r = 0; r < nranks; r++)
            if (r != rank && hb_transport_connect(in->t, r) != HB_TR_OK)
                ok = 0;
        if (ok)
            break;
    }
    double dt = now() - t0;
    /* let late RTUs in before the state check below */
    PMPI_Barrier(comm);
    for (double ts = now(); now() - ts < 0.3;)
        hb_transport_progress(in->t);
    char detail[200] = "";
    for (int r = 0; r < nranks; r++)
        if (r != rank &&
            hb_transport_peer_state(in->t, r) != HB_PEER_CONNECTED) {
            ok = 0;
            snprintf(detail, sizeof(detail), "; rank %d -> %d: %s %s", rank, r,
                     hb_transport_state_name(hb_transport_peer_state(in->t, r)),
                     hb_transport_peer_reason(in->t, r));
        }
    struct hb_transport_stats st;
    hb_transport_get_stats(in->t, &st);
    long coll = (long)st.collisions, req = (long)st.connects_requested,
         acc = (long)st.connects_accepted;
    long sums[3] = {coll, req, acc}, tot[3];
    PMPI_Allreduce(sums, tot, 3, MPI_LONG, MPI_SUM, comm);
    check(
        ok && tot[0] > 0, "simultaneous_connect",
        "all %d pairs asked from both sides at once: all connected in %.1f ms; %ld collisions "
        "resolved (lower rank wins), %ld requests, %ld accepted%s",
        nranks * (nranks - 1) / 2, dt * 1e3, tot[0], tot[1], tot[2], detail);
}

/* Connects to the right neighbour while answering the left one: both sides
 * run progress (a target blocked in an MPI call answers nobody). */
static void phase_neighbours(struct inst *in)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    double t0 = now();
    int a = HB_TR_AGAIN;
    enum hb_peer_state l = HB_PEER_IDLE;
    while (now() - t0 < 20) {
        a = hb_transport_connect(in->t, right);
        hb_transport_progress(in->t);
        l = hb_transport_peer_state(in->t, left);
        if ((a == HB_TR_OK && l == HB_PEER_CONNECTED) || a == HB_TR_FAILED ||
            l == HB_PEER_FAILED)
            break;
    }
    double dt = now() - t0;
    check(
        a == HB_TR_OK && l == HB_PEER_CONNECTED, "neighbour_connect",
        "ring neighbours connected on demand (some pairs new, some from before) in %.1f ms%s%s",
        dt * 1e3, a == HB_TR_OK && l == HB_PEER_CONNECTED ? "" : ": ",
        a == HB_TR_OK ? hb_transport_peer_reason(in->t, left)
                      : hb_transport_peer_reason(in->t, right));
}

static void phase_write_read(struct inst *in)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int ok = 1;
    char detail[200] = "";
    size_t total_bad = 0;
    double t0 = now();
    /* writes: each rank writes to its right neighbour, which verifies */
    for (size_t k = 0; k < NSIZES && ok; k++) {
        size_t s = sizes[k];
        uint32_t seed = (uint32_t)(rank * 1000 + k);
        fill(B.src, s, seed, 0);
        struct hb_tr_op o;
        int rc =
            post_retry(in, right, HB_TR_WRITE, B.src, s, in->rem[right].recv,
                       in->rem[right].rkey, 0, HB_TR_F_SIGNAL, &o, 20);
        if (rc == HB_TR_OK)
            rc = hb_transport_wait(in->t, &o, mpi_yield, &ycomm);
        if (rc != HB_TR_OK) {
            ok = 0;
            snprintf(detail, sizeof(detail),
                     "write of %zu B to rank %d: rc %d (%s)", s, right, rc,
                     hb_transport_peer_reason(in->t, right));
        }
        int token = ok, got = 0;
        PMPI_Sendrecv(&token, 1, MPI_INT, right, 21, &got, 1, MPI_INT, left, 21,
                      comm, MPI_STATUS_IGNORE);
        if (got) {
            size_t bad = mismatches(B.recv, s, (uint32_t)(left * 1000 + k), 0);
            if (bad) {
                ok = 0;
                total_bad += bad;
                snprintf(detail, sizeof(detail),
                         "%zu of %zu B written by rank %d differ", bad, s,
                         left);
            }
        }
        int all;
        PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
        ok = all;
    }
    double tw = now() - t0;
    check(ok, "rdma_write_sizes",
          "%zu sizes 8 B .. 1 MiB (odd ones too) written to the right "
          "neighbour, verified byte by byte there (%.0f ms)%s%s",
          NSIZES, tw * 1e3, detail[0] ? "; " : "", detail);

    /* reads: each rank reads from its left neighbour's rsrc at an offset */
    ok = 1;
    detail[0] = 0;
    t0 = now();
    for (size_t k = 0; k < NSIZES && ok; k++) {
        size_t s = sizes[k], off = (k * 4099 + 5) % (MIB - s + 1);
        memset(B.rdst, 0, s);
        struct hb_tr_op o;
        int rc = post_retry(in, left, HB_TR_READ, B.rdst, s,
                            in->rem[left].rsrc + off, in->rem[left].rkey, 0, 0,
                            &o, 20); /* unsignaled: the wait fences */
        if (rc == HB_TR_OK)
            rc = hb_transport_wait(in->t, &o, mpi_yield, &ycomm);
        if (rc != HB_TR_OK) {
            ok = 0;
            snprintf(detail, sizeof(detail),
                     "read of %zu B from rank %d: rc %d (%s)", s, left, rc,
                     hb_transport_peer_reason(in->t, left));
        } else {
            size_t bad = mismatches(B.rdst, s, (uint32_t)(left + 7777), off);
            if (bad) {
                ok = 0;
                snprintf(detail, sizeof(detail),
                         "%zu of %zu B read from rank %d differ", bad, s, left);
            }
        }
    }
    struct hb_transport_stats st;
    hb_transport_get_stats(in->t, &st);
    check(ok, "rdma_read_sizes",
          "%zu sizes 8 B .. 1 MiB read from the left neighbour at odd "
          "offsets, verified (%.0f ms; %llu fences so far)%s%s",
          NSIZES, (now() - t0) * 1e3, (unsigned long long)st.fences,
          detail[0] ? "; " : "", detail);
    PMPI_Barrier(comm);
}

static void phase_signaling(struct inst *in)
{
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    struct hb_transport_stats a, b;
    hb_transport_get_stats(in->t, &a);
    /* 10 unsignaled 64-B writes (inline when the device allows): a wait on
     * the last needs a fence; the data must all be there afterwards. */
    struct hb_transport_info info;
    hb_transport_get_info(in->t, &info);
    unsigned fl = info.max_inline >= 64 ? HB_TR_F_INLINE : 0;
    struct hb_tr_op o = {0, 0};
    int ok = 1;
    for (int i = 0; i < 10 && ok; i++) {
        fill(B.src + i * 64, 64, (uint32_t)(rank * 31 + i), 0);
        ok = post_retry(in, right, HB_TR_WRITE, B.src + i * 64, 64,
                        in->rem[right].recv + i * 64, in->rem[right].rkey, 0,
                        fl, &o, 20) == HB_TR_OK;
        if (fl)
            memset(B.src + i * 64, 0xee,
                   64); /* inline: the buffer is free at once */
    }
    if (ok)
        ok = hb_transport_wait(in->t, &o, mpi_yield, &ycomm) == HB_TR_OK;
    hb_transport_get_stats(in->t, &b);
    int token = ok, got = 0;
    PMPI_Sendrecv(&token, 1, MPI_INT, right, 22, &got, 1, MPI_INT, left, 22,
                  comm, MPI_STATUS_IGNORE);
    size_t bad = 0;
    for (int i = 0; i < 10; i++)
        bad += mismatches(B.recv + i * 64, 64, (uint32_t)(left * 31 + i), 0);
    long signaled = (long)(b.signaled - a.signaled),
         fences = (long)(b.fences - a.fences);
    check(
        ok && got && !bad && fences >= 1 && signaled <= 2,
        "selective_signaling",
        "10 unsignaled %s64-B writes + wait on the last: %ld signaled WR(s) (the fence), %ld "
        "fence(s), %zu bad bytes at the target (signal every %u, max inline %u)",
        fl ? "inline " : "", signaled, fences, bad, info.signal_every,
        info.max_inline);

    /* EINVAL for what cannot be done */
    int e1 = hb_transport_write(in->t, right, B.src, info.max_inline + 1,
                                in->mr->lkey, in->rem[right].recv,
                                in->rem[right].rkey, HB_TR_F_INLINE, &o);
    int e2 = hb_transport_read(in->t, right, B.src, 8, in->mr->lkey,
                               in->rem[right].recv, in->rem[right].rkey,
                               HB_TR_F_INLINE, &o);
    int e3 = hb_transport_write(in->t, nranks + 5, B.src, 8, in->mr->lkey, 0, 0,
                                0, &o);
    check(
        e1 == HB_TR_EINVAL && e2 == HB_TR_EINVAL && e3 == HB_TR_EINVAL,
        "invalid_requests",
        "inline beyond max_inline, inline READ, peer out of range: HB_TR_EINVAL (%d %d %d)",
        e1, e2, e3);
    PMPI_Barrier(comm);
}

/* Back-pressure, made deterministic: rank 1 sits in PMPI_Recv, so it does
 * not repost receives; after rq_depth immediates rank 0's next WRITE WITH
 * IMMEDIATE meets "receiver not ready" and everything behind it waits in
 * the send queue, which fills: posts return HB_TR_BUSY (and stay busy
 * through progress calls) instead of blocking.  When rank 1 progresses,
 * the queue drains and every immediate arrives, in order. */
static void phase_back_pressure(struct inst *in)
{
    struct hb_transport_info info;
    hb_transport_get_info(in->t, &info);
    memset(&imms, 0, sizeof(imms));
    PMPI_Barrier(comm);
    int posted = 0, busy = 0, still_busy = 0, wrc = HB_TR_OK, arrived = 0,
        in_order = 1;
    double drain = 0;
    if (rank == 0) {
        struct hb_tr_op o, last = {0, 0};
        int limit = 4 * (int)(info.sq_depth + info.rq_depth);
        for (; posted < limit; posted++) {
            int rc = hb_transport_write_imm(in->t, 1, B.src, 64, in->mr->lkey,
                                            in->rem[1].recv, in->rem[1].rkey,
                                            (uint32_t)posted, 0, &o);
            if (rc == HB_TR_BUSY) {
                busy = 1;
                break;
            }
            if (rc != HB_TR_OK)
                break;
            last = o;
        }
        if (busy) { /* still busy after a while of progress: the queue is stuck on rank 1 */
            for (double ts = now(); now() - ts < 0.2;)
                hb_transport_progress(in->t);
            still_busy = hb_transport_write_imm(
                             in->t, 1, B.src, 64, in->mr->lkey, in->rem[1].recv,
                             in->rem[1].rkey, 0, 0, &o) == HB_TR_BUSY;
        }
        PMPI_Send(&posted, 1, MPI_INT, 1, 41, comm);
        double ts = now();
        if (last.seq)
            wrc = hb_transport_wait(in->t, &last, mpi_yield, &ycomm);
        drain = now() - ts;
    } else if (rank == 1) {
        PMPI_Recv(&posted, 1, MPI_INT, 0, 41, comm, MPI_STATUS_IGNORE);
        double ts = now();
        while (imms.count[0] < posted && now() - ts < 20)
            hb_transport_progress(in->t);
        arrived = imms.count[0];
        for (int i = 0; i < arrived && i < 32; i++)
            in_order = in_order && imms.imm[0][i] == (uint32_t)i;
        drain = now() - ts;
    }
    int info1[3] = {arrived, in_order, 0};
    if (rank == 1)
        PMPI_Send(info1, 3, MPI_INT, 0, 42, comm);
    if (rank == 0)
        PMPI_Recv(info1, 3, MPI_INT, 1, 42, comm, MPI_STATUS_IGNORE);
    int ok = rank != 0 || (busy && still_busy && posted >= (int)info.sq_depth &&
                           posted <= (int)(info.sq_depth + info.rq_depth) &&
                           wrc == HB_TR_OK && info1[0] == posted && info1[1]);
    check(
        ok, "back_pressure",
        "rank 1 in PMPI_Recv (no receives reposted): rank 0's WRITE WITH IMMEDIATE got HB_TR_BUSY "
        "after %d posts (send queue %u, receives %u), still busy after 0.2 s of progress: %s; "
        "once rank 1 progressed all %d arrived in order (%s), wait rc %d in %.0f ms",
        posted, info.sq_depth, info.rq_depth, still_busy ? "yes" : "no",
        info1[0], info1[1] ? "yes" : "no", wrc, drain * 1e3);
    PMPI_Barrier(comm);
}

static void phase_imm(struct inst *in)
{
    enum { N = 12 };
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    memset(&imms, 0, sizeof(imms));
    memset(B.recv, 0, 64 * N);
    PMPI_Barrier(comm);
    int ok = 1;
    struct hb_tr_op o;
    for (int i = 0; i < N && ok; i++) {
        fill(B.src + i * 64, 64, (uint32_t)(0x1000 + rank * 64 + i), 0);
        ok = post_retry(in, right, HB_TR_WRITE_IMM, B.src + i * 64, 64,
                        in->rem[right].recv + i * 64, in->rem[right].rkey,
                        (uint32_t)(rank << 16 | i), 0, &o, 20) == HB_TR_OK;
    }
    /* and an immediate alone (zero-length write) */
    if (ok)
        ok =
            post_retry(in, right, HB_TR_WRITE_IMM, NULL, 0, in->rem[right].recv,
                       in->rem[right].rkey, 0xabcd0000u | (uint32_t)rank,
                       HB_TR_F_SIGNAL, &o, 20) == HB_TR_OK;
    if (ok)
        ok = hb_transport_wait(in->t, &o, mpi_yield, &ycomm) == HB_TR_OK;
    /* the receiver learns of the data from the immediates alone (no MPI message) */
    double ts = now();
    while (imms.count[left] < N + 1 && now() - ts < 20)
        hb_transport_progress(in->t);
    char detail[160] = "";
    if (imms.count[left] != N + 1) {
        ok = 0;
        snprintf(detail, sizeof(detail),
                 "; got %d of %d immediates from rank %d", imms.count[left],
                 N + 1, left);
    } else {
        for (int i = 0; i < N; i++) {
            if (imms.imm[left][i] != (uint32_t)(left << 16 | i) ||
                imms.len[left][i] != 64 ||
                mismatches(B.recv + i * 64, 64,
                           (uint32_t)(0x1000 + left * 64 + i), 0)) {
                ok = 0;
                snprintf(detail, sizeof(detail),
                         "; immediate %d: 0x%x len %u or its data wrong", i,
                         imms.imm[left][i], imms.len[left][i]);
                break;
            }
        }
        if (imms.imm[left][N] != (0xabcd0000u | (uint32_t)left) ||
            imms.len[left][N] != 0) {
            ok = 0;
            snprintf(detail, sizeof(detail),
                     "; zero-length immediate 0x%x len %u", imms.imm[left][N],
                     imms.len[left][N]);
        }
    }
    check(ok, "write_with_imm",
          "%d RDMA WRITE WITH IMMEDIATE of 64 B + 1 zero-length: immediates "
          "in order with the right byte_len, data in place when each arrived%s",
          N, detail);
    PMPI_Barrier(comm);
}

/* SEND WITH IMMEDIATE into the posted receive buffers: 40 messages
 * (more than rq_depth, so receives are posted again) of 0..SEND_MAX bytes,
 * inline and not, a WRITE WITH IMMEDIATE among them (it consumes a
 * receive but not its buffer); one byte over the peer's size is refused. */
#define SEND_MAX 2048
static void phase_send(struct inst *in)
{
    enum { N = 40 };
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    memset(&recvs, 0, sizeof(recvs));
    memset(&imms, 0, sizeof(imms));
    PMPI_Barrier(comm);
    int ok = hb_transport_send_max(in->t, right) == SEND_MAX, einval = 0;
    struct hb_tr_op o;
    for (int i = 0; i < N && ok; i++) {
        size_t len = (size_t)(i * 97) % (SEND_MAX + 1);
        uint8_t *src = B.src + (size_t)i * SEND_MAX;
        fill(src, len, (uint32_t)(0x5000 + rank * 64 + i), 0);
        ok = post_retry(in, right, HB_TR_SEND, src, len, 0, 0,
                        (uint32_t)(rank << 16 | i), i & 1 ? HB_TR_F_INLINE : 0,
                        &o, 20) == HB_TR_OK ||
             (i & 1 && len > 64 &&
              post_retry(in, right, HB_TR_SEND, src, len, 0, 0,
                         (uint32_t)(rank << 16 | i), 0, &o, 20) == HB_TR_OK);
        if (ok && i == N / 2)
            ok = post_retry(in, right, HB_TR_WRITE_IMM, NULL, 0,
                            in->rem[right].recv, in->rem[right].rkey, 0x77u, 0,
                            &o, 20) == HB_TR_OK;
    }
    if (ok)
        einval = hb_transport_send(in->t, right, B.src, SEND_MAX + 1,
                                   in->mr->lkey, 0, 0, &o) == HB_TR_EINVAL;
    double ts = now();
    while (recvs.count[left] < N && now() - ts < 20)
        hb_transport_progress(in->t);
    char detail[160] = "";
    if (recvs.count[left] != N || imms.count[left] != 1)
        snprintf(detail, sizeof(detail), "; got %d of %d SENDs, %d immediates",
                 recvs.count[left], N, imms.count[left]);
    for (int i = 0; !detail[0] && i < N; i++)
        if (recvs.imm[left][i] != (uint32_t)(left << 16 | i) ||
            recvs.len[left][i] != (uint32_t)((size_t)(i * 97) % (SEND_MAX + 1)))
            snprintf(detail, sizeof(detail), "; SEND %d: imm 0x%x len %u", i,
                     recvs.imm[left][i], recvs.len[left][i]);
    if (!detail[0] && recvs.bad[left])
        snprintf(detail, sizeof(detail), "; %zu bad bytes", recvs.bad[left]);
    if (!detail[0] && !einval)
        snprintf(detail, sizeof(detail), "; %d bytes not refused",
                 SEND_MAX + 1);
    check(ok && !detail[0], "send_posted_recv",
          "%d SEND WITH IMMEDIATE of 0..%d B (more than the receive queue "
          "holds) and one WRITE WITH IMMEDIATE among them: in order, data "
          "right in on_recv%s",
          N, SEND_MAX, detail);
    PMPI_Barrier(comm);
}

static void phase_loopback(struct inst *in)
{
    /* a rank may use its own connection (a QP connected to itself) */
    fill(B.src, 4096, (uint32_t)(rank + 4242), 0);
    struct hb_tr_op o;
    int rc = post_retry(in, rank, HB_TR_WRITE, B.src, 4096, (uintptr_t)B.rdst,
                        in->mr->rkey, 0, HB_TR_F_SIGNAL, &o, 10);
    if (rc == HB_TR_OK)
        rc = hb_transport_wait(in->t, &o, mpi_yield, &ycomm);
    size_t bad = rc == HB_TR_OK
                     ? mismatches(B.rdst, 4096, (uint32_t)(rank + 4242), 0)
                     : 4096;
    check(rc == HB_TR_OK && !bad, "self_connection",
          "4 KiB RDMA WRITE to oneself: rc %d, %zu bad bytes", rc, bad);
}

/* A failed completion (bad rkey) fails that peer, on both sides; the rest works. */
static void phase_bad_rkey(struct inst *in)
{
    int ok = 1;
    char detail[300] = "", other[200] = "";
    if (rank == 0) {
        struct hb_tr_op o;
        int rc = post_retry(in, 1, HB_TR_WRITE, B.src, 256, in->rem[1].recv,
                            in->rem[1].rkey ^ 0x00ffff00u, 0, HB_TR_F_SIGNAL,
                            &o, 10);
        if (rc == HB_TR_OK)
            rc = hb_transport_wait(in->t, &o, mpi_yield, &ycomm);
        const char *why = hb_transport_peer_reason(in->t, 1);
        ok = rc == HB_TR_FAILED &&
             hb_transport_peer_state(in->t, 1) == HB_PEER_FAILED &&
             strstr(why, "RDMA WRITE to rank 1 failed");
        int again = hb_transport_write(in->t, 1, B.src, 8, in->mr->lkey,
                                       in->rem[1].recv, in->rem[1].rkey, 0, &o);
        ok = ok && again == HB_TR_FAILED;
        snprintf(detail, sizeof(detail),
                 "rank 0 wait rc %d, reason \"%s\"; next post rc %d", rc, why,
                 again);
    } else if (rank == 1) {
        double ts = now();
        while (hb_transport_peer_state(in->t, 0) != HB_PEER_FAILED &&
               now() - ts < 15)
            hb_transport_progress(in->t);
        ok = hb_transport_peer_state(in->t, 0) == HB_PEER_FAILED;
        snprintf(other, sizeof(other), "rank 1 after %.0f ms: %s \"%s\"",
                 (now() - ts) * 1e3,
                 hb_transport_state_name(hb_transport_peer_state(in->t, 0)),
                 hb_transport_peer_reason(in->t, 0));
    }
    if (rank == 1)
        PMPI_Send(other, sizeof(other), MPI_CHAR, 0, 31, comm);
    if (rank == 0)
        PMPI_Recv(other, sizeof(other), MPI_CHAR, 1, 31, comm,
                  MPI_STATUS_IGNORE);
    /* the rest keeps working: rank 0 -> 2, and 1 -> 2 (n >= 3) */
    int rest = 1;
    if (nranks >= 3) {
        PMPI_Barrier(comm);
        if (rank == 0 || rank == 1) {
            fill(B.src, 65536, (uint32_t)(rank + 555), 0);
            struct hb_tr_op o;
            uint64_t off = (uint64_t)rank * 65536;
            int rc = post_retry(in, 2, HB_TR_WRITE, B.src, 65536,
                                in->rem[2].recv + off, in->rem[2].rkey, 0,
                                HB_TR_F_SIGNAL, &o, 20);
            if (rc == HB_TR_OK)
                rc = hb_transport_wait(in->t, &o, mpi_yield, &ycomm);
            rest = rc == HB_TR_OK;
        }
        int tok = rest;
        if (rank == 0 || rank == 1)
            PMPI_Send(&tok, 1, MPI_INT, 2, 32, comm);
        if (rank == 2) {
            for (int s = 0; s < 2; s++) {
                int got = 0;
                PMPI_Recv(&got, 1, MPI_INT, s, 32, comm, MPI_STATUS_IGNORE);
                hb_transport_progress(in->t);
                rest = rest && got &&
                       !mismatches(B.recv + s * 65536, 65536,
                                   (uint32_t)(s + 555), 0);
            }
        }
    }
    check(ok && rest, "failed_completion",
          "RDMA WRITE with a bad rkey: %s; %s; %s", detail, other,
          nranks >= 3 ? (rest ? "ranks 0 and 1 still write to rank 2 (verified)"
                              : "rank 0/1 -> 2 broken")
                      : "(2 ranks: no third peer to show the rest working)");
}

/* A QP put into ERROR behind the transport's back: progress notices (the
 * posted receives flush), that peer fails on both sides, the rest works. */
static void phase_qp_error(struct inst *in)
{
    int ok = 1;
    char detail[300] = "", other[200] = "";
    double ts = now();
    if (rank == 0) {
        ok = hb_transport_debug_qp_error(in->t, 1) == 0;
        while (hb_transport_peer_state(in->t, 1) != HB_PEER_FAILED &&
               now() - ts < 15)
            hb_transport_progress(in->t);
        ok = ok && hb_transport_peer_state(in->t, 1) == HB_PEER_FAILED;
        snprintf(detail, sizeof(detail), "rank 0 noticed in %.0f ms: \"%s\"",
                 (now() - ts) * 1e3, hb_transport_peer_reason(in->t, 1));
    } else if (rank == 1) {
        while (hb_transport_peer_state(in->t, 0) != HB_PEER_FAILED &&
               now() - ts < 15)
            hb_transport_progress(in->t);
        ok = hb_transport_peer_state(in->t, 0) == HB_PEER_FAILED;
        snprintf(other, sizeof(other), "rank 1 in %.0f ms: \"%s\"",
                 (now() - ts) * 1e3, hb_transport_peer_reason(in->t, 0));
    }
    if (rank == 1)
        PMPI_Send(other, sizeof(other), MPI_CHAR, 0, 33, comm);
    if (rank == 0)
        PMPI_Recv(other, sizeof(other), MPI_CHAR, 1, 33, comm,
                  MPI_STATUS_IGNORE);
    int rest = 1;
    if (nranks >= 3) {
        PMPI_Barrier(comm);
        if (rank == 0) {
            fill(B.src, 4096, 999, 0);
            struct hb_tr_op o;
            int rc =
                post_retry(in, 2, HB_TR_WRITE, B.src, 4096, in->rem[2].recv,
                           in->rem[2].rkey, 0, HB_TR_F_SIGNAL, &o, 20);
            if (rc == HB_TR_OK)
                rc = hb_transport_wait(in->t, &o, mpi_yield, &ycomm);
            rest = rc == HB_TR_OK;
            PMPI_Send(&rest, 1, MPI_INT, 2, 34, comm);
        } else if (rank == 2) {
            int got = 0;
            PMPI_Recv(&got, 1, MPI_INT, 0, 34, comm, MPI_STATUS_IGNORE);
            rest = got && !mismatches(B.recv, 4096, 999, 0);
        }
    }
    check(ok && rest, "qp_error_state", "QP 0->1 forced to ERROR: %s; %s; %s",
          detail, other,
          nranks >= 3 ? (rest ? "rank 0 -> 2 still works (verified)"
                              : "rank 0 -> 2 broken")
                      : "(2 ranks)");
}

/* Writes the peer saw acknowledged survive the receiver failing the peer
 * before it polled them: rank 0 writes N immediates to rank 1, which sits
 * in MPI meanwhile, then fails rank 0 and only then polls.  Point-to-point
 * counts on it (a record placed before a RESEND must be taken first), and
 * a QP destroyed at the failure would lose them where the provider cleans
 * the CQ of it (libmlx5; rxe keeps them, so here this guards the contract
 * rather than that provider). */
static void phase_fail_keeps_completions(struct inst *in)
{
    enum { N = 8 };
    int ok = 1;
    char detail[200] = "";
    struct hb_tr_op o;
    memset(&imms, 0, sizeof(imms));
    PMPI_Barrier(comm);
    if (rank == 0) { /* connect, the peer polling */
        ok = post_retry(in, 1, HB_TR_WRITE_IMM, NULL, 0, in->rem[1].recv,
                        in->rem[1].rkey, 0xfeed0000u, HB_TR_F_SIGNAL, &o,
                        20) == HB_TR_OK &&
             hb_transport_wait(in->t, &o, mpi_yield, &ycomm) == HB_TR_OK;
        PMPI_Send(&ok, 1, MPI_INT, 1, 35, comm);
        int ready = 0; /* rank 1 stopped polling */
        PMPI_Recv(&ready, 1, MPI_INT, 1, 38, comm, MPI_STATUS_IGNORE);
        ok = ok && ready;
    } else if (rank == 1) {
        int go = 0;
        MPI_Request r;
        PMPI_Irecv(&go, 1, MPI_INT, 0, 35, comm, &r);
        for (int done = 0; !done;) {
            hb_transport_progress(in->t);
            PMPI_Test(&r, &done, MPI_STATUS_IGNORE);
        }
        double ts = now(); /* its completion may come after "go" */
        while (go && imms.count[0] < 1 && now() - ts < 5)
            hb_transport_progress(in->t);
        ok = go && imms.count[0] == 1;
        if (!ok)
            snprintf(detail, sizeof(detail),
                     "connecting failed (go %d, %d immediates)", go,
                     imms.count[0]);
        PMPI_Send(&ok, 1, MPI_INT, 0, 38, comm);
    }
    if (rank == 0) {
        for (int i = 0; i < N && ok; i++) {
            fill(B.src + i * 64, 64, (uint32_t)(0x7000 + i), 0);
            ok = post_retry(in, 1, HB_TR_WRITE_IMM, B.src + i * 64, 64,
                            in->rem[1].recv + i * 64, in->rem[1].rkey,
                            (uint32_t)i, i == N - 1 ? HB_TR_F_SIGNAL : 0, &o,
                            20) == HB_TR_OK;
        }
        ok = ok && hb_transport_wait(in->t, &o, mpi_yield, &ycomm) == HB_TR_OK;
        PMPI_Send(&ok, 1, MPI_INT, 1, 36, comm);
    } else if (rank == 1) {
        int sent = 0; /* not polling the CQ until the writes are acknowledged */
        PMPI_Recv(&sent, 1, MPI_INT, 0, 36, comm, MPI_STATUS_IGNORE);
        if (!ok || !sent)
            goto out;
        hb_transport_fail_peer(in->t, 0, "failed by the test");
        double ts = now();
        while (imms.count[0] < N + 1 && now() - ts < 5)
            hb_transport_progress(in->t);
        int bad = 0;
        for (int i = 0; i < N && i + 1 < imms.count[0]; i++)
            bad += imms.imm[0][i + 1] != (uint32_t)i ||
                   mismatches(B.recv + i * 64, 64, (uint32_t)(0x7000 + i), 0);
        ok = sent && imms.count[0] == N + 1 && !bad;
        snprintf(detail, sizeof(detail),
                 "rank 1 failed rank 0, then got %d of %d immediates (%d "
                 "wrong)",
                 imms.count[0] - 1, N, bad);
    }
out:
    if (rank == 1)
        PMPI_Send(detail, sizeof(detail), MPI_CHAR, 0, 37, comm);
    if (rank == 0)
        PMPI_Recv(detail, sizeof(detail), MPI_CHAR, 1, 37, comm,
                  MPI_STATUS_IGNORE);
    check(ok, "fail_keeps_completions",
          "%d writes acknowledged to rank 0 before rank 1 polled: %s", N,
          detail);
}

/* Rank 1 never runs progress (it sits in PMPI_Barrier): rank 0's request
 * times out after a bounded time, then both sides agree on FAILED. */
static void phase_silent(struct inst *in, double timeout)
{
    int ok = 1;
    char detail[300] = "";
    double dt = 0;
    if (rank == 0) {
        double ts = now();
        int rc;
        while ((rc = hb_transport_connect(in->t, 1)) == HB_TR_AGAIN &&
               now() - ts < timeout + 20)
            usleep(1000);
        dt = now() - ts;
        const char *why = hb_transport_peer_reason(in->t, 1);
        ok = rc == HB_TR_FAILED && dt >= timeout * 0.9 && dt < timeout + 3 &&
             strstr(why, "did not answer");
        snprintf(detail, sizeof(detail),
                 "rank 0 gave up after %.2f s (time-out %.1f s): \"%s\"", dt,
                 timeout, why);
    }
    PMPI_Barrier(comm); /* rank 1 sat here all along */
    /* now rank 1 runs progress: it finds the stale requests, answers, and is
     * rejected; both end FAILED */
    double ts = now();
    while (now() - ts < 3.0 &&
           (rank > 1 ||
            hb_transport_peer_state(in->t, 1 - rank) != HB_PEER_FAILED ||
            now() - ts < 1.5))
        hb_transport_progress(in->t);
    char other[200] = "";
    if (rank == 1) {
        ok = hb_transport_peer_state(in->t, 0) == HB_PEER_FAILED;
        snprintf(other, sizeof(other), "rank 1 afterwards: %s \"%s\"",
                 hb_transport_state_name(hb_transport_peer_state(in->t, 0)),
                 hb_transport_peer_reason(in->t, 0));
        PMPI_Send(other, sizeof(other), MPI_CHAR, 0, 35, comm);
    }
    if (rank == 0)
        PMPI_Recv(other, sizeof(other), MPI_CHAR, 1, 35, comm,
                  MPI_STATUS_IGNORE);
    check(ok, "silent_peer", "rank 1 never called progress: %s; %s", detail,
          other);
}

/* Connection datagrams get lost (every other one, from the first, dropped
 * on arrival: requests, replies and ready-to-use messages all get lost):
 * every pair still connects by resending; then each rank writes to its
 * right neighbour. */
static void phase_lossy(struct inst *in)
{
    PMPI_Barrier(comm);
    double t0 = now();
    int ok = 0;
    for (;;) {
        ok = 1;
        for (int r = 0; r < nranks; r++) {
            if (r == rank)
                continue;
            if (hb_transport_connect(in->t, r) == HB_TR_FAILED)
                ok = -1;
            else if (hb_transport_peer_state(in->t, r) != HB_PEER_CONNECTED)
                ok = ok < 0 ? ok : 0;
        }
        hb_transport_progress(in->t);
        /* done when every rank is done: everyone keeps answering until then
         * (a -1 anywhere stops it too) */
        int v[2] = {ok < 0 || now() - t0 > 30, -(ok == 1)}, m[2];
        PMPI_Allreduce(v, m, 2, MPI_INT, MPI_MAX,
                       comm); /* the decision is collective */
        if (m[0] || m[1] == -1)
            break;
    }
    double dt = now() - t0;
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    fill(B.src, 4096, (uint32_t)(rank + 31337), 0);
    struct hb_tr_op o;
    int rc = ok == 1 ? post_retry(in, right, HB_TR_WRITE, B.src, 4096,
                                  in->rem[right].recv, in->rem[right].rkey, 0,
                                  HB_TR_F_SIGNAL, &o, 10)
                     : HB_TR_FAILED;
    if (rc == HB_TR_OK)
        rc = hb_transport_wait(in->t, &o, mpi_yield, &ycomm);
    int token = rc == HB_TR_OK, got = 0;
    PMPI_Sendrecv(&token, 1, MPI_INT, right, 37, &got, 1, MPI_INT, left, 37,
                  comm, MPI_STATUS_IGNORE);
    size_t bad =
        got ? mismatches(B.recv, 4096, (uint32_t)(left + 31337), 0) : 4096;
    struct hb_transport_stats st;
    hb_transport_get_stats(in->t, &st);
    long v[3] = {(long)st.cm_dropped, (long)st.cm_resends, (long)st.cm_sent},
         tot[3];
    PMPI_Allreduce(v, tot, 3, MPI_LONG, MPI_SUM, comm);
    char detail[200] = "";
    for (int r = 0; r < nranks; r++)
        if (r != rank && hb_transport_peer_state(in->t, r) != HB_PEER_CONNECTED)
            snprintf(detail, sizeof(detail), "; %d -> %d %s: %s", rank, r,
                     hb_transport_state_name(hb_transport_peer_state(in->t, r)),
                     hb_transport_peer_reason(in->t, r));
    check(
        ok == 1 && rc == HB_TR_OK && !bad && tot[0] > 0 && tot[1] > 0,
        "lossy_connect",
        "every other connection datagram lost: all %d pairs connected in %.0f ms; %ld datagrams "
        "sent, %ld dropped, %ld resent; 4 KiB write to the right neighbour verified%s",
        nranks * (nranks - 1) / 2, dt * 1e3, tot[2], tot[0], tot[1], detail);
    PMPI_Barrier(comm);
}

/* The last rank "fails to open" (a device that does not exist) and takes
 * part in the bootstrap with an absent block. */
static void phase_absent(struct hb_transport_params *p)
{
    struct inst in;
    char why[256] = "";
    int last = nranks - 1;
    struct hb_transport_params q = *p;
    if (rank == last)
        q.device = "hb_no_such_device";
    int rc = open_inst(&in, &q, 0, why, sizeof(why));
    int ok = rank == last ? rc == -1 && strstr(why, "not found") : rc == 0;
    char detail[400] = "";
    int c = 0;
    if (rank == 0) {
        c = hb_transport_connect(in.t, last);
        ok = ok && c == HB_TR_FAILED &&
             strstr(hb_transport_peer_reason(in.t, last), "no transport");
    }
    if (rank == last)
        PMPI_Send(why, sizeof(why), MPI_CHAR, 0, 36, comm);
    if (rank == 0) {
        char lw[256];
        PMPI_Recv(lw, sizeof(lw), MPI_CHAR, last, 36, comm, MPI_STATUS_IGNORE);
        snprintf(
            detail, sizeof(detail),
            "rank %d's open failed: \"%s\"; rank 0 -> %d at once: rc %d \"%s\"",
            last, lw, last, c, hb_transport_peer_reason(in.t, last));
    }
    /* the others still connect among themselves (n >= 3) */
    int rest = 1;
    if (nranks >= 3 && rank < last) {
        int peer = rank == 0 ? 1 : 0;
        double ts = now();
        int c;
        while ((c = hb_transport_connect(in.t, peer)) == HB_TR_AGAIN &&
               now() - ts < 20)
            hb_transport_progress(in.t);
        rest = c == HB_TR_OK;
        /* keep answering until the other side is done too */
        for (double t2 = now(); now() - t2 < 0.2;)
            hb_transport_progress(in.t);
    }
    check(ok && rest, "absent_rank", "%s%s", detail,
          nranks >= 3 ? (rest ? "; ranks 0 and 1 still connect"
                              : "; ranks 0-1 do not connect")
                      : "");
    close_inst(&in);
}

/* ---- multicast -------------------------------------------------------------------------- */
#define MC_DEPTH 64
#define MC_PKTS 4 /* packets per message in the delivery check */

struct mc_side {
    struct hb_tr_mcast *m;
    uint8_t *rx; /* nranks - 1 queues x MC_DEPTH slots of mtu bytes */
    struct ibv_mr *mr;
    uint32_t mtu;
};

/* Opens a multicast instance listening to every other rank's group (their
 * Q_Keys xor qkey_flip); posts MC_DEPTH receives per queue. */
static int mc_open(struct inst *in, const struct hb_tr_mgroup *groups,
                   uint32_t qkey_flip, struct mc_side *s, char *why, size_t len)
{
    struct hb_tr_mgroup others[64], own;
    int n = 0;
    for (int r = 0; r < nranks; r++)
        if (r != rank) {
            others[n] = groups[r];
            others[n++].qkey ^= qkey_flip;
        }
    hb_tr_mcast_group_new(in->t, &own);
    memset(s, 0, sizeof(*s));
    if (hb_tr_mcast_open(in->t, &own, others, n, MC_DEPTH, &s->m, why, len))
        return -1;
    s->mtu = hb_tr_mcast_mtu(s->m);
    size_t bytes = (size_t)n * MC_DEPTH * s->mtu;
    s->rx = calloc(1, bytes ? bytes : 1);
    s->mr = ibv_reg_mr(hb_transport_pd(in->t), s->rx, bytes ? bytes : 1,
                       IBV_ACCESS_LOCAL_WRITE);
    if (!s->mr)
        return -1;
    for (int q = 0; q < n; q++)
        for (int k = 0; k < MC_DEPTH; k++)
            if (hb_tr_mcast_post_recv(s->m, q, (uint64_t)k,
                                      s->rx +
                                          ((size_t)q * MC_DEPTH + k) * s->mtu,
                                      s->mtu, s->mr->lkey))
                return -1;
    return 0;
}

static void mc_close(struct mc_side *s)
{
    hb_tr_mcast_close(s->m);
    if (s->mr)
        ibv_dereg_mr(s->mr);
    free(s->rx);
}

/* Polls s for secs, or until want packets came in; checks each packet's
 * immediate (sender << 16 | k) and payload, reposts it.  Returns the
 * packets received; got[peer][k] counts each; *bad: wrong ones. */
static int mc_collect(struct mc_side *s, int want, double secs, int got[][16],
                      int *bad, size_t msg)
{
    int n = 0;
    double t0 = now();
    while (n < want && now() - t0 < secs) {
        struct hb_tr_mcast_event ev[16];
        int e = hb_tr_mcast_poll(s->m, ev, 16);
        for (int i = 0; i < e; i++) {
            int peer = ev[i].q < rank ? ev[i].q : ev[i].q + 1;
            uint32_t k = ev[i].imm & 0xffff;
            uint8_t *slot =
                s->rx + ((size_t)ev[i].q * MC_DEPTH + ev[i].wr_id) * s->mtu;
            size_t off = k * s->mtu,
                   l = msg - off < s->mtu ? msg - off : s->mtu;
            int okp = ev[i].ok && ev[i].has_imm &&
                      (int)(ev[i].imm >> 16) == peer && k < 16 &&
                      ev[i].len == l &&
                      !mismatches(slot, l, (uint32_t)(peer + 100), off);
            if (okp)
                got[peer][k]++, n++;
            else
                (*bad)++;
            hb_tr_mcast_post_recv(s->m, ev[i].q, ev[i].wr_id, slot, s->mtu,
                                  s->mr->lkey);
        }
    }
    return n;
}

static void phase_mcast(struct inst *in)
{
    char why[256] = "";
    int sup = hb_tr_mcast_supported(in->t, why, sizeof(why)) == 0;
    check(sup, "mcast_supported", "RoCE v2, IPv4 GID%s%s", why[0] ? ": " : "",
          why);
    if (!sup || nranks > 16)
        return;
    /* every rank's group, as the Allgather exchanges them at creation */
    struct hb_tr_mgroup mine, groups[64];
    struct mc_side s, w;
    hb_tr_mcast_group_new(in->t, &mine);
    PMPI_Allgather(&mine, sizeof(mine), MPI_BYTE, groups, sizeof(mine),
                   MPI_BYTE, comm);
    /* s: the right Q_Keys; w: listens to the same groups with wrong ones */
    int ok = mc_open(in, groups, 0, &s, why, sizeof(why)) == 0;
    int okw = ok && mc_open(in, groups, 0x40, &w, why, sizeof(why)) == 0;
    check(ok && okw, "mcast_open", "%d groups joined and attached twice: %s",
          nranks - 1, why[0] ? why : "ok");
    if (!ok || !okw)
        return;
    /* the sender side belongs to a third instance: one whose own group is
     * the one the others listen to */
    struct hb_tr_mcast *tx = NULL;
    int oktx = hb_tr_mcast_open(in->t, &mine, NULL, 0, MC_DEPTH, &tx, why,
                                sizeof(why)) == 0;
    size_t msg = (size_t)s.mtu * MC_PKTS - s.mtu / 2;
    fill(B.src, msg, (uint32_t)(rank + 100), 0);
    struct ibv_mr *smr =
        ibv_reg_mr(hb_transport_pd(in->t), B.src, msg, IBV_ACCESS_LOCAL_WRITE);
    PMPI_Barrier(comm); /* every receive posted */
    int rc = oktx && smr ? hb_tr_mcast_send(tx, B.src, msg, smr->lkey,
                                            (uint32_t)rank << 16)
                         : -9;
    int got[64][16], gotw[64][16], bad = 0, badw = 0;
    memset(got, 0, sizeof(got));
    memset(gotw, 0, sizeof(gotw));
    int want = (nranks - 1) * MC_PKTS;
    int n = mc_collect(&s, want, 10, got, &bad, msg);
    int idle = 0;
    while (tx && (idle = hb_tr_mcast_send_idle(tx)) == 0)
        ;
    int nw = mc_collect(&w, 1, 0.5, gotw, &badw, msg);
    int once = 1;
    for (int r = 0; r < nranks; r++)
        for (int k = 0; k < MC_PKTS; k++)
            once &= got[r][k] == (r != rank);
    check(
        rc == 0 && n == want && !bad && once, "mcast_deliver",
        "%d packets of %zu B in, %d wanted, each once: %d, wrong %d (send %d)",
        n, msg, want, once, bad, rc);
    check(nw == 0 && !badw, "mcast_qkey",
          "QPs of the same groups with another Q_Key took %d packets",
          nw + badw);

    /* losses: the sender skips packets 2 and 5 (of its 6th..11th since open) */
    hb_tr_mcast_debug_drop(tx, 3);
    size_t msg6 = (size_t)s.mtu * 6;
    fill(B.src, msg6, (uint32_t)(rank + 100), 0);
    ibv_dereg_mr(smr);
    smr =
        ibv_reg_mr(hb_transport_pd(in->t), B.src, msg6, IBV_ACCESS_LOCAL_WRITE);
    memset(got, 0, sizeof(got));
    bad = 0;
    PMPI_Barrier(comm);
    rc =
        smr ? hb_tr_mcast_send(tx, B.src, msg6, smr->lkey, (uint32_t)rank << 16)
            : -9;
    n = mc_collect(&s, (nranks - 1) * 6, 2, got, &bad, msg6);
    int lost_right = 1;
    for (int r = 0; r < nranks; r++)
        for (int k = 0; k < 6; k++)
            lost_right &= got[r][k] == (r != rank && k != 1 && k != 4);
    struct hb_tr_mcast_stats st;
    hb_tr_mcast_get_stats(tx, &st);
    check(
        rc == 0 && lost_right && !bad && st.packets_dropped == 2, "mcast_loss",
        "6 packets sent with every third dropped: %d in, packets 1 and 4 missing: %d, "
        "dropped %llu",
        n, lost_right, (unsigned long long)st.packets_dropped);
    while (hb_tr_mcast_send_idle(tx) == 0)
        ;
    PMPI_Barrier(comm);
    if (smr)
        ibv_dereg_mr(smr);
    hb_tr_mcast_close(tx);
    mc_close(&w);
    mc_close(&s);
}

static void phase_memory(struct inst *in)
{
    struct hb_transport_mem m;
    hb_transport_get_mem(in->t, &m);
    struct hb_transport_info info;
    hb_transport_get_info(in->t, &info);
    int ok = m.per_peer_bytes <= m.budget_per_peer &&
             m.per_peer_bytes == m.sq_entries * m.sq_wqe_bytes +
                                     m.rq_entries * m.rq_wqe_bytes +
                                     m.rx_bytes + m.cq_entries * m.cqe_bytes +
                                     m.ah_bytes + m.peer_struct_bytes &&
             m.cq_entries_now >= m.cq_entries;
    /* the budget is enforced for upper-layer charges */
    int charge_ok =
        hb_transport_charge(in->t, (rank + 1) % nranks, 1024) == 0 &&
        hb_transport_charge(in->t, (rank + 1) % nranks,
                            (long)m.budget_per_peer) == -1 &&
        hb_transport_charge(in->t, (rank + 1) % nranks, -1024) == 0;
    struct hb_transport_stats st;
    hb_transport_get_stats(in->t, &st);
    check(
        ok && charge_ok, "memory_accounting",
        "per connected peer %zu B = send queue %zu x %zu B + receive queue %zu x %zu B + receive "
        "buffers %zu B + CQ %zu x "
        "%zu B + AH %zu B + state %zu B (budget %zu B); per rank %zu B; constant %zu B (control "
        "area %zu, UD QP %zu, CQ base %zu); rank 0 now: %zu connected, %zu failed, %zu B total, "
        "CQ %zu entries (%llu resizes); charges over budget refused",
        m.per_peer_bytes, m.sq_entries, m.sq_wqe_bytes, m.rq_entries,
        m.rq_wqe_bytes, m.rx_bytes, m.cq_entries, m.cqe_bytes, m.ah_bytes,
        m.peer_struct_bytes, m.budget_per_peer, m.per_rank_bytes,
        m.constant_bytes, m.control_area_bytes, m.ud_qp_bytes, m.cq_base_bytes,
        m.peers_connected, m.peers_failed, m.total_bytes, m.cq_entries_now,
        (unsigned long long)st.cq_resizes);
    if (rank == 0)
        printf(
            "    stats rank 0: requested %llu accepted %llu done %llu collisions %llu cm sent %llu "
            "recv %llu resent %llu dropped %llu; writes %llu imm %llu reads %llu inline %llu "
            "signaled %llu fences %llu busy %llu; polls %llu completions %llu\n",
            (unsigned long long)st.connects_requested,
            (unsigned long long)st.connects_accepted,
            (unsigned long long)st.connects_done,
            (unsigned long long)st.collisions, (unsigned long long)st.cm_sent,
            (unsigned long long)st.cm_received,
            (unsigned long long)st.cm_resends,
            (unsigned long long)st.cm_dropped, (unsigned long long)st.writes,
            (unsigned long long)st.write_imms, (unsigned long long)st.reads,
            (unsigned long long)st.inline_posts,
            (unsigned long long)st.signaled, (unsigned long long)st.fences,
            (unsigned long long)st.busy, (unsigned long long)st.polls,
            (unsigned long long)st.completions);
}

static int mpi_mode(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    signal(SIGALRM, watchdog);
    alarm(150);
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    PMPI_Comm_dup(MPI_COMM_WORLD, &ycomm);
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &nranks);
    if (posix_memalign((void **)&arena, 4096, 4 * MIB))
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(arena, 0, 4 * MIB);
    B.recv = arena, B.src = arena + MIB, B.rsrc = arena + 2 * MIB,
    B.rdst = arena + 3 * MIB;
    fill(B.rsrc, MIB, (uint32_t)(rank + 7777), 0);

    struct hb_transport_params p;
    hb_transport_params_default(&p);
    p.device = getenv("RXEVM_DEV") ? getenv("RXEVM_DEV") : "";
    p.connect_timeout_s = 10;
    p.op_timeout_s = 20;
    p.on_imm = on_imm;
    p.on_imm_ctx = &imms;
    p.on_recv = on_recv;
    p.recv_bytes = SEND_MAX;
    p.peer_budget += (size_t)p.rq_depth * SEND_MAX;

    /* 1. bootstrap */
    struct inst A, S;
    char why[256] = "";
    double t0 = now();
    int rc = open_inst(&A, &p, 0, why, sizeof(why));
    double dt = now() - t0;
    struct hb_transport_info info;
    if (rc == 0)
        hb_transport_get_info(A.t, &info);
    check(
        rc == 0, "bootstrap",
        "open + one PMPI_Allgather of %d B per rank in %.1f ms: %s port %d, %s GID index %d (%s), "
        "MTU %d, inline %u, sq %u rq %u, signal every %u, READ depth %u; fork: %s%s%s",
        HB_TRANSPORT_BOOT_BYTES, dt * 1e3, rc == 0 ? info.device : "-",
        rc == 0 ? info.port : 0, rc == 0 ? info.gid_type : "-",
        rc == 0 ? info.gid_index : -1, rc == 0 ? info.gid : "-",
        rc == 0 ? info.active_mtu : 0, rc == 0 ? info.max_inline : 0,
        rc == 0 ? info.sq_depth : 0, rc == 0 ? info.rq_depth : 0,
        rc == 0 ? info.signal_every : 0, rc == 0 ? info.max_rd_atomic : 0,
        rc == 0 ? info.fork : "-", why[0] ? "; " : "", why);
    if (failures) {
        MPI_Finalize();
        return 1;
    }

    phase_on_demand(&A);

    /* a second, fresh instance: everyone asks everyone at once */
    rc = open_inst(&S, &p, 0, why, sizeof(why));
    if (rc) {
        check(0, "simultaneous_connect", "second instance: %s", why);
    } else {
        phase_simultaneous(&S);
    }

    phase_neighbours(&A);
    phase_write_read(&A);
    phase_signaling(&A);
    phase_back_pressure(&A);
    phase_imm(&A);
    phase_send(&A);
    phase_loopback(&A);
    phase_memory(&A);
    phase_mcast(&A);
    phase_bad_rkey(&A);
    if (!rc)
        phase_qp_error(&S);

    /* a third instance with a short connection time-out */
    struct inst Q;
    struct hb_transport_params q = p;
    q.connect_timeout_s = 2;
    if (open_inst(&Q, &q, 0, why, sizeof(why)) == 0)
        phase_silent(&Q, q.connect_timeout_s);
    else
        check(0, "silent_peer", "third instance: %s", why);
    close_inst(&Q);

    phase_absent(&p);

    struct inst K;
    if (open_inst(&K, &p, 0, why, sizeof(why)) == 0)
        phase_fail_keeps_completions(&K);
    else
        check(0, "fail_keeps_completions", "sixth instance: %s", why);
    close_inst(&K);

    struct inst L;
    struct hb_transport_params l = p;
    l.debug_cm_drop_every = 2;
    if (open_inst(&L, &l, 0, why, sizeof(why)) == 0)
        phase_lossy(&L);
    else
        check(0, "lossy_connect", "fifth instance: %s", why);
    close_inst(&L);

    if (!rc)
        close_inst(&S);
    close_inst(&A);
    check(1, "close", "all instances closed after a barrier");
    alarm(0);
    MPI_Finalize();
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && !strcmp(argv[1], "open"))
        return open_mode(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "mpi"))
        return mpi_mode(argc, argv);
    fprintf(stderr,
            "usage: transport_test mpi | open --name N [--device D] [--port P] "
            "[--no-memlock-check] (--expect TEXT | --expect-ok)\n");
    return 2;
}
