/* The receive slots of one point-to-point channel, bucketed by size, and
 * the credits that keep the sender from overrunning them (issue 13 item 2;
 * Shipman et al.'s bucketed receive buffers, Nanri & Soga's on-demand
 * channels with every byte accounted), without MPI or verbs (unit test:
 * tests/unit/test_p2p_slots.c).
 *
 * A channel is one registered region at the receiver, charged to the
 * per-peer budget, cut into buckets of slots: slot capacities 256 B,
 * 1 KiB, 4 KiB, ... up to the largest message the ring carries, each slot
 * a header and its capacity, each bucket two slots (when the budget holds
 * them) and an equal share of the rest.  A small message takes a small
 * slot, so 64 KiB hold dozens of them instead of eight 8 KiB ones.
 *
 * Each bucket is a ring: the sender writes its slots in order (slot =
 * taken % count) and may take one while taken - freed < count; the
 * receiver copies every record out of its slot when the completion
 * arrives (into the matched receive, else into the unexpected store), so
 * slots come free in the order they were written, and a credit is just
 * the bucket's count of freed slots, sent back now and then.  The sender
 * takes the smallest bucket that fits and has a free slot, a larger one
 * when that bucket is full, and goes by MPI when none has room. */
#ifndef HOTBUF_P2P_SLOTS_H
#define HOTBUF_P2P_SLOTS_H

#include <stdint.h>

#define HB_SLOT_HDR 32    /* the ring record's header (P2P-DESIGN.md §5.5) */
#define HB_SLOT_MIN 256   /* smallest slot capacity */
#define HB_SLOT_BUCKETS 8 /* 256 B .. 32 KiB */

struct hb_slot_layout {
    int nbuckets;
    uint32_t cap[HB_SLOT_BUCKETS];    /* payload bytes a slot holds */
    uint32_t stride[HB_SLOT_BUCKETS]; /* header + cap, 64-byte aligned */
    uint32_t count[HB_SLOT_BUCKETS];  /* slots */
    uint64_t offset[HB_SLOT_BUCKETS]; /* of the bucket in the region */
    uint64_t bytes;                   /* the region: <= the budget */
};

/* Buckets for messages up to max_msg bytes within budget bytes: 0, or -1
 * when not even one slot of each size fits (the pair stays on MPI). */
int hb_slot_layout_make(struct hb_slot_layout *l, uint64_t budget,
                        uint32_t max_msg);

/* Sender side. */
struct hb_slot_tx {
    const struct hb_slot_layout *l;
    uint64_t taken[HB_SLOT_BUCKETS], freed[HB_SLOT_BUCKETS];
};

void hb_slot_tx_init(struct hb_slot_tx *tx, const struct hb_slot_layout *l);

/* A slot for a message of bytes: 0 with its bucket and its offset in the
 * region, or -1 (too large, or no credit: go by MPI). */
int hb_slot_tx_take(struct hb_slot_tx *tx, uint32_t bytes, int *bucket,
                    uint64_t *offset);

/* A credit from the receiver: the bucket's slots freed so far (counts
 * only grow; an older credit arriving late changes nothing). */
void hb_slot_tx_credit(struct hb_slot_tx *tx, int bucket, uint64_t freed);

/* Receiver side: frees, credits to send, and the utilization report. */
struct hb_slot_rx {
    const struct hb_slot_layout *l;
    uint64_t freed[HB_SLOT_BUCKETS];
    uint64_t credited[HB_SLOT_BUCKETS]; /* last value sent back */
    uint64_t msg_bytes[HB_SLOT_BUCKETS];
    int hold; /* test switch: credit only once every slot is free */
};

void hb_slot_rx_init(struct hb_slot_rx *rx, const struct hb_slot_layout *l);

/* The bucket and slot a record landed in (from its offset), or -1 for an
 * offset that names no slot start (a corrupt record: fail the pair). */
int hb_slot_rx_locate(const struct hb_slot_rx *rx, uint64_t offset,
                      int *bucket);

/* A record of bytes was copied out of its slot in bucket: the slot is free. */
void hb_slot_rx_free(struct hb_slot_rx *rx, int bucket, uint32_t bytes);

/* Whether bucket's credit is worth sending now (half its slots or more
 * freed since the last credit; all of them under hold), and the value to
 * send; marks it sent. */
int hb_slot_rx_credit_due(struct hb_slot_rx *rx, int bucket, uint64_t *freed);

/* Message bytes / slot capacity bytes of the slots freed in bucket, in
 * percent (0 when none was used). */
double hb_slot_rx_utilization(const struct hb_slot_rx *rx, int bucket);

#endif
