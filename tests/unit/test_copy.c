/* Unit tests for hotbuf's data copy (shim/util/copy.c): both routines copy
 * exactly the bytes asked for at every size around the piece boundaries
 * and at unaligned addresses, never a byte beside them; the choice rule
 * (pieces only at half memcpy's time or less); the probe measures both;
 * the timer copies by the routine asked for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/copy.h"

#define AREA (3 * 65536 + 64)

/* dst[off, off+n) must hold src[soff, soff+n), everything else its fill. */
static int copied_exactly(const unsigned char *dst, const unsigned char *src,
                          size_t off, size_t soff, size_t n)
{
    for (size_t i = 0; i < AREA; i++) {
        unsigned char want =
            i >= off && i < off + n ? src[soff + i - off] : 0xa5;
        if (dst[i] != want)
            return 0;
    }
    return 1;
}

static void test_routine(enum hb_copy_routine r)
{
    static const size_t sizes[] = {0,     1,     63,     4095,  4096,
                                   4097,  8191,  8192,   8193,  12289,
                                   65536, 65537, 131071, 196608};
    unsigned char *src = malloc(AREA), *dst = malloc(AREA);
    CHECK(src && dst);
    if (!src || !dst)
        return;
    for (size_t i = 0; i < AREA; i++)
        src[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
    hb_copy_use(r);
    CHECK(hb_copy_in_use() == r);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        for (size_t off = 0; off < 3; off++) {
            size_t n = sizes[s], doff = off * 13, soff = off * 7 + 1;
            memset(dst, 0xa5, AREA);
            hb_copy(dst + doff, src + soff, n);
            if (!copied_exactly(dst, src, doff, soff, n)) {
                fprintf(stderr, "%s: %zu bytes at +%zu from +%zu wrong\n",
                        hb_copy_routine_name(r), n, doff, soff);
                CHECK(0);
            }
        }
    free(src);
    free(dst);
}

static void test_pick(void)
{
    struct hb_copy_probe p = {.memcpy_ns = 128000, .pieces_ns = 21000};
    CHECK(hb_copy_pick(&p) == HB_COPY_PIECES); /* the emulator's figures */
    p.pieces_ns = 64000;
    CHECK(hb_copy_pick(&p) == HB_COPY_PIECES); /* exactly half */
    p.pieces_ns = 64001;
    CHECK(hb_copy_pick(&p) == HB_COPY_MEMCPY);
    p = (struct hb_copy_probe){.memcpy_ns = 1300, .pieces_ns = 1500};
    CHECK(hb_copy_pick(&p) == HB_COPY_MEMCPY); /* a CPU with fast rep movsb */
    p = (struct hb_copy_probe){.memcpy_ns = 1000, .pieces_ns = 0};
    CHECK(hb_copy_pick(&p) == HB_COPY_MEMCPY); /* no timing: the default */
    CHECK_STR(hb_copy_routine_name(HB_COPY_MEMCPY), "memcpy");
    CHECK_STR(hb_copy_routine_name(HB_COPY_PIECES), "pieces");
}

static void test_probe(void)
{
    struct hb_copy_probe p = {0, 0};
    CHECK(hb_copy_probe(&p) == 0);
    CHECK(p.memcpy_ns > 0 && p.memcpy_ns < 1e9);
    CHECK(p.pieces_ns > 0 && p.pieces_ns < 1e9);
    printf("64 KiB: memcpy %.0f ns, pieces %.0f ns: %s\n", p.memcpy_ns,
           p.pieces_ns, hb_copy_routine_name(hb_copy_pick(&p)));
}

/* The timer copies exactly the bytes given, with either routine asked
 * for (both give the same bytes, so this cannot tell which one ran), and
 * leaves the routine in use alone (the cost model times memcpy at any
 * time, whatever hotbuf's copies use). */
static void test_time(void)
{
    for (int r = HB_COPY_MEMCPY; r <= HB_COPY_PIECES; r++) {
        static unsigned char src[AREA], dst[AREA];
        memset(src, 0x3c, sizeof src);
        memset(dst, 0xa5, sizeof dst);
        hb_copy_use(HB_COPY_MEMCPY);
        double ns =
            hb_copy_time_ns((enum hb_copy_routine)r, dst + 1, src, 9000, 3);
        CHECK(ns > 0 && ns < 1e9);
        CHECK(copied_exactly(dst, src, 1, 0, 9000));
        CHECK(hb_copy_in_use() == HB_COPY_MEMCPY);
    }
}

int main(void)
{
    CHECK(hb_copy_in_use() == HB_COPY_MEMCPY); /* before any choice */
    test_routine(HB_COPY_MEMCPY);
    test_routine(HB_COPY_PIECES);
    test_pick();
    test_probe();
    test_time();
    return CHECK_DONE();
}
