/* Unit tests for the grant policy (shim/p2p/p2p_policy.c), on the
 * hand-set cost model of fixtures.h (C = 100 ns per KiB, V = 20 ns), so
 * each verdict can be worked out by hand. */
#include "check.h"
#include "fixtures.h"
#include "p2p/p2p_policy.h"

/* others: B's receives not naming A; sends, uses: A's, when it asked */
static int weigh(int pulled, uint64_t others, uint32_t sends, uint32_t uses,
                 uint32_t bytes, double pull_ns, struct hb_grant_verdict *v)
{
    struct hb_costmodel cm = model();
    struct hb_grant_case gc = {pulled, others, sends, uses, bytes, pull_ns};
    hb_p2p_grant_weigh(&cm, &gc, v);
    return v->grant;
}

int main(void)
{
    struct hb_grant_verdict v;
    /* 8 KiB: each copy saves 800 - 20 = 780 ns; the hot buffer alone */
    CHECK(weigh(0, 0, 10, 10, 8192, 1000, &v) && v.cost_ns == 0 &&
          v.saving_ns > 7799 && v.saving_ns < 7801);
    CHECK(weigh(0, 4, 13, 10, 8192, 1000, &v));  /* 7800 >= (4 + 3) x 1000 */
    CHECK(!weigh(0, 5, 13, 10, 8192, 1000, &v)); /* 7800 < (5 + 3) x 1000 */
    CHECK(v.cost_ns > 7999 && v.cost_ns < 8001);
    CHECK(!weigh(0, 0, 18, 10, 8192, 1000, &v)); /* A's own cold ones */
    /* 1 KiB saves 80 ns a copy: one cold message in 12 outweighs it */
    CHECK(!weigh(0, 10, 110, 110, 1024, 1000, &v));
    CHECK(weigh(0, 1, 110, 110, 1024, 80, &v)); /* 8800 >= 1 x 80 */
    /* pulled already: pull costs nothing more, whatever the mix */
    CHECK(weigh(1, 100000, 10, 10, 1024, 1000, &v) && v.cost_ns == 0);
    /* a persistent send (uses 0): the user's promise of reuse */
    CHECK(weigh(0, 100000, 5, 0, 1024, 1000, &v));
    /* pull_ns = 0: every valid request */
    CHECK(weigh(0, 100000, 900, 3, 256, 0, &v));
    /* a copy cheaper than the lookup saves nothing: refused beside any
     * other traffic, granted when there is none */
    CHECK(!weigh(0, 1, 10, 10, 128, 1, &v) && v.saving_ns == 0);
    CHECK(weigh(0, 0, 10, 10, 128, 1000, &v));
    /* uses above sends (cannot happen; counted apart): no negative cost */
    CHECK(weigh(0, 0, 5, 10, 8192, 1000, &v) && v.cost_ns == 0);
    return check_failures;
}
