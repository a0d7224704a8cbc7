/* Unit tests for the cost model (shim/costmodel.c): break-even counts,
 * thresholds, size classes, copy interpolation, savings and the copy
 * calibration.  Hand-set model: C = 100 ns/KiB, V = 20 ns,
 * R = 10 us + 0.25 us per 4 KiB page. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fixtures.h"
#include "track/costmodel.h"

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}
#define CLOSE(a, b) close_to((a), (b))

/* The same model written out by hand. */
static double hand_copy(double size)
{
    return size / 1024.0 * 100.0;
}
static double hand_reg(double size)
{
    double pages = ceil(size / 4096.0);
    return (10.0 + 0.25 * (pages < 1 ? 1 : pages)) * 1000.0;
}

static void test_costs(void)
{
    struct hb_costmodel cm = model();
    CHECK(cm.copy_src == HB_COST_USER);
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 4096), 400.0));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 1024), 100.0));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 1500), hand_copy(1500)));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 3), hand_copy(3)));
    CHECK(CLOSE(hb_cost_reg_ns(&cm, 4096), 10250.0));
    CHECK(CLOSE(hb_cost_reg_ns(&cm, 4097), 10500.0));
    CHECK(CLOSE(hb_cost_reg_ns(&cm, 1), 10250.0));
    CHECK(CLOSE(hb_cost_reg_ns(&cm, 0), 10250.0)); /* at least one page */
    CHECK(CLOSE(hb_cost_reg_ns(&cm, 1 << 20), hand_reg(1 << 20)));

    /* n > R/(C-V): 10250 / (400 - 20) */
    CHECK(CLOSE(hb_cost_break_even(&cm, 4096), 10250.0 / 380.0));
    CHECK(CLOSE(hb_cost_break_even(&cm, 8192), 10500.0 / 780.0));
    CHECK(CLOSE(hb_cost_break_even(&cm, 256), 10250.0 / 5.0));
    /* C <= V: never pays off */
    CHECK(hb_cost_break_even(&cm, 128) == -1); /* C = 12.5 ns */
    CHECK(hb_cost_break_even(&cm, 64) == -1);
    CHECK(hb_cost_break_even(&cm, 0) == -1);
    cm.lookup_ns = hb_cost_copy_ns(&cm, 1024); /* C == V exactly */
    CHECK(hb_cost_break_even(&cm, 1024) == -1);
    CHECK(hb_cost_break_even(&cm, 2048) > 0);
}

static void test_thresholds(void)
{
    struct hb_costmodel cm = model();
    struct hb_threshold_params tp = {
        .speculative = 0.25, .min_size = 128, .eager_limit = 8192};
    uint32_t thr[HB_SIZE_CLASSES];
    memset(thr, 0xcc, sizeof(thr));
    hb_cost_thresholds(&cm, &tp, thr);

    /* ceil(speculative * n) per class, n computed by hand at size 2^k */
    for (unsigned k = 0; k < HB_SIZE_CLASSES; k++) {
        double size = ldexp(1.0, (int)k), c = hand_copy(size);
        uint32_t want = c <= 20
                            ? HB_NEVER
                            : (uint32_t)ceil(0.25 * hand_reg(size) / (c - 20));
        if (want == 0)
            want = 1;
        if (thr[k] != want)
            fprintf(stderr, "class %u: threshold %u, want %u\n", k, thr[k],
                    want);
        CHECK_EQ_U64(thr[k], want);
    }
    CHECK_EQ_U64(thr[12], 7);  /* 4096: ceil(0.25 * 26.97) */
    CHECK_EQ_U64(thr[13], 4);  /* 8192: ceil(0.25 * 13.46) */
    CHECK_EQ_U64(thr[8], 513); /* 256: ceil(0.25 * 2050) */
    CHECK_EQ_U64(thr[7], HB_NEVER);

    /* per call: exact min/eager bounds, class threshold in between */
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 4096), 7);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 4000), 7);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 8192), 4);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 8193), HB_NEVER); /* above eager */
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 1 << 20), HB_NEVER);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 127), HB_NEVER); /* below min */
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 0), HB_NEVER);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 128),
                 HB_NEVER); /* eligible, but C <= V */
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 256), 513);
    tp.min_size = 0;
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 64), HB_NEVER); /* C <= V */
    tp.min_size = 128;

    /* speculative scales the threshold */
    tp.speculative = 1.0;
    hb_cost_thresholds(&cm, &tp, thr);
    CHECK_EQ_U64(thr[12], 27); /* ceil(26.97) */
    tp.speculative = 0.25;

    /* free registration: n = 0, still at least one use */
    cm.reg_base_us = cm.reg_page_us = 0;
    hb_cost_thresholds(&cm, &tp, thr);
    CHECK_EQ_U64(thr[12], 1);
    CHECK_EQ_U64(thr[7], HB_NEVER);
    cm = model();

    /* huge break-even counts stay below HB_NEVER */
    cm.lookup_ns = hb_cost_copy_ns(&cm, 4096) - 1e-6;
    hb_cost_thresholds(&cm, &tp, thr);
    CHECK(thr[12] != HB_NEVER && thr[12] > 1000000);
    cm.lookup_ns = hb_cost_copy_ns(&cm, 4096) - 1e-7; /* 0.25 * n > 2^32 */
    hb_cost_thresholds(&cm, &tp, thr);
    CHECK_EQ_U64(thr[12], HB_NEVER - 1);
    cm = model();

    /* fixed threshold: every eligible size, whatever the cost model says */
    tp.fixed = 100;
    hb_cost_thresholds(&cm, &tp, thr);
    for (unsigned k = 0; k < HB_SIZE_CLASSES; k++)
        CHECK_EQ_U64(thr[k], 100);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 4096), 100);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 128), 100);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 8192), 100);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 127), HB_NEVER);
    CHECK_EQ_U64(hb_threshold_for(thr, &tp, 8193), HB_NEVER);
}

