/* Call-site table (see callsite.h). */
#include "callsite.h"

#include <stdlib.h>
#include <string.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "util/hash.h"

int hb_sites_init(struct hb_sites *s, int depth, uint32_t max_sites)
{
    memset(s, 0, sizeof(*s));
    if (max_sites > 65535)
        max_sites = 65535; /* ids are 16 bits in the reuse table's entries */
    uint32_t slots = 16;
    while (slots < 2 * max_sites)
        slots <<= 1;
    s->site = calloc(max_sites + 1, sizeof(*s->site));
    s->index = calloc(slots, sizeof(*s->index));
    if (!s->site || !s->index) {
        hb_sites_destroy(s);
        return -1;
    }
    s->mask = slots - 1;
    s->max = max_sites + 1;
    s->count = 1; /* id 0 is <other> */
    s->depth = depth;
    return 0;
}

void hb_sites_destroy(struct hb_sites *s)
{
    free(s->site);
    free(s->index);
    memset(s, 0, sizeof(*s));
}

/* Fills frames[] with up to depth return addresses starting at ret.  Frames
 * inside hotbuf (this function, the tracker, the wrapper) are dropped by
 * looking for ret itself, which survives any inlining. */
static int capture(uintptr_t *frames, int depth, void *ret)
{
    void *raw[HB_MAX_DEPTH + 8];
    int n = unw_backtrace(raw, HB_MAX_DEPTH + 8);
    int start = 0;
    while (start < n && raw[start] != ret)
        start++;
    if (start == n) { /* not found (no unwind info): the caller alone */
        frames[0] = (uintptr_t)ret;
        return 1;
    }
    int k = 0;
    for (; k < depth && start + k < n; k++)
        frames[k] = (uintptr_t)raw[start + k];
    return k;
}

static uint64_t hash_frames(const uintptr_t *frames, int n)
{
    uint64_t h = 0;
    for (int i = 0; i < n; i++)
        h = (h ^ frames[i]) * HB_GOLDEN_RATIO_64;
    return h ? h : 1;
}

static uint16_t add_site(struct hb_sites *s, uint32_t slot, uint64_t key,
                         const uintptr_t *frames, int n, unsigned op)
{
    if (s->count == s->max)
        return HB_SITE_OTHER;
    uint32_t id = s->count++;
    struct hb_site *site = &s->site[id];
    site->key = key;
    memcpy(site->frames, frames, n * sizeof(*frames));
    site->depth = (uint8_t)n;
    site->op = (uint8_t)op;
    s->index[slot] = (struct hb_site_slot){key, id};
    return (uint16_t)id;
}

uint16_t hb_sites_lookup_slow(struct hb_sites *s, void *ret, unsigned op)
{
    uintptr_t frames[HB_MAX_DEPTH];
    int n = 1;
    uint64_t key;
    if (s->depth <= 1) {
        frames[0] = (uintptr_t)ret;
        key = (uint64_t)(uintptr_t)ret;
    } else {
        n = capture(frames, s->depth, ret);
        key = hash_frames(frames, n);
    }
    uint32_t slot = hb_sites_slot(s, key);
    for (;;) {
        if (!s->index[slot].key)
            return add_site(s, slot, key, frames, n, op);
        if (s->index[slot].key == key)
            return (uint16_t)s->index[slot].id;
        slot = (slot + 1) & s->mask;
    }
}
