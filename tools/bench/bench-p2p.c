/* Point-to-point latency, plain MPI against hotbuf's ring, in one run
 * (issue 13's benchmark, and issue 14's from 16 KiB to 4 MiB; 2 ranks).
 *
 * Per pattern and size (128 B .. 8 KiB, powers of two), rounds rotate
 * between three variants in the same processes:
 *   plain   PMPI_Send/PMPI_Recv on a PMPI_Comm_dup of MPI_COMM_WORLD that
 *           hotbuf never sees (never granted, never pulled): MPI alone
 *   hotbuf  MPI_Send/MPI_Recv on MPI_COMM_WORLD: through hotbuf, whose
 *           ring carries a hot MPI_Send once the receiver has granted
 *   plain2  plain again: plain2/plain is the A/A ratio, the noise floor of
 *           hotbuf/plain (same run, same rounds)
 * The plain variant needs its own communicator: on a communicator hotbuf
 * has pulled, its progress claims MPI's messages with Improbe, and a
 * PMPI_Recv posted there behind its back could wait forever.
 * Patterns, one reused buffer per size and rank (hot after the warm-up):
 *   pingpong  rank 0 sends, rank 1 receives and sends it back: us one way
 *   stream    rank 0 sends W messages back to back (blocking MPI_Send),
 *             rank 1 receives them, then sends one 4-byte ack: us per message
 * Rank 0 times every round trip or window; a round's time is their median,
 * and it prints the median of each variant's round times, the median of
 * the per-round ratios hotbuf/plain and plain2/plain, and a RESULT line
 * per row.  Each round's data is checked outside the timed part (a stamp
 * per round at both ends of the buffer).  The closing SENDS line counts
 * the data messages sent through hotbuf (both ranks, warm-up included;
 * not the 4-byte acks, below any hot size) and the timed ones, so that
 * run-bench-p2p.sh can hold them against the report's ring counters.
 *
 *   bench-p2p [iters (20)] [rounds (9)] [warm-up (40)] [window W (16)]
 *             [min bytes (128)] [max bytes (8192)] [reused|fresh]
 * fresh: every message in a buffer of its own, mmap'd for it and unmapped
 * after (new pages: each one's registration is new, for MPI's as for
 * hotbuf's cache), both ends; reused (the default): one buffer per size.
 * iters: round trips (pingpong) or messages (stream, rounded up to whole
 * windows) per round and variant; warm-up: untimed messages per size and
 * variant first (must exceed HOTBUF_THRESHOLD and the grant's handshake).
 *
 *   bench-p2p count N1 N2 SIZE...
 * The callgrind mode (run-bench-p2p.sh runs rank 0 under valgrind with
 * --zero-before=measured --dump-after=measured): per size, a warm-up
 * stream, then five times measured() with N1 and with N2 messages sent
 * back to back by MPI_Send, each call one profile dump;
 * (Ir(N2) - Ir(N1)) / (N2 - N1) is the sender's instructions per message,
 * what is paid once per call cancelled out.
 *
 *   bench-p2p first TRIALS SIZE
 * The first message of a fresh buffer (issue 14): per trial, rank 1
 * posts a receive into a fresh buffer, and rank 0 sends a fresh buffer
 * once, timed to the send's completion (blocking; the receiver has read
 * it when the send returns on hotbuf's rendezvous), for four variants:
 * plain MPI_Send; hotbuf's MPI_Send; plain Send_init + Start + Wait; and
 * hotbuf's Send_init (and Recv_init at rank 1) + Start + Wait, the init
 * timed apart (it registers the buffer: the cost moved out of the first
 * message).  The pair is made live first by a stream of a hot 4 KiB
 * buffer. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_ROUNDS 101
#define MAX_ITERS 10000 /* timed round trips or windows per round */
/* One buffer per size, each in pages of its own, so that a size's
 * registration is its own and its buffer turns hot from its own reuse. */
#define MAX_BYTES (4 << 20)
#define MAX_SIZES 24

