/* Bucketed receive slots and their credits (see p2p_slots.h). */
#include "p2p_slots.h"

#include <string.h>

static uint32_t stride_of(uint32_t cap)
{
    return (HB_SLOT_HDR + cap + 63u) & ~63u;
}

/* Capacities 256 B, 1 KiB, 4 KiB, ... below max_msg, then max_msg itself
 * (no slot larger than the largest message). */
static int capacities(uint32_t *cap, uint32_t max_msg)
{
    int n = 0;
    uint32_t c = HB_SLOT_MIN;
    while (c < max_msg && n < HB_SLOT_BUCKETS - 1) {
        cap[n++] = c;
        c *= 4;
    }
    cap[n++] = max_msg > HB_SLOT_MIN ? max_msg : HB_SLOT_MIN;
    return n;
}

/* Two slots per bucket first, so a sender can write the next record of a
 * size while the receiver still holds the last one (with one slot, every
 * other large message of a halo exchange waited for its credit and went
 * by MPI), then equal shares of what is left. */
int hb_slot_layout_make(struct hb_slot_layout *l, uint64_t budget,
                        uint32_t max_msg)
{
    uint64_t base = 0;
    memset(l, 0, sizeof(*l));
    l->nbuckets = capacities(l->cap, max_msg);
    for (int b = 0; b < l->nbuckets; b++) {
        l->stride[b] = stride_of(l->cap[b]);
        base += 2ull * l->stride[b];
    }
    int two = base <= budget;
    uint64_t share = (budget - (two ? base : 0)) / (uint64_t)l->nbuckets;
    for (int b = 0; b < l->nbuckets; b++) {
        uint64_t n = (two ? 2 : 0) + share / l->stride[b];
        if (!n || n > UINT32_MAX)
            return -1;
        l->count[b] = (uint32_t)n;
        l->offset[b] = l->bytes;
        l->bytes += n * l->stride[b];
    }
    return 0;
}

void hb_slot_tx_init(struct hb_slot_tx *tx, const struct hb_slot_layout *l)
{
    memset(tx, 0, sizeof(*tx));
    tx->l = l;
}

int hb_slot_tx_take(struct hb_slot_tx *tx, uint32_t bytes, int *bucket,
                    uint64_t *offset)
{
    const struct hb_slot_layout *l = tx->l;
    for (int b = 0; b < l->nbuckets; b++) {
        if (l->cap[b] < bytes || tx->taken[b] - tx->freed[b] >= l->count[b])
            continue;
        *bucket = b;
        *offset = l->offset[b] + (tx->taken[b] % l->count[b]) * l->stride[b];
        tx->taken[b]++;
        return 0;
    }
    return -1;
}

void hb_slot_tx_credit(struct hb_slot_tx *tx, int bucket, uint64_t freed)
{
    if (freed > tx->freed[bucket] && freed <= tx->taken[bucket])
        tx->freed[bucket] = freed;
}

void hb_slot_rx_init(struct hb_slot_rx *rx, const struct hb_slot_layout *l)
{
    memset(rx, 0, sizeof(*rx));
    rx->l = l;
}

int hb_slot_rx_locate(const struct hb_slot_rx *rx, uint64_t offset, int *bucket)
{
    const struct hb_slot_layout *l = rx->l;
    for (int b = 0; b < l->nbuckets; b++) {
        uint64_t end = l->offset[b] + (uint64_t)l->count[b] * l->stride[b];
        if (offset < l->offset[b] || offset >= end)
            continue;
        if ((offset - l->offset[b]) % l->stride[b])
            return -1;
        *bucket = b;
        return 0;
    }
    return -1;
}

void hb_slot_rx_free(struct hb_slot_rx *rx, int bucket, uint32_t bytes)
{
    rx->freed[bucket]++;
    rx->msg_bytes[bucket] += bytes;
}

int hb_slot_rx_credit_due(struct hb_slot_rx *rx, int bucket, uint64_t *freed)
{
    uint64_t pending = rx->freed[bucket] - rx->credited[bucket];
    uint64_t due =
        rx->hold ? rx->l->count[bucket] : (rx->l->count[bucket] + 1) / 2;
    if (!pending || pending < due)
        return 0;
    *freed = rx->credited[bucket] = rx->freed[bucket];
    return 1;
}

double hb_slot_rx_utilization(const struct hb_slot_rx *rx, int bucket)
{
    uint64_t n = rx->freed[bucket];
    if (!n)
        return 0.0;
    return 100.0 * (double)rx->msg_bytes[bucket] /
           ((double)n * rx->l->cap[bucket]);
}
