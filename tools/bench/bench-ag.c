/* MPI_Allgather latency, plain MPI against hotbuf, in one run.
 *
 * Per block size 4 B .. 1 MiB (x4 steps) and per buffer policy, rounds
 * (three times as many up to 4 KiB, where they are cheap and the noise
 * of oversubscribed ranks is widest) rotate between
 *   plain   PMPI_Allgather (the MPI library alone)
 *   hotbuf  MPI_Allgather (through hotbuf: its RDMA Allgather)
 *   plain2  PMPI_Allgather again: plain2/plain is the A/A ratio, the noise
 *           floor of the hotbuf/plain one (same run, same rounds)
 * Buffer policies: "reuse" (one receive buffer for every call) and "fresh"
 * (a receive buffer malloc'ed and freed around every call; above glibc's
 * mmap threshold each one is a new mapping that must be registered anew).
 * Prints per line the median of the per-round means (us per call, the
 * slowest rank's), the ratio hotbuf/plain and the A/A ratio plain2/plain,
 * then what each call cost, from the same rounds (medians):
 *   pkts  packets the device sent per call (all ranks), when
 *         BENCH_AG_PKTS names a counter file, e.g. rxe's
 *         /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts (every
 *         rank on one host: the device's count is the job's); "-" without
 *   retr  retransmissions per 100 calls (the device's time-outs and
 *         sequence NAKs that made it resend), when BENCH_AG_RETRIES names
 *         a counter file, e.g. rxe's .../hw_counters/completer_retry_err;
 *         "-" without
 *   cpu   CPU time per call (user + system, summed over the ranks), us
 *   busy  the machine's busy time per call (user, nice, system, irq and
 *         softirq of every CPU), us, mean of rounds, when BENCH_AG_STAT
 *         names /proc/stat (every rank on one host); "-" without.  It
 *         counts what cpu misses: kernel work in softirq and kernel
 *         threads, charged to no rank (on rxe, multicast receives: README)
 * Packets and CPU are read around the round's calls and a barrier after
 * them (so that every rank's writes are in); the barrier adds the same
 * few packets to every variant.
 *
 *   bench-ag [max bytes (1M)] [rounds (5)] [min bytes (4)]
 *   bench-ag loop BYTES CALLS   MPI_Allgather only, CALLS calls of BYTES
 *                               per rank, one reused buffer: a steady
 *                               state to profile (tools/bench/run-prof-ag.sh)
 *   bench-ag memcpy             memcpy rate by size, no MPI: what a copy
 *                               costs on this CPU (or emulator)
 *
 * Sizes are 4 B x 4^k; min skips the smaller ones (a long run split in two).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

typedef int (*allgather_fn)(const void *, int, MPI_Datatype, void *, int,
                            MPI_Datatype, MPI_Comm);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Blocks up to SMALL_BLOCK bytes get SMALL_ROUNDS times the rounds. */
#define SMALL_BLOCK 4096
#define SMALL_ROUNDS 3

/* Fewer calls for larger blocks: about 1 MiB received per rank and round
 * (the emulated guest moves a few MB/s with 8 ranks on 2 CPUs). */
static int calls_for(long block, int size)
{
    long n = (1l << 20) / (block * size);
    return n < 2 ? 2 : n > 50 ? 50 : (int)n;
}

/* A device counter named by environment variable var (BENCH_AG_PKTS,
 * BENCH_AG_RETRIES), or -1. */
static double counter(const char *var)
{
    const char *path = getenv(var);
    double n = -1;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f) {
        if (fscanf(f, "%lf", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n;
}

/* The machine's busy time so far, us (see busy above), or -1.  /proc/stat
 * counts in clock ticks (10 ms): a round's figure is coarse, so the
 * table shows the mean of the rounds. */
static double machine_busy_us(void)
{
    const char *path = getenv("BENCH_AG_STAT");
    unsigned long long v[7];
    double us = -1;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f) {
        if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6]) == 7)
            us = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) * 1e6 /
                 (double)sysconf(_SC_CLK_TCK);
        fclose(f);
    }
    return us;
}

static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

struct cost {
    double us, pkts, retr, cpu, busy; /* per call: slowest rank; job (retr:
                                         per 100 calls); summed over ranks;
                                         machine */
};