enum { PINGPONG, STREAM };
static const char *const pattern_name[2] = {"pingpong", "stream"};

typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm,
                       MPI_Status *);

struct variant {
    send_fn send;
    recv_fn recv;
    MPI_Comm comm;
    long *sends; /* data MPI_Sends made through hotbuf, or NULL */
};

static int rank;
static int fresh; /* a new buffer per message (see the top) */
static long hot_sends, hot_timed;
static MPI_Comm plain; /* also where every round starts (a PMPI barrier) */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof(double), cmp_double);
    return x[n / 2];
}

/* The kept buffer of size index i (allocated at its first use). */
static char *size_buf(int i, int bytes)
{
    static char *kept[MAX_SIZES];
    static int have[MAX_SIZES];
    if (i < 0 || i >= MAX_SIZES)
        MPI_Abort(MPI_COMM_WORLD, 2);
    if (have[i] < bytes) {
        free(kept[i]);
        if (posix_memalign((void **)&kept[i], 4096, (size_t)bytes))
            MPI_Abort(MPI_COMM_WORLD, 2);
        memset(kept[i], 1, (size_t)bytes);
        have[i] = bytes;
    }
    return kept[i];
}

/* The buffer one message goes in: buf itself, or (fresh) new pages
 * carrying buf's two stamps (check_round), handed back by msg_done. */
static char *msg_buf(char *buf, int bytes)
{
    if (!fresh)
        return buf;
    char *b = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        MPI_Abort(MPI_COMM_WORLD, 3);
    b[0] = buf[0];
    b[bytes - 1] = buf[bytes - 1];
    return b;
}

static void msg_done(char *buf, char *b, int bytes)
{
    if (b == buf)
        return;
    buf[0] = b[0];
    buf[bytes - 1] = b[bytes - 1];
    munmap(b, (size_t)bytes);
}

static void sent(const struct variant *v, long n)
{
    if (v->sends)
        *v->sends += n;
}

/* n round trips of bytes through v. */
static void pingpong(const struct variant *v, char *buf, int bytes, int n)
{
    for (int i = 0; i < n; i++) {
        char *b = msg_buf(buf, bytes);
        if (rank == 0) {
            v->send(b, bytes, MPI_BYTE, 1, 1, v->comm);
            v->recv(b, bytes, MPI_BYTE, 1, 1, v->comm, MPI_STATUS_IGNORE);
        } else {
            v->recv(b, bytes, MPI_BYTE, 0, 1, v->comm, MPI_STATUS_IGNORE);
            v->send(b, bytes, MPI_BYTE, 0, 1, v->comm);
        }
        msg_done(buf, b, bytes);
    }
    sent(v, n);
}

/* windows of w messages from rank 0 to rank 1, each closed by an ack. */
static void stream(const struct variant *v, char *buf, int bytes, int windows,
                   int w)
{
    static int ack;
    for (int k = 0; k < windows; k++) {
        for (int i = 0; i < w; i++) {
            char *b = msg_buf(buf, bytes);
            if (rank == 0)
                v->send(b, bytes, MPI_BYTE, 1, 2, v->comm);
            else
                v->recv(b, bytes, MPI_BYTE, 0, 2, v->comm, MPI_STATUS_IGNORE);
            msg_done(buf, b, bytes);
        }
        if (rank == 0)
            v->recv(&ack, 1, MPI_INT, 1, 3, v->comm, MPI_STATUS_IGNORE);
        else
            v->send(&ack, 1, MPI_INT, 0, 3, v->comm);
    }
    sent(v, rank == 0 ? (long)windows * w : 0); /* acks are never hot */
}

/* Messages per round trip or window, for the per-message time. */
static void run(const struct variant *v, int pattern, char *buf, int bytes,
                int n, int w)
{
    if (pattern == PINGPONG)
        pingpong(v, buf, bytes, n);
    else
        stream(v, buf, bytes, (n + w - 1) / w, w);
}

