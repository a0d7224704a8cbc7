/* The grant policy: see p2p_policy.h. */
#include "p2p_policy.h"

void hb_p2p_grant_weigh(const struct hb_costmodel *cm,
                        const struct hb_grant_case *gc,
                        struct hb_grant_verdict *v)
{
    double per_copy = hb_cost_copy_ns(cm, gc->bytes) - cm->lookup_ns;
    uint64_t cold =
        gc->others + (gc->sends > gc->uses ? gc->sends - gc->uses : 0);
    v->saving_ns = gc->uses * (per_copy > 0 ? per_copy : 0);
    v->cost_ns = gc->pulled ? 0 : (double)cold * gc->pull_ns;
    v->grant = gc->pulled || !gc->uses || v->saving_ns >= v->cost_ns;
}