static void test_size_class(void)
{
    static const struct {
        uint64_t size;
        unsigned cls;
    } cases[] = {
        {0, 0},     {1, 0},     {2, 1},     {3, 2},     {4, 2},
        {5, 3},     {8, 3},     {9, 4},     {1023, 10}, {1024, 10},
        {1025, 11}, {4096, 12}, {8192, 13}, {8193, 14}, {1ull << 39, 39},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (hb_size_class(cases[i].size) != cases[i].cls)
            fprintf(stderr, "hb_size_class(%llu) = %u, want %u\n",
                    (unsigned long long)cases[i].size,
                    hb_size_class(cases[i].size), cases[i].cls);
        CHECK_EQ_U64(hb_size_class(cases[i].size), cases[i].cls);
    }
    /* class k holds (2^(k-1), 2^k] */
    for (unsigned k = 1; k < HB_SIZE_CLASSES; k++) {
        uint64_t hi = 1ull << k, lo = hi / 2 + 1;
        CHECK(hb_size_class(hi) == k && hb_size_class(lo) == k &&
              hb_size_class(lo - 1) == k - 1);
    }
}

static void test_interpolation(void)
{
    struct hb_costmodel cm = model();
    /* a non-linear table: 1 KiB costs 100 ns, 2 KiB 300 ns */
    cm.copy_ns[10] = 100;
    cm.copy_ns[11] = 300;
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 1024), 100));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 2048), 300));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 1536), 200));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 1280), 150));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 1025), 100 + 200.0 / 1024));
    /* between 512 (copy_ns[9] = 50) and 1024 (100) */
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 768), 75));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 1), cm.copy_ns[0]));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 0), cm.copy_ns[0]));
    CHECK(CLOSE(hb_cost_copy_ns(&cm, 2), cm.copy_ns[1]));
    /* the linear model interpolates exactly */
    cm = model();
    for (uint64_t s = 2; s < 100000; s = s * 3 + 1)
        CHECK(CLOSE(hb_cost_copy_ns(&cm, s), hand_copy((double)s)));
}

static void test_saving(void)
{
    struct hb_costmodel cm = model();
    CHECK(CLOSE(hb_cost_saving_ns(&cm, 4096, 50), 50 * 400.0 - 10250.0));
    CHECK(CLOSE(hb_cost_saving_ns(&cm, 4096, 1), 400.0 - 10250.0)); /* a loss */
    CHECK(CLOSE(hb_cost_saving_ns(&cm, 1024, 901), 901 * 100.0 - 10250.0));
    CHECK(CLOSE(hb_cost_saving_ns(&cm, 6000, 10),
                10 * hand_copy(6000) - hand_reg(6000)));
    CHECK(hb_cost_saving_ns(&cm, 4096, 0) == 0);
    CHECK(hb_cost_saving_ns(&cm, 1 << 20, 0) == 0);
    /* V is not part of the saving */
    cm.lookup_ns = 1000;
    CHECK(CLOSE(hb_cost_saving_ns(&cm, 4096, 50), 50 * 400.0 - 10250.0));
}

static void test_measure(void)
{
    struct hb_costmodel cm = model();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hb_cost_measure_copy(&cm, 1 << 20);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(cm.copy_src == HB_COST_MEASURED);
    int positive = 1, monotone = 1;
    for (unsigned k = 0; k < HB_SIZE_CLASSES; k++) {
        if (!(cm.copy_ns[k] > 0) || !isfinite(cm.copy_ns[k]))
            positive = 0;
        if (k && cm.copy_ns[k] < cm.copy_ns[k - 1])
            monotone = 0;
    }
    CHECK(positive);
    CHECK(monotone);
    /* a 1 MiB copy costs more than a 64 B one */
    CHECK(hb_cost_copy_ns(&cm, 1 << 20) > hb_cost_copy_ns(&cm, 64));
    /* interpolated costs are non-decreasing too */
    int mono_sizes = 1;
    for (uint64_t s = 1; s < (1 << 22); s += s / 7 + 1)
        if (hb_cost_copy_ns(&cm, s + s / 7 + 1) < hb_cost_copy_ns(&cm, s))
            mono_sizes = 0;
    CHECK(mono_sizes);
    if (secs > 0.5)
        fprintf(stderr, "hb_cost_measure_copy took %.3f s\n", secs);
    CHECK(secs < 0.5); /* documented: a few milliseconds */
    CHECK(!strcmp(hb_cost_source_name(HB_COST_MEASURED), "measured"));
    CHECK(!strcmp(hb_cost_source_name(HB_COST_USER), "user"));
    CHECK(!strcmp(hb_cost_source_name(HB_COST_DEFAULT), "default"));
}

int main(void)
{
    test_costs();
    test_thresholds();
    test_size_class();
    test_interpolation();
    test_saving();
    test_measure();
    return CHECK_DONE();
}
