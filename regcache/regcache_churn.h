/* Which buffers' registrations do not last: a buffer in memory that is
 * unmapped and mapped again between uses (mmap/munmap per message, or a
 * large malloc/free that glibc serves by mmap) gets the same address each
 * time, so the reuse table counts it as reused, but every use finds its
 * registration invalidated and pays a new one, plus the deregistration
 * and the memory monitor's round trip at the unmap.  For a rendezvous of
 * 16 KiB that made hotbuf 4-8 times slower than MPI's copy.
 *
 * The caller asks before registering (hb_churn_try) and tells after
 * (hb_churn_note) which registration it got, by serial
 * (hb_region_serial) and length: a new serial where the last
 * registration of that address stood means that one did not last,
 * unless the new one is longer (the cache merged the old one into it for
 * a longer use of the same buffer: growth, not loss).  Each time it did
 * not last
 * the address is skipped for 4^(level+1) more tries (the caller takes
 * its unregistered path: MPI, or a bounce buffer), level growing up to
 * HB_CHURN_MAX_LEVEL; a registration found still standing resets it.
 * So memory that always churns costs a registration after 16, 64, 256
 * and then every 1024 tries (five in the first thousand messages), and
 * memory that churned once is skipped for 16 messages only.
 *
 * A direct-mapped table of HB_CHURN_SLOTS addresses: a collision forgets
 * an address (it starts over at level 0), which costs at most the
 * registrations the table would have saved.  Not thread-safe: the caller
 * serializes. */
#ifndef HOTBUF_REGCACHE_CHURN_H
#define HOTBUF_REGCACHE_CHURN_H

#include <stdint.h>

#define HB_CHURN_BITS 8
#define HB_CHURN_SLOTS (1u << HB_CHURN_BITS)
#define HB_CHURN_MAX_LEVEL 4 /* skip at most 4^5 = 1024 tries */

struct hb_churn_slot {
    uintptr_t addr;  /* 0: empty */
    uint64_t serial; /* of the registration last noted at addr */
    uint64_t len;    /* ... and its length */
    uint32_t skip;   /* tries still to skip */
    uint32_t level;  /* registrations in a row that did not last */
};

struct hb_churn {
    struct hb_churn_slot slot[HB_CHURN_SLOTS];
};

/* 1: register addr's buffer now; 0: skip it this time (its registrations
 * have not lasted; counts one try down). */
int hb_churn_try(struct hb_churn *c, const void *addr);

/* addr's buffer was registered (or found registered) as serial, a
 * registration of len bytes. */
void hb_churn_note(struct hb_churn *c, const void *addr, uint64_t serial,
                   uint64_t len);

#endif
