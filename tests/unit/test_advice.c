/* Advice per call site (shim/report/report_advice.c): one site per rule,
 * with a fixed threshold so every line is known exactly. */
#include "check.h"

#include "report/report_advice.h"

static uint32_t thr[HB_SIZE_CLASSES];
static const struct hb_threshold_params tp = {
    .speculative = 0.25, .min_size = 128, .eager_limit = 8192, .fixed = 100};

static struct hb_advice_ctx ctx(void)
{
    struct hb_advice_ctx a = {.thresholds = thr, .tp = &tp};
    return a;
}

/* A site of n calls of size bytes on `buffers` buffers used `uses` times
 * each, the first `thr` uses cold. */
static struct hb_site_summary site(unsigned op, uint64_t buffers, uint64_t uses,
                                   uint64_t size)
{
    struct hb_site_summary s = {
        .op = op, .buffers = buffers, .max_reuse = uses};
    snprintf(s.name, sizeof(s.name), "f (x.c:1)");
    s.calls = buffers * uses;
    s.bytes = s.calls * size;
    s.reuse_calls = buffers * (uses - 1);
    if (size >= tp.min_size && size <= tp.eager_limit && uses >= tp.fixed)
        s.hot_calls = buffers * (uses - tp.fixed + 1);
    return s;
}

static const char *advice(const struct hb_site_summary *s,
                          const struct hb_advice_ctx *a)
{
    static char buf[HB_ADVICE_LEN];
    hb_site_advice(s, a, buf, sizeof(buf));
    return buf;
}

static void test_cold(void)
{
    struct hb_advice_ctx a = ctx();
    struct hb_site_summary s = site(HB_OP_SEND, 500, 1, 256);
    CHECK_STR(advice(&s, &a), "buffers used once: nothing to gain");
    s = site(HB_OP_PUT, 10, 10, 512);
    CHECK_STR(advice(&s, &a), "reused (up to 10 uses), but below the "
                              "threshold at this size (100 at 512 B)");
    s = site(HB_OP_SEND, 1, 25, 2048);
    CHECK_STR(advice(&s, &a),
              "reused (up to 25 uses), below the threshold (100 at 2.0 KiB): "
              "a persistent request would make this hot from the first call");
    s.persistent = 1;
    CHECK_STR(advice(&s, &a), "persistent request, reused (up to 25 uses), "
                              "but below the threshold at this size (100 at "
                              "2.0 KiB)");
    /* the buffer's first 10 uses here, its other 290 at another site */
    s = site(HB_OP_SEND, 1, 10, 1024);
    s.max_reuse = 300;
    CHECK_STR(advice(&s, &a), "first uses of buffers that become hot at other "
                              "sites (up to 300 uses in all): see those sites");
    s = site(HB_OP_SEND, 1, 1000, 65536);
    CHECK_STR(advice(&s, &a), "reused, but 64 KiB is above the eager limit: "
                              "MPI sends it zero-copy already");
    s = site(HB_OP_GET, 1, 1000, 16);
    CHECK_STR(advice(&s, &a), "reused, but 16 B is below HOTBUF_MIN_SIZE: a "
                              "lookup costs more than the copy");
}

static void test_hot(void)
{
    struct hb_advice_ctx a = ctx();
    struct hb_site_summary s = site(HB_OP_PUT, 1, 1000, 1024);
    s.saving_ns = 2500;
    s.rerouted_calls = 901;
    CHECK_STR(advice(&s, &a),
              "hot, rerouted (90% of calls): model saving 2.5 us");
    s.rerouted_calls = 0;
    a.why_pmpi[HB_OP_PUT] = "intranode";
    CHECK_STR(advice(&s, &a),
              "hot, kept on MPI: same node, MPI's shared memory is faster "
              "(model saving 2.5 us across nodes)");
    a.why_pmpi[HB_OP_PUT] = "RDMA off";
    CHECK_STR(advice(&s, &a),
              "hot, not rerouted (RDMA off): model saving 2.5 us");
    a.why_pmpi[HB_OP_PUT] = NULL;
    CHECK_STR(advice(&s, &a), "hot, not rerouted (this class is tracked "
                              "only): model saving 2.5 us");
    s.saving_ns = -1400;
    CHECK_STR(advice(&s, &a),
              "hot, but registrations cost more than the copies saved (model "
              "-1.4 us): keep buffers alive longer");
    /* hot for its last 10 of 109 uses: the warm-up dominates */
    s = site(HB_OP_SEND, 1, 109, 1024);
    s.saving_ns = 100;
    CHECK_STR(advice(&s, &a),
              "hot after a long warm-up: a persistent request (MPI_Send_init) "
              "would make this hot from the first call");
}

static void test_no_data(void)
{
    struct hb_advice_ctx a = ctx();
    struct hb_site_summary s = {.op = HB_OP_SEND, .calls = 7, .empty_calls = 7};
    snprintf(s.name, sizeof(s.name), "f (x.c:2)");
    CHECK_STR(advice(&s, &a), "moves no data (zero bytes or MPI_PROC_NULL): "
                              "nothing to gain");
    s = site(HB_OP_SEND, 1, 5, 1024);
    s.untracked_calls = s.calls;
    CHECK_STR(advice(&s, &a), "not tracked: the reuse table had stopped "
                              "growing (see the table's line)");
    snprintf(s.name, sizeof(s.name), "%s", HB_SITE_OTHER_NAME);
    CHECK_STR(advice(&s, &a), "calls of sites past HOTBUF_MAX_SITES: raise it "
                              "to tell them apart");
}

int main(void)
{
    struct hb_costmodel cm = {0};
    hb_cost_set_copy_linear(&cm, 100);
    cm.reg_base_us = 10;
    hb_cost_thresholds(&cm, &tp, thr);
    test_cold();
    test_hot();
    test_no_data();
    return CHECK_DONE();
}
