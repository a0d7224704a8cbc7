/* Unit tests for the bucketed receive slots and credits
 * (shim/p2p/p2p_slots.c): the layout within the budget, the smallest
 * fitting bucket, then random traffic where the receiver frees slots in
 * arrival order and its credits reach the sender late and out of order.
 * A model of the region records which slot holds a record not yet copied
 * out: the sender must never write into one (receiver-not-ready or
 * overwritten data), every record must be found by its offset, and the
 * utilization must be the bytes carried over the capacity used. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "p2p/p2p_slots.h"

static void test_layout(void)
{
    struct hb_slot_layout l;
    CHECK(hb_slot_layout_make(&l, 64 << 10, 8192) == 0);
    CHECK(l.nbuckets == 4);
    CHECK(l.cap[0] == 256 && l.cap[1] == 1024 && l.cap[2] == 4096 &&
          l.cap[3] == 8192);
    CHECK(l.bytes <= 64 << 10);
    for (int b = 0; b < l.nbuckets; b++) {
        CHECK(l.count[b] >= 1);
        CHECK(l.stride[b] % 64 == 0 && l.stride[b] >= l.cap[b] + HB_SLOT_HDR);
        if (b)
            CHECK(l.offset[b] ==
                  l.offset[b - 1] + (uint64_t)l.count[b - 1] * l.stride[b - 1]);
    }
    CHECK(l.count[0] > 8 * l.count[3]); /* small slots are many */
    CHECK(hb_slot_layout_make(&l, 4096, 8192) == -1);
    CHECK(hb_slot_layout_make(&l, 64 << 10, 100) == 0 && l.nbuckets == 1 &&
          l.cap[0] == 256);

    struct hb_slot_tx tx;
    int b;
    uint64_t off;
    CHECK(hb_slot_layout_make(&l, 64 << 10, 8192) == 0);
    hb_slot_tx_init(&tx, &l);
    CHECK(hb_slot_tx_take(&tx, 200, &b, &off) == 0 && b == 0 && off == 0);
    CHECK(hb_slot_tx_take(&tx, 1024, &b, &off) == 0 && b == 1);
    CHECK(hb_slot_tx_take(&tx, 1025, &b, &off) == 0 && b == 2);
    CHECK(hb_slot_tx_take(&tx, 8193, &b, &off) == -1); /* too large */
    /* a full bucket spills into the next larger one, then MPI */
    for (uint32_t i = 1; i < l.count[3]; i++)
        CHECK(hb_slot_tx_take(&tx, 8000, &b, &off) == 0 && b == 3);
    CHECK(hb_slot_tx_take(&tx, 8000, &b, &off) == 0 && b == 3);
    CHECK(hb_slot_tx_take(&tx, 8000, &b, &off) == -1);
}

#define MAXREC 4096

struct credit {
    int bucket;
    uint64_t freed;
};

static unsigned rnd(unsigned *s, unsigned n)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) % n;
}

static int random_run(unsigned seed)
{
    struct hb_slot_layout l;
    struct hb_slot_tx tx;
    struct hb_slot_rx rx;
    unsigned s = seed;
    uint64_t budget = (8 + rnd(&s, 120)) << 10;
    uint32_t max_msg = 256u << rnd(&s, 6);
    if (hb_slot_layout_make(&l, budget, max_msg))
        return 0; /* too small a budget: the pair stays on MPI */
    hb_slot_tx_init(&tx, &l);
    hb_slot_rx_init(&rx, &l);
    rx.hold = (int)rnd(&s, 2); /* the test switch: credits when all free */
    char *busy = calloc(l.bytes, 1); /* a record sits at this offset */
    uint64_t off[MAXREC];
    uint32_t len[MAXREC];
    struct credit wire[MAXREC];
    int nrec = 0, head = 0, nwire = 0, bad = 0, mpi = 0;
    uint64_t bytes_by[HB_SLOT_BUCKETS] = {0}, n_by[HB_SLOT_BUCKETS] = {0};
    for (int step = 0; step < 20000 && !bad; step++) {
        unsigned what = rnd(&s, 10);
        if (what < 5 && nrec < MAXREC) { /* a send */
            uint32_t n = 1 + rnd(&s, max_msg + 64);
            int b;
            uint64_t o;
            if (hb_slot_tx_take(&tx, n, &b, &o)) {
                mpi++;
                continue;
            }
            if (n > l.cap[b] || busy[o])
                bad = 1; /* too small a slot, or an overrun */
            busy[o] = 1, off[nrec] = o, len[nrec++] = n;
        } else if (what < 8 && head < nrec) { /* a completion, in order */
            int b = 0;
            if (hb_slot_rx_locate(&rx, off[head], &b) || !busy[off[head]])
                bad = 1;
            busy[off[head]] = 0;
            hb_slot_rx_free(&rx, b, len[head]);
            bytes_by[b] += len[head], n_by[b]++;
            head++;
            uint64_t f;
            if (hb_slot_rx_credit_due(&rx, b, &f))
                wire[nwire++] = (struct credit){b, f};
        } else if (nwire) { /* a credit arrives, maybe not the oldest */
            int i = (int)rnd(&s, (unsigned)nwire);
            hb_slot_tx_credit(&tx, wire[i].bucket, wire[i].freed);
            wire[i] = wire[--nwire];
        }
    }
    for (int b = 0; b < l.nbuckets && !bad; b++) {
        double want = n_by[b] ? 100.0 * bytes_by[b] / (n_by[b] * l.cap[b]) : 0;
        double got = hb_slot_rx_utilization(&rx, b);
        bad = got < want - 1e-9 || got > want + 1e-9;
    }
    if (bad || !mpi)
        fprintf(stderr, "seed %u: bad %d, %d sends went by MPI\n", seed, bad,
                mpi);
    free(busy);
    return bad || !mpi; /* credits must run out sometimes */
}

int main(void)
{
    test_layout();
    CHECK_SEEDS(random_run, 200, "traffic runs");
    return check_failures;
}