/* One timed round: us per message one way, on rank 0: the median of its
 * round trips (ping-pong) or windows (stream), each timed on its own, so
 * that the emulated guest's occasional multi-millisecond stall moves a
 * median, not a mean. */
static double timed(const struct variant *v, int pattern, char *buf, int bytes,
                    int n, int w)
{
    static double t[MAX_ITERS];
    int k = pattern == PINGPONG ? n : (n + w - 1) / w;
    long before = hot_sends;
    PMPI_Barrier(plain);
    for (int i = 0; i < k; i++) {
        double t0 = MPI_Wtime();
        run(v, pattern, buf, bytes, pattern == PINGPONG ? 1 : w, w);
        t[i] = MPI_Wtime() - t0;
    }
    hot_timed += hot_sends - before;
    return median(t, k) * 1e6 / (pattern == PINGPONG ? 2.0 : (double)w);
}

/* Stamps both ends of rank 0's buffer before a round; 1 when the round
 * did not carry them to rank 1 (and back, for ping-pong). */
static long check_round(int pattern, char *buf, int bytes, int stamp, int pre)
{
    if (pre) {
        if (rank == 0)
            buf[0] = buf[bytes - 1] = (char)stamp;
        return 0;
    }
    if (rank == 0 && pattern == STREAM)
        return 0;
    return buf[0] != (char)stamp || buf[bytes - 1] != (char)stamp;
}

struct row {
    double t[3][MAX_ROUNDS], ratio[MAX_ROUNDS], aa[MAX_ROUNDS];
};

static void print_row(int pattern, int bytes, struct row *r, int rounds, int n)
{
    double p = median(r->t[0], rounds), h = median(r->t[1], rounds);
    double p2 = median(r->t[2], rounds), ratio = median(r->ratio, rounds);
    double aa = median(r->aa, rounds);
    if (rank != 0)
        return;
    printf("%-8s %6d %10.2f %10.2f %10.2f %7.3f %7.3f\n", pattern_name[pattern],
           bytes, p, h, p2, ratio, aa);
    printf("RESULT pattern=%s size=%d plain_us=%.3f hotbuf_us=%.3f "
           "plain2_us=%.3f ratio=%.4f aa_ratio=%.4f min_ratio=%.4f "
           "iters=%d rounds=%d\n",
           pattern_name[pattern], bytes, p, h, p2, ratio, aa,
           r->t[1][0] / r->t[0][0], n, rounds);
}

/* Every round runs the three variants in a rotating order; each variant's
 * rounds are timed after a warm-up of its own. */
static long bench_size(const struct variant *v, int pattern, char *buf,
                       int bytes, int n, int rounds, int warm, int w)
{
    static struct row r;
    long errors = 0;
    for (int k = 0; k < 2; k++)
        run(&v[k], pattern, buf, bytes, warm, w);
    for (int i = 0; i < rounds; i++) {
        for (int k = 0; k < 3; k++) {
            int x = (i + k) % 3, stamp = i * 3 + k + 1;
            check_round(pattern, buf, bytes, stamp, 1);
            r.t[x][i] = timed(&v[x], pattern, buf, bytes, n, w);
            errors += check_round(pattern, buf, bytes, stamp, 0);
        }
        r.ratio[i] = r.t[1][i] / r.t[0][i];
        r.aa[i] = r.t[2][i] / r.t[0][i];
    }
    print_row(pattern, bytes, &r, rounds, n);
    return errors;
}

/* The callgrind mode's unit, its instructions dumped per call: n
 * messages, rank 0 to rank 1, without the closing ack (whose wait for the
 * receiver would add a varying number of empty polls). */
__attribute__((noinline)) void measured(const struct variant *v, char *buf,
                                        int bytes, int n)
{
    for (int i = 0; i < n; i++)
        if (rank == 0)
            v->send(buf, bytes, MPI_BYTE, 1, 2, v->comm);
        else
            v->recv(buf, bytes, MPI_BYTE, 0, 2, v->comm, MPI_STATUS_IGNORE);
    sent(v, rank == 0 ? n : 0);
}

