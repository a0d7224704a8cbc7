/* Unit tests for the release merge (shim/p2p/p2p_merge.c) and the sender's
 * bookkeeping (shim/p2p/p2p_pair.c) together: the sender of P2P-DESIGN.md
 * §5.6 (markers before MPI runs that follow ring records, mpi_before
 * stamps, RESENDs of its unacknowledged tail after a QP error) on one
 * communicator, with rseq gaps for its records on other
 * communicators; the two paths' arrivals interleaved at random, releases
 * drained at random points.  The merge must release every data message
 * exactly once, in send order, and hold nothing at the end.  Hand-made
 * cases first, then 2000 random schedules. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "p2p/p2p_merge.h"
#include "p2p/p2p_pair.h"

#define MAXN 64
#define MAXI (4 * MAXN)

struct item {
    struct hb_mg_item it;
    int id; /* send order of a data message (MPI or ring); -1: marker */
    int resend;
};

static int item_id(struct hb_mg_item *it)
{
    return hb_container_of(it, struct item, it)->id;
}

/* Drains the merge; appends released data ids to out.  Returns how many. */
static int drain(struct hb_mg *g, int *out, int *nout, int most)
{
    struct hb_mg_item *it;
    int n = 0;
    while (n < most && (it = hb_mg_next(g))) {
        if (it->kind != HB_MG_MARKER)
            out[(*nout)++] = item_id(it);
        n++;
    }
    return n;
}

static void test_cases(void)
{
    struct hb_mg g;
    int out[16], n = 0;
    /* PRE: MPI data goes at once, a ring record waits for the marker */
    struct item a = {{.kind = HB_MG_MPI}, 0, 0};
    struct item r1 = {{.kind = HB_MG_RING, .rseq = 1, .stamp = 0}, 1, 0};
    struct item k0 = {{.kind = HB_MG_MARKER, .stamp = 0}, -1, 0};
    struct item b = {{.kind = HB_MG_MPI}, 2, 0};
    struct item k1 = {{.kind = HB_MG_MARKER, .stamp = 1}, -1, 0};
    struct item r2 = {{.kind = HB_MG_RING, .rseq = 3, .stamp = 1}, 3, 0};
    hb_mg_init(&g);
    hb_mg_pulled(&g, &a.it);
    CHECK(hb_mg_ring(&g, &r1.it) == 0);
    drain(&g, out, &n, 100);
    CHECK(n == 1 && out[0] == 0); /* r1 held: no marker yet */
    hb_mg_pulled(&g, &k0.it);
    hb_mg_pulled(&g, &k1.it); /* MPI run after r1: fenced by k=1 */
    hb_mg_pulled(&g, &b.it);
    CHECK(hb_mg_ring(&g, &r2.it) == 0); /* stamped 1: after b */
    drain(&g, out, &n, 100);
    CHECK(n == 4 && out[1] == 1 && out[2] == 2 && out[3] == 3);
    CHECK(hb_mg_empty(&g));
    /* a duplicate (placed, then resent) is refused */
    struct item dup = {{.kind = HB_MG_RING, .rseq = 3, .stamp = 1}, 3, 1};
    CHECK(hb_mg_ring(&g, &dup.it) == -1);
    /* a marker waits for its record, whichever path brings it later */
    struct item k3 = {{.kind = HB_MG_MARKER, .stamp = 5}, -1, 0};
    struct item c = {{.kind = HB_MG_MPI}, 5, 0};
    struct item r5 = {{.kind = HB_MG_RING, .rseq = 5, .stamp = 1}, 4, 0};
    hb_mg_pulled(&g, &k3.it);
    hb_mg_pulled(&g, &c.it);
    drain(&g, out, &n, 100);
    CHECK(n == 4);
    CHECK(hb_mg_ring(&g, &r5.it) == 0);
    drain(&g, out, &n, 100);
    CHECK(n == 6 && out[4] == 4 && out[5] == 5);
    CHECK(hb_mg_empty(&g));
}

/* The sender sends no marker at the grant: MARKER{0} goes right before
 * its first ring record, so no marker is left unreceived when nothing
 * follows the grant (it was, and matched the next communicator's wildcard
 * receive under MPICH). */
static void test_sender(void)
{
    struct hb_pp pp;
    struct hb_pp_peer peer;
    struct hb_pp_rec rec;
    uint32_t k;
    hb_pp_init(&pp);
    hb_pp_peer_init(&peer);
    hb_pp_granted(&pp);
    CHECK(hb_pp_ring_ok(&pp));
    CHECK(hb_pp_mpi(&pp, &k) == 0 && pp.mpi_since == 0); /* before MARKER{0} */
    CHECK(hb_pp_open(&pp) == 1);
    hb_pp_ring(&pp, &peer, &rec);
    CHECK(rec.mpi_before == 0 && hb_pp_open(&pp) == 0);
    CHECK(hb_pp_mpi(&pp, &k) == 1 && k == rec.rseq && pp.mpi_since == 1);
    hb_pp_acked(&rec);
    hb_pp_init(&pp); /* a fault before any record: nothing to fence */
    hb_pp_granted(&pp);
    hb_pp_dead(&pp);
    CHECK(!hb_pp_ring_ok(&pp) && hb_pp_open(&pp) == 0);
    CHECK(hb_pp_mpi(&pp, &k) == 0);
}

