/* Unit tests for point-to-point matching (shim/p2p/p2p_match.c): the MPI
 * rules on hand-made cases (posting order, per-sender order, wildcards,
 * probe agrees with receive, cancel), then random sequences of posts,
 * arrivals, probes and cancels against a reference matcher written the
 * naive way (one list of everything, scanned oldest first). */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "p2p/p2p_match.h"

#define A HB_PM_ANY

struct recv {
    struct hb_pm_recv n;
    int id;
};
struct msg {
    struct hb_pm_msg n;
    int id;
};

static int rid(struct hb_pm_recv *r)
{
    return r ? hb_container_of(r, struct recv, n)->id : -1;
}
static int mid(struct hb_pm_msg *m)
{
    return m ? hb_container_of(m, struct msg, n)->id : -1;
}

static void test_rules(void)
{
    struct hb_pm m;
    CHECK(hb_pm_init(&m, 3) == 0);
    struct recv r[4] = {{{.source = A, .tag = 5}, 0},
                        {{.source = 1, .tag = A}, 1},
                        {{.source = 1, .tag = 5}, 2},
                        {{.source = A, .tag = A}, 3}};
    for (int i = 0; i < 4; i++)
        CHECK(hb_pm_post(&m, &r[i].n) == NULL);
    /* The earliest posted matching receive takes each arrival. */
    struct msg x[4] = {{{.source = 1, .tag = 5}, 10},
                       {{.source = 1, .tag = 5}, 11},
                       {{.source = 1, .tag = 5}, 12},
                       {{.source = 2, .tag = 7}, 13}};
    CHECK(rid(hb_pm_arrive(&m, &x[0].n)) == 0);
    CHECK(rid(hb_pm_arrive(&m, &x[1].n)) == 1);
    CHECK(rid(hb_pm_arrive(&m, &x[2].n)) == 2);
    CHECK(rid(hb_pm_arrive(&m, &x[3].n)) == 3);
    /* Unexpected: a specific receive takes its sender's first; ANY_SOURCE
     * the earliest arrival across senders. */
    struct msg y[4] = {{{.source = 2, .tag = 1}, 20},
                       {{.source = 0, .tag = 2}, 21},
                       {{.source = 0, .tag = 1}, 22},
                       {{.source = 2, .tag = 2}, 23}};
    for (int i = 0; i < 4; i++)
        CHECK(hb_pm_arrive(&m, &y[i].n) == NULL);
    CHECK(mid(hb_pm_peek(&m, A, 2)) == 21);
    CHECK(mid(hb_pm_peek(&m, 2, A)) == 20);
    struct recv p = {{.source = A, .tag = 1}, 30};
    CHECK(mid(hb_pm_post(&m, &p.n)) == 20);
    struct recv q = {{.source = A, .tag = 1}, 31};
    CHECK(mid(hb_pm_post(&m, &q.n)) == 22);
    /* Matched probe, then cancel of a posted receive. */
    struct hb_pm_msg *t = hb_pm_peek(&m, 2, 2);
    CHECK(mid(t) == 23);
    hb_pm_take(&m, t);
    CHECK(mid(hb_pm_peek(&m, A, A)) == 21);
    struct recv c = {{.source = 1, .tag = 9}, 40};
    CHECK(hb_pm_post(&m, &c.n) == NULL);
    hb_pm_unpost(&m, &c.n);
    struct msg z = {{.source = 1, .tag = 9}, 41};
    CHECK(hb_pm_arrive(&m, &z.n) == NULL);
    CHECK(m.n_posted == 0 && m.n_unexp == 2);
    hb_pm_fini(&m);
}

/* ---- random sequences against the reference ---- */

#define NSRC 4
#define NOPS 400

struct ref_item {
    int kind, source, tag, id, alive; /* kind 0 receive, 1 message */
};

static struct ref_item ref[NOPS];
static int nref;

/* The oldest live item of the other kind that matches. */
static int ref_match(int kind, int source, int tag)
{
    for (int i = 0; i < nref; i++) {
        struct ref_item *it = &ref[i];
        if (!it->alive || it->kind == kind)
            continue;
        int s = kind ? it->source : source, t = kind ? it->tag : tag;
        int ms = kind ? source : it->source, mt = kind ? tag : it->tag;
        if ((s == A || s == ms) && (t == A || t == mt))
            return i;
    }
    return -1;
}

static int rnd(unsigned *s, int n)
{
    *s = *s * 1103515245u + 12345u;
    return (int)((*s >> 16) % (unsigned)n);
}

static int random_run(unsigned seed)
{
    struct hb_pm m;
    static struct recv rs[NOPS];
    static struct msg ms[NOPS];
    int bad = 0;
    nref = 0;
    hb_pm_init(&m, NSRC);
    for (int i = 0; i < NOPS && !bad; i++) {
        int op = rnd(&seed, 10);
        if (op < 4) { /* post */
            int s = rnd(&seed, 3) ? rnd(&seed, NSRC) : A;
            int t = rnd(&seed, 3) ? rnd(&seed, 3) : A;
            rs[i] = (struct recv){{.source = s, .tag = t}, i};
            int want = ref_match(0, s, t);
            int got = mid(hb_pm_post(&m, &rs[i].n));
            if (want >= 0)
                ref[want].alive = 0;
            ref[nref++] = (struct ref_item){0, s, t, i, want < 0};
            bad |= got != (want >= 0 ? ref[want].id : -1);
        } else if (op < 8) { /* arrive */
            int s = rnd(&seed, NSRC), t = rnd(&seed, 3);
            ms[i] = (struct msg){{.source = s, .tag = t}, i};
            int want = ref_match(1, s, t);
            int got = rid(hb_pm_arrive(&m, &ms[i].n));
            if (want >= 0)
                ref[want].alive = 0;
            ref[nref++] = (struct ref_item){1, s, t, i, want < 0};
            bad |= got != (want >= 0 ? ref[want].id : -1);
        } else { /* probe: what a receive would take */
            int s = rnd(&seed, 2) ? rnd(&seed, NSRC) : A;
            int t = rnd(&seed, 2) ? rnd(&seed, 3) : A;
            int want = ref_match(0, s, t);
            bad |= mid(hb_pm_peek(&m, s, t)) != (want >= 0 ? ref[want].id : -1);
        }
    }
    hb_pm_fini(&m);
    return bad;
}

int main(void)
{
    test_rules();
    CHECK_SEEDS(random_run, 300, "sequences (disagree with the reference)");
    return check_failures;
}