/* Rank 1 tells rank 0 it has every message (outside measured()). */
static void ack(const struct variant *v)
{
    static int a;
    if (rank == 0)
        v->recv(&a, 1, MPI_INT, 1, 3, v->comm, MPI_STATUS_IGNORE);
    else
        v->send(&a, 1, MPI_INT, 0, 3, v->comm);
}

/* Per size: warm-up, then COUNT_REPS pairs of measured(N1), measured(N2),
 * in that order (the dumps' order; run-bench-p2p.sh takes the median of
 * the pairs' differences). */
#define COUNT_REPS 5
static int count_mode(int argc, char **argv, const struct variant *hot)
{
    int n1 = atoi(argv[2]), n2 = atoi(argv[3]), sizes = 0;
    long timed = 0;
    for (int a = 4; a < argc && a < 20; a++, sizes++) {
        int bytes = atoi(argv[a]);
        if (bytes < 1 || bytes > MAX_BYTES || n1 < 1 || n2 <= n1)
            MPI_Abort(MPI_COMM_WORLD, 2);
        char *b = size_buf(a - 4, bytes);
        stream(hot, b, bytes, 4, 25); /* warm: hot, granted, live */
        for (int r = 0; r < COUNT_REPS; r++)
            for (int k = 0; k < 2; k++) {
                PMPI_Barrier(plain);
                long before = hot_sends;
                measured(hot, b, bytes, k ? n2 : n1);
                timed += hot_sends - before;
                ack(hot);
            }
        if (rank == 0)
            printf("COUNT size=%d n1=%d n2=%d reps=%d\n", bytes, n1, n2,
                   COUNT_REPS);
    }
    hot_timed = timed;
    return sizes ? 0 : 2;
}

/* ---- first mode ------------------------------------------------------ */

/* Fresh pages of bytes, or the job aborts. */
static char *fresh_pages(int bytes)
{
    char *b = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        MPI_Abort(MPI_COMM_WORLD, 3);
    memset(b, rank + 2, (size_t)bytes);
    return b;
}

/* One first message of a fresh buffer through variant v (persistent: by
 * Send_init/Recv_init, init timed into *init_us); us to the send's
 * completion on rank 0.  1 when rank 1 got wrong data. */
static long first_one(const struct variant *v, int persistent, int bytes,
                      double *us, double *init_us)
{
    char *b = fresh_pages(bytes);
    MPI_Request rq = MPI_REQUEST_NULL;
    int hot = v->comm == MPI_COMM_WORLD;
    double t0 = MPI_Wtime(), t1;
    long bad = 0;
    if (rank == 0 && persistent)
        (hot ? MPI_Send_init : PMPI_Send_init)(b, bytes, MPI_BYTE, 1, 4,
                                               v->comm, &rq);
    else if (rank == 1 && persistent)
        (hot ? MPI_Recv_init : PMPI_Recv_init)(b, bytes, MPI_BYTE, 0, 4,
                                               v->comm, &rq);
    else if (rank == 1)
        (hot ? MPI_Irecv : PMPI_Irecv)(b, bytes, MPI_BYTE, 0, 4, v->comm, &rq);
    t1 = MPI_Wtime();
    if (rank == 1 && persistent)
        (hot ? MPI_Start : PMPI_Start)(&rq);
    PMPI_Barrier(plain);
    double t2 = MPI_Wtime();
    if (rank == 0 && persistent) {
        (hot ? MPI_Start : PMPI_Start)(&rq);
        (hot ? MPI_Wait : PMPI_Wait)(&rq, MPI_STATUS_IGNORE);
    } else if (rank == 0) {
        v->send(b, bytes, MPI_BYTE, 1, 4, v->comm);
    } else {
        (hot ? MPI_Wait : PMPI_Wait)(&rq, MPI_STATUS_IGNORE);
        bad = b[0] != 2 || b[bytes - 1] != 2;
    }
    *us = (MPI_Wtime() - t2) * 1e6;
    *init_us = (t1 - t0) * 1e6;
    if (persistent)
        (hot ? MPI_Request_free : PMPI_Request_free)(&rq);
    sent(v, rank == 0);
    munmap(b, (size_t)bytes);
    return bad;
}

