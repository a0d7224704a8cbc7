/* Buffers whose registrations do not last (see regcache_churn.h). */
#include "regcache_churn.h"

#include "util/hash.h"

static struct hb_churn_slot *slot_of(struct hb_churn *c, const void *addr)
{
    return &c->slot[hb_hash_golden((uintptr_t)addr, HB_CHURN_BITS)];
}

int hb_churn_try(struct hb_churn *c, const void *addr)
{
    struct hb_churn_slot *s = slot_of(c, addr);
    if (s->addr != (uintptr_t)addr || !s->skip)
        return 1;
    s->skip--;
    return 0;
}

void hb_churn_note(struct hb_churn *c, const void *addr, uint64_t serial,
                   uint64_t len)
{
    struct hb_churn_slot *s = slot_of(c, addr);
    if (s->addr != (uintptr_t)addr) { /* first seen, or pushed out */
        *s = (struct hb_churn_slot){(uintptr_t)addr, serial, len, 0, 0};
        return;
    }
    if (s->serial == serial) { /* still the same registration: it lasts */
        s->level = 0;
        return;
    }
    int grown = len > s->len; /* merged into a longer one, or a new size */
    s->serial = serial;
    s->len = len;
    if (grown)
        return;
    if (s->level < HB_CHURN_MAX_LEVEL)
        s->level++;
    s->skip = 1u << (2 * (s->level + 1));
}