struct run {
    unsigned s;
    struct item items[MAXI];
    int nitems;
    struct item *mpi[MAXI], *ring[MAXI]; /* the two arrival streams */
    int nmpi, nring;
};

static unsigned rnd(struct run *u, unsigned n)
{
    u->s = u->s * 1103515245u + 12345u;
    return (u->s >> 16) % n;
}

static struct item *new_item(struct run *u, int kind, int id)
{
    struct item *x = &u->items[u->nitems++];
    x->it.kind = kind;
    x->id = id;
    return x;
}

/* The sender (shim/p2p/p2p_pair.c) writes both streams; returns the
 * number of data messages. */
static int send_schedule(struct run *u)
{
    int n = 1 + (int)rnd(u, MAXN - 1), pre = (int)rnd(u, 4);
    int fault = rnd(u, 3) ? -1 : (int)rnd(u, (unsigned)n + 1), nrec = 0;
    struct hb_pp pp;
    struct hb_pp_peer peer;
    struct hb_pp_rec rec[MAXN], *r;
    int rec_id[MAXN];
    uint32_t k;
    hb_pp_init(&pp);
    hb_pp_peer_init(&peer);
    for (int i = 0; i < n; i++) {
        if (i == fault && hb_pp_ring_ok(&pp)) {
            /* QP error: RC placed a prefix of the records, A saw a prefix
             * of those complete; the rest is resent, oldest first */
            int placed = (int)rnd(u, (unsigned)nrec + 1);
            int acked = (int)rnd(u, (unsigned)placed + 1);
            u->nring = placed;
            for (int j = 0; j < acked; j++)
                hb_pp_acked(&rec[j]);
            while ((r = hb_pp_oldest_unacked(&peer))) {
                struct item *x = new_item(u, HB_MG_RING, rec_id[r - rec]);
                x->it.rseq = r->rseq, x->it.stamp = r->mpi_before;
                x->resend = 1;
                u->mpi[u->nmpi++] = x;
                hb_pp_acked(r);
            }
            hb_pp_dead(&pp);
        }
        if (i == pre)
            hb_pp_granted(&pp); /* nothing sent: MARKER{0} comes later */
        peer.rseq += rnd(u, 3); /* records on other communicators */
        if (hb_pp_ring_ok(&pp) && rnd(u, 2)) {
            struct item *x = new_item(u, HB_MG_RING, i);
            if (hb_pp_open(&pp)) /* the first record: MARKER{0} first */
                u->mpi[u->nmpi++] = new_item(u, HB_MG_MARKER, -1);
            hb_pp_ring(&pp, &peer, &rec[nrec]);
            x->it.rseq = rec[nrec].rseq, x->it.stamp = rec[nrec].mpi_before;
            rec_id[nrec++] = i;
            u->ring[u->nring++] = x;
            continue;
        }
        if (hb_pp_mpi(&pp, &k)) {
            struct item *m = new_item(u, HB_MG_MARKER, -1);
            m->it.stamp = k;
            u->mpi[u->nmpi++] = m;
        }
        u->mpi[u->nmpi++] = new_item(u, HB_MG_MPI, i);
    }
    return n;
}

/* B: arrivals interleaved at random, a RESEND handled when pulled (after
 * the CQ drain: every placed record first), releases at random points. */
static int random_run(unsigned seed)
{
    struct run *u = calloc(1, sizeof(*u));
    struct hb_mg g;
    int out[MAXN], nout = 0, im = 0, ir = 0, bad = 0;
    u->s = seed;
    int n = send_schedule(u);
    hb_mg_init(&g);
    while (im < u->nmpi || ir < u->nring) {
        int from_ring = ir < u->nring && (im == u->nmpi || rnd(u, 2));
        struct item *x = from_ring ? u->ring[ir++] : u->mpi[im++];
        if (!from_ring && x->resend)
            while (ir < u->nring) /* force the QP, drain the CQ */
                hb_mg_ring(&g, &u->ring[ir++]->it);
        if (x->it.kind == HB_MG_RING) {
            if (hb_mg_ring(&g, &x->it) && !x->resend)
                bad = 1; /* only a resend may be a duplicate */
        } else {
            hb_mg_pulled(&g, &x->it);
        }
        drain(&g, out, &nout, (int)rnd(u, 4));
    }
    drain(&g, out, &nout, MAXI);
    if (nout != n || !hb_mg_empty(&g))
        bad = 1;
    for (int i = 0; i < nout && !bad; i++)
        bad = out[i] != i;
    if (bad)
        fprintf(stderr, "seed %u: %d of %d released, empty %d\n", seed, nout, n,
                hb_mg_empty(&g));
    free(u);
    return bad;
}

int main(void)
{
    test_cases();
    test_sender();
    CHECK_SEEDS(random_run, 2000, "schedules (released out of order)");
    return check_failures;
}
