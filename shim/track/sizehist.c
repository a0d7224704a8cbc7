/* Calls per exact size (see sizehist.h). */
#include "sizehist.h"

#define GOLDEN 0x61C8864680B583EBull

static uint32_t slot_of(uint64_t size)
{
    return (uint32_t)((size * GOLDEN) >> 40) & (HB_SIZE_SLOTS - 1);
}

void hb_size_hist_add(struct hb_size_hist *h, uint64_t size, uint64_t calls)
{
    if (!calls)
        return;
    for (uint32_t i = slot_of(size);; i = (i + 1) & (HB_SIZE_SLOTS - 1)) {
        struct hb_size_count *s = &h->slot[i];
        if (s->calls && s->size == size) {
            s->calls += calls;
            return;
        }
        if (s->calls)
            continue;
        if (h->distinct ==
            HB_SIZES_EXACT) { /* full: first come keep their place */
            h->other_calls += calls;
            return;
        }
        *s = (struct hb_size_count){size, calls};
        h->distinct++;
        return;
    }
}

static int before(uint64_t size_a, uint64_t calls_a, uint64_t size_b,
                  uint64_t calls_b)
{
    return calls_a != calls_b ? calls_a > calls_b : size_a < size_b;
}

void hb_size_hist_top(const struct hb_size_hist *h, uint64_t *size,
                      uint64_t *calls, int n)
{
    if (n <= 0)
        return;
    for (int k = 0; k < n; k++)
        size[k] = calls[k] = 0;
    for (uint32_t i = 0; i < HB_SIZE_SLOTS; i++) {
        const struct hb_size_count *s = &h->slot[i];
        if (!s->calls || (calls[n - 1] && !before(s->size, s->calls,
                                                  size[n - 1], calls[n - 1])))
            continue;
        int k = n - 1; /* insertion into the sorted list, dropping the last */
        for (; k > 0 && (!calls[k - 1] ||
                         before(s->size, s->calls, size[k - 1], calls[k - 1]));
             k--) {
            size[k] = size[k - 1];
            calls[k] = calls[k - 1];
        }
        size[k] = s->size;
        calls[k] = s->calls;
    }
}
