/* What point-to-point part 2 puts on the wire (P2P-DESIGN.md §5.5), in
 * one place: the ring record's header, the immediates, the in-band
 * messages on the application's communicator (tag T*), and the grant
 * handshake's messages on hotbuf's private communicator.  Fixed layouts,
 * sent as they are: every rank runs the same build on the same
 * architecture, as the rest of hotbuf assumes. */
#ifndef HOTBUF_P2P_WIRE_H
#define HOTBUF_P2P_WIRE_H

#include <stdint.h>

#include "p2p_names.h"
#include "p2p_slots.h"

/* ---- ring records: RDMA WRITE WITH IMMEDIATE into a slot -------------- */
enum { HB_RING_DATA = 1, HB_RING_DATA_SYNC = 2, HB_RING_DATA_RNDV = 3 };

struct hb_ring_hdr { /* HB_SLOT_HDR bytes, the payload follows */
    uint32_t cid;    /* the receiver's index of the communicator (GRANT) */
    int32_t src;     /* the sender's rank in it */
    int32_t tag;
    uint32_t nbytes;     /* payload */
    uint32_t rseq;       /* per (sender -> receiver), all communicators */
    uint32_t mpi_before; /* MPI data on this communicator since the first
                            marker (p2p_pair.h) */
    uint16_t type;       /* HB_RING_DATA* */
    uint16_t zcopy;      /* payload gathered from the user buffer */
    uint32_t sreq;       /* echoed in SYNC_ACK */
};
_Static_assert(sizeof(struct hb_ring_hdr) == HB_SLOT_HDR, "ring header");

/* A DATA_RNDV record's payload (p2p_rndv.c): where the receiver reads the
 * message from (nbytes of the header).  The region stays registered and
 * the buffer untouched until the record's SYNC_ACK, sent after the read.
 * A RESEND of such a record carries the message itself instead. */
struct hb_rndv_desc {
    uint64_t addr;
    uint32_t rkey;
    uint32_t pad;
};

/* The immediate's 28 bits of class HB_IMM_CLASS_P2P (rdma.h):
 *   [27:25] kind   [24:22] bucket   [21:0] slot (DATA) or sync id (SYNC:
 *   a SYNC_ACK, p2p_sync.c)
 *   CREDIT: [21:20] the channel's epoch (low bits)   [19:0] count
 * A receiver frees a revoked channel and a later grant makes a new one
 * (new epoch); a credit of the old one that the sender takes late must not
 * count for the new one's slots.  A SYNC_ACK needs no epoch: its id names
 * a send of the sender's, whichever region carried the record. */
enum { HB_IMM_P2P_DATA = 1, HB_IMM_P2P_CREDIT = 2, HB_IMM_P2P_SYNC = 3 };
#define HB_P2P_IMM(kind, bucket, n)                                            \
    (((uint32_t)(kind) << 25) | ((uint32_t)(bucket) << 22) |                   \
     ((uint32_t)(n)&0x3fffffu))
#define HB_P2P_IMM_KIND(b) (((b) >> 25) & 7u)
#define HB_P2P_IMM_BUCKET(b) (((b) >> 22) & 7u)
#define HB_P2P_IMM_N(b) ((b)&0x3fffffu)
#define HB_P2P_IMM_N_MAX 0x3fffffu
#define HB_P2P_CREDIT(bucket, epoch, n)                                        \
    HB_P2P_IMM(HB_IMM_P2P_CREDIT, bucket,                                      \
               (((uint32_t)(epoch)&3u) << 20) | ((uint32_t)(n)&0xfffffu))
#define HB_P2P_CREDIT_EPOCH(b) (((b) >> 20) & 3u)
#define HB_P2P_CREDIT_N(b) ((b)&0xfffffu)
#define HB_P2P_CREDIT_N_MAX 0xfffffu

/* ---- in-band on the application's communicator, tag T* ----------------
 * MARKER: 16 bytes.  RESEND: this prefix, then the record (header and
 * payload) that may not have been placed (§5.11).  CLOSE: 16 bytes, the
 * sender's last message on a communicator it frees, to each receiver it
 * wrote a ring record to there (p2p_comm.c, "closing"). */
enum { HB_INBAND_MARKER = 1, HB_INBAND_RESEND = 2, HB_INBAND_CLOSE = 3 };
struct hb_inband {
    uint64_t nonce; /* the job's (agreed at start): a stray T* is not ours */
    uint32_t kind;  /* HB_INBAND_* */
    uint32_t k;     /* MARKER: rseq of the sender's last ring record on c */
};

/* ---- the grant handshake, on hotbuf's private communicator ------------
 * REVOKE (receiver -> sender, token = the sender's pair): the pair goes
 * back to MPI.  REVOKED (sender -> receiver, the answer, always sent, even
 * for a pair the sender freed): rseq = the last record the sender wrote
 * on its channel to the receiver, every one of them completed (placed) or
 * resent by MPI; once the receiver has taken them all and no pair of the
 * sender is live, it frees the channel (p2p_revoke.c).  SYNC_ACK (receiver
 * -> sender, token = the sync id): a synchronous send's record was matched,
 * sent by MPI when RDMA cannot carry it (p2p_sync.c). */
enum {
    HB_CTRL_REQ = 1,
    HB_CTRL_GRANT = 2,
    HB_CTRL_REFUSE = 3,
    HB_CTRL_REVOKE = 4,
    HB_CTRL_REVOKED = 5,
    HB_CTRL_SYNC_ACK = 6,
    /* A to B, for a GRANT that came after A's free of c: no CLOSE follows
     * it (p2p_comm.c, "closing") */
    HB_CTRL_GONE = 7
};

struct hb_ctrl {
    uint32_t kind;  /* HB_CTRL_* */
    uint32_t token; /* the sender's pair id, echoed in GRANT/REFUSE */
    struct hb_p2p_name_claim claim; /* REQ, GRANT: the communicator */
    /* REQ: where the receiver writes credits (zero-length immediates) */
    uint64_t ack_addr;
    uint32_t ack_rkey;
    /* GRANT: the receiver's channel for this sender */
    uint32_t cid, rkey;
    uint32_t max_msg;
    uint64_t region, budget;
    uint64_t host;  /* REQ: the sender's host (hb_host_hash) */
    int32_t why;    /* REFUSE: enum hb_p2p_refusal */
    uint32_t epoch; /* GRANT: the channel's generation (credits carry it) */
    uint32_t rseq;  /* REVOKED: the sender's last record to the receiver */
    uint32_t uses;  /* REQ: the hot buffer's uses so far (0: persistent) */
    uint32_t bytes; /* REQ: its message size */
    uint32_t sends; /* REQ: the sender's sends to the receiver on c */
};

#endif
