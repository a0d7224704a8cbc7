/* Put and Get latency, plain MPI against hotbuf, in one run (2 ranks).
 *
 * Rank 0 is the origin, rank 1 the target.  Per synchronization mode,
 * operation and size (128 B .. 8 KiB), rounds alternate between the two
 * variants, in the same processes, so that drift on a shared (or emulated)
 * machine hits both alike:
 *   plain   PMPI_Put/PMPI_Get and PMPI synchronization only: the MPI
 *           library alone (hotbuf's wrappers are never entered)
 *   hotbuf  MPI_Put/MPI_Get and MPI synchronization only: through hotbuf,
 *           which moves the operation on its own RDMA once the origin
 *           buffer is hot.  Its own operations are therefore always
 *           completed by its own synchronization wrappers.
 * One origin buffer per size, reused by every operation of that size (in
 * its own pages), so it is hot after the warm-up.
 * Modes:
 *   fence  op + MPI_Win_fence per iteration (both ranks call the fence)
 *   lock   MPI_Win_lock(shared) once per round, then op + MPI_Win_flush per
 *          iteration, MPI_Win_unlock at the end of the round (target passive)
 * Rank 0 times every iteration (operation + synchronization) on its own:
 * the occasional multi-millisecond stall of an emulated machine then moves
 * a median, not a mean.  After every round, outside the timed part, the
 * data is checked (the target's window after Puts, the origin buffer after
 * Gets, with a new pattern each round); a mismatch is reported and the exit
 * status is 1.
 *
 * Output (stdout, rank 0):
 *   a table, one row per (mode, op, size):
 *     mode op bytes plain_us hotbuf_us ratio gain%
 *   plain_us/hotbuf_us = median of all timed iterations of the variant (us);
 *   ratio = median over the rounds of the per-round hotbuf/plain ratio of
 *   per-round medians (paired round by round: drift cancels); gain% =
 *   (1 - ratio) * 100, i.e. (plain - hotbuf) / plain; then one
 *   machine-readable line per row:
 *     RESULT mode=M op=O size=N plain_us= hotbuf_us= ratio= gain_pct=
 *            ratio_ci_lo= ratio_ci_hi= round_ratio_lo= round_ratio_hi=
 *            median_ratio= plain_mean_us= hotbuf_mean_us= mean_ratio=
 *            min_ratio= iters= rounds=
 *   gain_pct = (1 - ratio) * 100; ratio_ci_lo/hi = distribution-free 95%
 *   confidence interval of that median (order statistics of the per-round
 *   ratios); round_ratio_lo/hi = their quartiles (the per-round spread);
 *   median_ratio = hotbuf_us / plain_us; *_mean_us, mean_ratio the same on
 *   means; min_ratio = fastest hotbuf / fastest plain iteration.
 * Lines starting with '#' are comments.  Without hotbuf preloaded both
 * variants are the same code and the ratios show the noise (the program
 * says whether MPI_Put is intercepted).
 *
 *   mpiexec -n 2 bench-rma [iterations per round (25)] [rounds (8)] [warm-up iterations (100)]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSIZES 7 /* 128 << 0 .. 128 << 6 = 8 KiB */
#define MAXSIZE 8192

enum { FENCE, LOCK };
enum { PLAIN, HOTBUF };
static const char *const variant_name[2] = {"plain", "hotbuf"};

struct fns {
    int (*put)(const void *, int, MPI_Datatype, int, MPI_Aint, int,
               MPI_Datatype, MPI_Win);
    int (*get)(void *, int, MPI_Datatype, int, MPI_Aint, int, MPI_Datatype,
               MPI_Win);
    int (*fence)(int, MPI_Win);
    int (*lock)(int, int, int, MPI_Win);
    int (*unlock)(int, MPI_Win);
    int (*flush)(int, MPI_Win);
};