static struct cost round_cost(allgather_fn f, char *send, char *reused,
                              long block, int fresh, int calls, int size)
{
    double t0, us, c0, cpu, p0, r0, b0;
    struct cost r;
    MPI_Barrier(MPI_COMM_WORLD);
    p0 = counter("BENCH_AG_PKTS");
    r0 = counter("BENCH_AG_RETRIES");
    b0 = machine_busy_us();
    c0 = cpu_us();
    t0 = MPI_Wtime();
    for (int i = 0; i < calls; i++) {
        char *recv = fresh ? malloc(block * size) : reused;
        f(send, (int)block, MPI_BYTE, recv, (int)block, MPI_BYTE,
          MPI_COMM_WORLD);
        if (fresh)
            free(recv);
    }
    us = (MPI_Wtime() - t0) * 1e6 / calls;
    cpu = (cpu_us() - c0) / calls;
    MPI_Barrier(MPI_COMM_WORLD);
    r.pkts = p0 < 0 ? -1 : (counter("BENCH_AG_PKTS") - p0) / calls;
    r.retr = r0 < 0 ? -1 : (counter("BENCH_AG_RETRIES") - r0) * 100 / calls;
    r.busy = b0 < 0 ? -1 : (machine_busy_us() - b0) / calls;
    MPI_Allreduce(&us, &r.us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&cpu, &r.cpu, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return r;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(double), cmp_double);
    return v[n / 2];
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile char sink; /* read from each copy: none may be dropped */

/* memcpy of 4 KiB .. 1 MiB, 64 MiB each, between two buffers. */
static int memcpy_rates(void)
{
    for (size_t n = 4096; n <= (1u << 20); n *= 4) {
        char *a = malloc(n), *b = malloc(n);
        int it = (int)((64u << 20) / n);
        memset(a, 1, n);
        memset(b, 2, n);
        double t0 = now_s();
        for (int i = 0; i < it; i++) {
            memcpy(b, a, n);
            sink = b[(size_t)i % n];
            a[(size_t)i % n]++;
        }
        double dt = now_s() - t0;
        printf("memcpy %7zu B: %8.1f MB/s, %8.2f us per copy\n", n,
               n * (double)it / dt / 1e6, dt / it * 1e6);
        free(a);
        free(b);
    }
    return 0;
}

static int loop(long block, int calls)
{
    int rank, size;
    double us, worst;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *send = malloc(block), *recv = malloc(block * size);
    memset(send, rank + 1, block);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < calls; i++)
        MPI_Allgather(send, (int)block, MPI_BYTE, recv, (int)block, MPI_BYTE,
                      MPI_COMM_WORLD);
    us = (MPI_Wtime() - t0) * 1e6 / calls;
    MPI_Reduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("loop %ld B x %d calls: %.1f us per call (slowest rank)\n",
               block, calls, worst);
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size;
    if (argc > 1 && !strcmp(argv[1], "memcpy"))
        return memcpy_rates();
    if (argc > 3 && !strcmp(argv[1], "loop")) {
        MPI_Init(&argc, &argv);
        loop(atol(argv[2]), atoi(argv[3]));
        MPI_Finalize();
        return 0;
    }
    long max = argc > 1 ? atol(argv[1]) : 1l << 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    long min = argc > 3 ? atol(argv[3]) : 4;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *send = malloc(max), *reused = malloc(max * size);
    memset(send, rank + 1, max);
    memset(reused, 0, max * size);
    const allgather_fn variant[3] = {PMPI_Allgather, MPI_Allgather,
                                     PMPI_Allgather};
    double *t[3], *pk[2], *cp[2], rt[2], bz[2];
    for (int v = 0; v < 3; v++)
        t[v] = malloc(SMALL_ROUNDS * rounds * sizeof(double));
    for (int v = 0; v < 2; v++) {
        pk[v] = malloc(SMALL_ROUNDS * rounds * sizeof(double));
        cp[v] = malloc(SMALL_ROUNDS * rounds * sizeof(double));
    }
    if (rank == 0)
        printf("%-6s %8s %6s %12s %12s %7s %7s | %8s %8s %9s %9s %7s %7s "
               "%9s %9s\n",
               "buffer", "bytes", "calls", "plain_us", "hotbuf_us", "ratio",
               "aa", "pkts_pl", "pkts_hb", "cpu_pl", "cpu_hb", "retr_pl",
               "retr_hb", "busy_pl", "busy_hb");
    for (int fresh = 0; fresh <= 1; fresh++)
        for (long block = 4; block <= max; block *= 4) {
            if (block < min)
                continue;
            int calls = calls_for(block, size);
            int nr = block <= SMALL_BLOCK ? SMALL_ROUNDS * rounds : rounds;
            for (int v = 0; v < 2; v++) { /* warm-up */
                round_cost(variant[v], send, reused, block, fresh, 2, size);
                rt[v] = bz[v] = 0;
            }
            for (int r = 0; r < nr; r++)
                for (int k = 0; k < 3; k++) {
                    int v = (r + k) % 3; /* rotate who goes first */
                    struct cost c = round_cost(variant[v], send, reused, block,
                                               fresh, calls, size);
                    t[v][r] = c.us;
                    if (v < 2) {
                        pk[v][r] = c.pkts;
                        cp[v][r] = c.cpu;
                        rt[v] = rt[v] < 0 || c.retr < 0 ? -1 : rt[v] + c.retr;
                        bz[v] = bz[v] < 0 || c.busy < 0 ? -1 : bz[v] + c.busy;
                    }
                }
            double p = median(t[0], nr), h = median(t[1], nr),
                   p2 = median(t[2], nr);
            double pk0 = median(pk[0], nr), pk1 = median(pk[1], nr);
            double cp0 = median(cp[0], nr), cp1 = median(cp[1], nr);
            /* retransmissions are rare events: their mean, not a median
             * that would hide them; busy time too (coarse per round) */
            char pks[2][16] = {"-", "-"}, rts[2][16] = {"-", "-"},
                 bzs[2][16] = {"-", "-"};
            for (int v = 0; v < 2; v++) {
                if ((v ? pk1 : pk0) >= 0)
                    snprintf(pks[v], sizeof(pks[v]), "%.1f", v ? pk1 : pk0);
                if (rt[v] >= 0)
                    snprintf(rts[v], sizeof(rts[v]), "%.1f", rt[v] / nr);
                if (bz[v] >= 0)
                    snprintf(bzs[v], sizeof(bzs[v]), "%.1f", bz[v] / nr);
            }
            if (rank == 0)
                printf("%-6s %8ld %6d %12.2f %12.2f %7.3f %7.3f | %8s %8s "
                       "%9.1f %9.1f %7s %7s %9s %9s\n",
                       fresh ? "fresh" : "reuse", block, calls, p, h, h / p,
                       p2 / p, pks[0], pks[1], cp0, cp1, rts[0], rts[1], bzs[0],
                       bzs[1]);
        }
    MPI_Finalize();
    return 0;
}