static int first_mode(int argc, char **argv, const struct variant *v,
                      long *errors)
{
    static double t[4][MAX_ITERS], init[4][MAX_ITERS];
    static const char *const name[4] = {
        "plain_send", "hotbuf_send", "plain_persistent", "hotbuf_persistent"};
    int trials = argc > 2 ? atoi(argv[2]) : 10;
    int bytes = argc > 3 ? atoi(argv[3]) : 1 << 20;
    if (trials < 1 || trials > MAX_ITERS || bytes < 1 || bytes > MAX_BYTES)
        return 2;
    /* the pair live: a hot 4 KiB buffer asks for it, and the grant is
     * read at a later wrapper entry */
    stream(&v[1], size_buf(1, 4096), 4096, 64, 4);
    for (int i = 0; i < trials; i++)
        for (int k = 0; k < 4; k++) {
            int x = (i + k) % 4;
            *errors +=
                first_one(&v[x & 1], x >= 2, bytes, &t[x][i], &init[x][i]);
        }
    for (int x = 0; x < 4 && rank == 0; x++)
        printf("FIRST variant=%s size=%d first_us=%.1f init_us=%.1f "
               "trials=%d\n",
               name[x], bytes, median(t[x], trials), median(init[x], trials),
               trials);
    return 0;
}

static void summary(long errors)
{
    long v[3] = {hot_sends, hot_timed, errors}, sum[3];
    PMPI_Reduce(v, sum, 3, MPI_LONG, MPI_SUM, 0, plain);
    if (rank != 0)
        return;
    printf("SENDS total=%ld timed=%ld\n", sum[0], sum[1]);
    printf("# data check: %s (%ld rounds wrong)\n", sum[2] ? "FAILED" : "ok",
           sum[2]);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "bench-p2p needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    PMPI_Comm_dup(MPI_COMM_WORLD, &plain);
    const struct variant v[3] = {
        {PMPI_Send, PMPI_Recv, plain, NULL},
        {MPI_Send, MPI_Recv, MPI_COMM_WORLD, &hot_sends},
        {PMPI_Send, PMPI_Recv, plain, NULL}};
    if (argc > 1 && !strcmp(argv[1], "first")) {
        long errors = 0;
        int rc = first_mode(argc, argv, v, &errors);
        summary(errors);
        PMPI_Comm_free(&plain);
        MPI_Finalize();
        return rc;
    }
    if (argc > 1 && !strcmp(argv[1], "count")) {
        int rc = count_mode(argc, argv, &v[1]);
        summary(0);
        PMPI_Comm_free(&plain);
        MPI_Finalize();
        return rc;
    }
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    int warm = argc > 3 ? atoi(argv[3]) : 40;
    int w = argc > 4 ? atoi(argv[4]) : 16;
    int min = argc > 5 ? atoi(argv[5]) : 128;
    int max = argc > 6 ? atoi(argv[6]) : 8192;
    fresh = argc > 7 && !strcmp(argv[7], "fresh");
    if (rounds < 1 || rounds > MAX_ROUNDS || iters < 1 || iters > MAX_ITERS ||
        w < 1 || min < 1 || max > MAX_BYTES) {
        if (rank == 0)
            fprintf(stderr, "bench-p2p: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0)
        printf("%-8s %6s %10s %10s %10s %7s %7s\n", "pattern", "bytes",
               "plain_us", "hotbuf_us", "plain2_us", "ratio", "aa");
    long errors = 0;
    for (int pattern = PINGPONG; pattern <= STREAM; pattern++)
        for (int bytes = min, off = 0; bytes <= max; bytes *= 2, off++)
            errors += bench_size(v, pattern, size_buf(off, bytes), bytes, iters,
                                 rounds, warm, w);
    summary(errors);
    PMPI_Comm_free(&plain);
    MPI_Finalize();
    return 0;
}