static const struct fns variant[2] = {
    {PMPI_Put, PMPI_Get, PMPI_Win_fence, PMPI_Win_lock, PMPI_Win_unlock,
     PMPI_Win_flush},
    {MPI_Put, MPI_Get, MPI_Win_fence, MPI_Win_lock, MPI_Win_unlock,
     MPI_Win_flush},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) /* sorts v */
{
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static long mismatches;

/* First byte of buf[0..n) that is not pat, or -1. */
static long first_bad(const unsigned char *buf, int n, unsigned char pat)
{
    for (int i = 0; i < n; i++)
        if (buf[i] != pat)
            return i;
    return -1;
}

/* One round of iters operations of n bytes with the functions of variant
 * v.  Rank 0 stores the time of every iteration (operation +
 * synchronization) in lat[0..iters), in us.  pat: the byte the data
 * carries in this round (checked afterwards, outside the timed part). */
static void run_round(int v, int mode, int is_get, unsigned char *buf,
                      unsigned char *mem, int n, int iters, MPI_Win win,
                      int rank, unsigned char pat, double *lat)
{
    const struct fns *f = &variant[v];
    /* The data source of this round gets the pattern, the destination a
     * different byte, so that a lost transfer shows.  Stores to the window
     * happen outside any epoch and before the barrier. */
    if (rank == 0)
        memset(buf, is_get ? (unsigned char)~pat : pat, n);
    else
        memset(mem, is_get ? pat : (unsigned char)~pat, n);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mode == FENCE) {
        f->fence(0, win); /* opens the first epoch */
        double t = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                if (is_get)
                    f->get(buf, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
                else
                    f->put(buf, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
            }
            f->fence(0, win);
            double now = MPI_Wtime();
            lat[i] = (now - t) * 1e6;
            t = now;
        }
    } else if (rank == 0) {
        f->lock(MPI_LOCK_SHARED, 1, 0, win);
        double t = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (is_get)
                f->get(buf, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
            else
                f->put(buf, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
            f->flush(1, win);
            double now = MPI_Wtime();
            lat[i] = (now - t) * 1e6;
            t = now;
        }
        f->unlock(1, win);
    }
    /* Every epoch of the round is closed: check the data. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (is_get ? rank == 0 : rank == 1) {
        long bad = first_bad(is_get ? buf : mem, n, pat);
        if (bad >= 0) {
            mismatches++;
            fprintf(
                stderr,
                "bench-rma: DATA MISMATCH rank %d %s %s %s size %d: byte %ld is 0x%02x, "
                "expected 0x%02x\n",
                rank, variant_name[v], mode == FENCE ? "fence" : "lock",
                is_get ? "get" : "put", n, bad, (is_get ? buf : mem)[bad], pat);
        }
    }
}

static double root(double x) /* sqrt without libm (the tools link no -lm) */
{
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 60; i++)
        r = (r + x / r) / 2;
    return r;
}

static double mean(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

/* Where MPI_Put comes from: the MPI library itself, or a preloaded tool. */
static void say_interception(void)
{
    Dl_info a, b;
    void *mp = (void *)MPI_Put, *pp = (void *)PMPI_Put;
    const char *ma = dladdr(mp, &a) && a.dli_fname ? a.dli_fname : "?";
    const char *pa = dladdr(pp, &b) && b.dli_fname ? b.dli_fname : "?";
    if (mp != pp && strcmp(ma, pa) != 0)
        printf(
            "# MPI_Put is intercepted (%s; PMPI_Put in %s): hotbuf = the MPI_ path\n",
            ma, pa);
    else
        printf(
            "# MPI_Put is NOT intercepted (%s): both variants are the same code, "
            "ratios show the noise\n",
            pa);
}

int main(int argc, char **argv)
{
    int rank, nranks;
    int iters = argc > 1 ? atoi(argv[1]) : 25;
    int rounds = argc > 2 ? atoi(argv[2]) : 8;
    int warmup = argc > 3 ? atoi(argv[3]) : 100;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 2 || iters < 1 || rounds < 1 || warmup < 0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: mpiexec -n 2 bench-rma [iterations per round >= 1] "
                    "[rounds >= 1] [warm-up iterations >= 0]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char *mem;
    MPI_Win win;
    MPI_Win_allocate(MAXSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    memset(mem, 0, MAXSIZE);
    unsigned char
        *bufs[NSIZES]; /* one reused origin buffer per size, own pages */
    for (int k = 0; k < NSIZES; k++) {
        if (posix_memalign((void **)&bufs[k], 4096, MAXSIZE))
            MPI_Abort(MPI_COMM_WORLD, 3);
        memset(bufs[k], 0, MAXSIZE);
    }
    /* rank 0: every timed iteration, per variant, round after round */
    double *lat[2] = {malloc((size_t)rounds * iters * sizeof(double)),
                      malloc((size_t)rounds * iters * sizeof(double))};
    double *scratch =
        malloc((size_t)(iters > warmup ? iters : warmup) * sizeof(double));
    double *rmed[2] = {malloc(rounds * sizeof(double)),
                       malloc(rounds * sizeof(double))};
    double *ratio = malloc(rounds * sizeof(double));
    /* the RESULT lines, printed after the table */
    char(*result)[400] = calloc(2 * 2 * NSIZES, sizeof *result);
    int nresult = 0;
    if (!lat[0] || !lat[1] || !scratch || !rmed[0] || !rmed[1] || !ratio ||
        !result)
        MPI_Abort(MPI_COMM_WORLD, 3);
    if (rank == 0) {
        say_interception();
        printf(
            "# %d rounds x %d iterations per size and variant (after %d warm-up iterations "
            "each), plain and hotbuf alternating; us per operation + synchronization: median "
            "of all timed iterations; ratio = median of the per-round hotbuf/plain ratios; "
            "gain%% = (1 - ratio) * 100\n",
            rounds, iters, warmup);
        printf("%-5s %-3s %6s %10s %10s %7s %7s\n", "mode", "op", "bytes",
               "plain_us", "hotbuf_us", "ratio", "gain%");
        fflush(stdout);
    }
    unsigned pat = 1;
    for (int mode = FENCE; mode <= LOCK; mode++)
        for (int is_get = 0; is_get <= 1; is_get++)
            for (int k = 0; k < NSIZES; k++) {
                int n = 128 << k;
                /* warm-up: the buffer becomes hot, hotbuf connects and registers */
                if (warmup > 0)
                    for (int v = PLAIN; v <= HOTBUF; v++)
                        run_round(v, mode, is_get, bufs[k], mem, n, warmup, win,
                                  rank, (unsigned char)(pat++ % 255 + 1),
                                  scratch);
                for (int r = 0; r < rounds; r++)
                    for (int i = 0; i < 2; i++) {
                        int v = (r & 1) ? HOTBUF - i
                                        : i; /* alternate who goes first */
                        double *l = lat[v] + (size_t)r * iters;
                        run_round(v, mode, is_get, bufs[k], mem, n, iters, win,
                                  rank, (unsigned char)(pat++ % 255 + 1), l);
                        if (rank == 0) {
                            memcpy(scratch, l, iters * sizeof(double));
                            rmed[v][r] = median(scratch, iters);
                        }
                    }
                if (rank != 0)
                    continue;
                for (int r = 0; r < rounds; r++)
                    ratio[r] = rmed[HOTBUF][r] / rmed[PLAIN][r];
                double rr = median(ratio, rounds); /* sorts ratio */
                double rlo = ratio[rounds / 4], rhi = ratio[(3 * rounds) / 4];
                /* distribution-free 95% confidence interval of the median
                 * ratio: order statistics k and rounds+1-k (1-based) */
                int ck = (int)((rounds + 1) / 2.0 - 0.98 * root(rounds));
                if (ck < 1)
                    ck = 1;
                double clo = ratio[ck - 1], chi = ratio[rounds - ck];
                size_t all = (size_t)rounds * iters;
                double pm = mean(lat[PLAIN], all), hm = mean(lat[HOTBUF], all);
                double p = median(lat[PLAIN], all),
                       h = median(lat[HOTBUF], all);
                double min_ratio =
                    lat[HOTBUF][0] / lat[PLAIN][0]; /* sorted: best / best */
                const char *ms = mode == FENCE ? "fence" : "lock",
                           *os = is_get ? "get" : "put";
                printf("%-5s %-3s %6d %10.2f %10.2f %7.3f %+7.1f\n", ms, os, n,
                       p, h, rr, (1 - rr) * 100);
                fflush(stdout);
                snprintf(
                    result[nresult++], sizeof *result,
                    "RESULT mode=%s op=%s size=%d plain_us=%.3f hotbuf_us=%.3f ratio=%.4f "
                    "gain_pct=%.2f ratio_ci_lo=%.4f ratio_ci_hi=%.4f round_ratio_lo=%.4f "
                    "round_ratio_hi=%.4f median_ratio=%.4f plain_mean_us=%.3f "
                    "hotbuf_mean_us=%.3f mean_ratio=%.4f min_ratio=%.4f iters=%d rounds=%d",
                    ms, os, n, p, h, rr, (1 - rr) * 100, clo, chi, rlo, rhi,
                    h / p, pm, hm, hm / pm, min_ratio, iters, rounds);
            }
    long total = 0;
    MPI_Reduce(&mismatches, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < nresult; i++)
            printf("%s\n", result[i]);
        printf("# data check: %s (%ld bad rounds)\n", total ? "FAILED" : "ok",
               total);
    }
    MPI_Win_free(&win);
    for (int k = 0; k < NSIZES; k++)
        free(bufs[k]);
    free(lat[0]);
    free(lat[1]);
    free(scratch);
    free(rmed[0]);
    free(rmed[1]);
    free(ratio);
    free(result);
    MPI_Finalize();
    return total ? 1 : 0;
}
