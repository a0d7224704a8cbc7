/* Unit tests for the memory-change monitor (regcache/memmon.c).
 *
 * Every scenario changes a watched range in one way -- directly (munmap,
 * mremap, madvise, sbrk, shmdt, mmap MAP_FIXED) or through glibc's
 * allocator, which uses its internal __munmap/__mremap/__madvise/brk that
 * symbol interposition cannot see -- and checks that the callback got a
 * range covering the change.  All scenarios run twice: monitor on, then
 * muted by the debug switch, where no callback may fire (the events are
 * still counted).  Then: unwatch and nested watches, ordering (the kernel
 * blocks the unmapping thread until the event is read; hb_memmon_sync_local
 * closes the read->callback window, hb_memmon_sync also the cross-thread
 * one), fork, a closed fd, an unprivileged process, start-up failures.
 *
 * A scenario that cannot run here prints "NOT APPLICABLE: <why>"; a known
 * limit of the mechanism prints "LIMIT: <why>".  Neither passes silently.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "regcache/memmon.h"
#include "check.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static size_t PG;

/* ---- callback recorder (wait-free, no allocation) -------------------- */

#define MAXREC 8192
static struct {
    uintptr_t lo, hi;
} rec[MAXREC];
static atomic_uint nrec;
static unsigned mark_at;
static int cb_ctx_ok = 1;
static int the_ctx;

static void test_cb(void *ctx, const void *addr, size_t len)
{
    unsigned i = atomic_fetch_add(&nrec, 1);

    if (ctx != &the_ctx)
        cb_ctx_ok = 0;
    if (i < MAXREC) {
        rec[i].lo = (uintptr_t)addr;
        rec[i].hi = (uintptr_t)addr + len;
    }
}

static void mark(void)
{
    mark_at = atomic_load(&nrec);
}
static unsigned since(void)
{
    return atomic_load(&nrec) - mark_at;
}

/* Some single callback since mark() covered [lo, hi). */
static int covered(uintptr_t lo, uintptr_t hi, uintptr_t *glo, uintptr_t *ghi)
{
    unsigned n = atomic_load(&nrec);

    for (unsigned i = mark_at; i < n && i < MAXREC; i++)
        if (rec[i].lo <= lo && rec[i].hi >= hi) {
            *glo = rec[i].lo;
            *ghi = rec[i].hi;
            return 1;
        }
    return 0;
}

/* Callbacks since mark() overlapping [lo, hi). */
static unsigned overlapping(uintptr_t lo, uintptr_t hi)
{
    unsigned n = atomic_load(&nrec), c = 0;

    for (unsigned i = mark_at; i < n && i < MAXREC; i++)
        c += rec[i].lo < hi && rec[i].hi > lo;
    return c;
}

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static char *map_anon(size_t len)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        perror("mmap");
        exit(99);
    }
    memset(p, 0x5a, len);
    return p;
}

static int is_mapped(void *p, size_t len)
{
    unsigned char v[64];

    return mincore(p, len, v) == 0 || errno != ENOMEM;
}

/* ---- scenarios --------------------------------------------------------
 * Each sets lo/hi to the range that must be covered (or must overlap,
 * if *overlap_ok), calls mark() right before the change, and returns 0,
 * or 1 after printing NOT APPLICABLE.  Cleanup (unwatch) happens after
 * the checks, in the caller, via the watched range returned in w_lo/w_len.
 */
struct run {
    uintptr_t lo, hi;   /* the change */
    int overlap_ok;     /* malloc_trim: where it trims is glibc's choice */
    const void *w_addr; /* watched, to unwatch afterwards */
    size_t w_len;
    void (*cleanup)(struct run *);
    void *p1, *p2;
    size_t l1, l2;
};

static int watch_or_die(const void *a, size_t l)
{
    int r = hb_memmon_watch(a, l);

    if (r) {
        fprintf(stderr, "hb_memmon_watch(%p, %zu) = %d (%s)\n", a, l, r,
                strerror(-r));
        CHECK(r == 0);
    }
    return r;
}

/* Watches [a, a+l) (to be unwatched by the caller after the checks) and
 * expects the change to cover [lo, hi). */
static void watch_expect(struct run *r, const void *a, size_t l, uintptr_t lo,
                         uintptr_t hi)
{
    watch_or_die(a, l);
    r->w_addr = a;
    r->w_len = l;
    r->lo = lo;
    r->hi = hi;
}

static int sc_munmap(struct run *r)
{
    char *p = map_anon(8 * PG);

    watch_expect(r, p + 2 * PG, 4 * PG, (uintptr_t)p + 2 * PG,
                 (uintptr_t)p + 6 * PG);
    mark();
    munmap(p, 8 * PG);
    return 0;
}

static int sc_mremap_move(struct run *r)
{
    char *p = map_anon(4 * PG);
    char *q = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *n;

    watch_expect(r, p, 4 * PG, (uintptr_t)p, (uintptr_t)p + 4 * PG);
    mark();
    n = mremap(p, 4 * PG, 4 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, q);
    CHECK(n == q);
    r->p1 = q;
    r->l1 = 4 * PG;
    return 0;
}

static int sc_mremap_grow_moves(struct run *r)
{
    /* Growth with a mapping right behind: the kernel must move it. */
    char *p = map_anon(4 * PG);
    char *g = mmap(p + 4 * PG, PG, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *n;

    if (g == MAP_FAILED && errno != EEXIST) {
        printf("  NOT APPLICABLE: cannot place a guard page: %s\n",
               strerror(errno));
        munmap(p, 4 * PG);
        return 1;
    }
    watch_expect(r, p, 4 * PG, (uintptr_t)p, (uintptr_t)p + 4 * PG);
    mark();
    n = mremap(p, 4 * PG, 16 * PG, MREMAP_MAYMOVE);
    CHECK(n != MAP_FAILED && n != p);
    r->p1 = n;
    r->l1 = 16 * PG;
    if (g != MAP_FAILED) {
        r->p2 = g;
        r->l2 = PG;
    }
    return 0;
}

static int sc_mremap_shrink(struct run *r)
{
    char *p = map_anon(8 * PG);
    char *n;

    watch_expect(r, p, 8 * PG, (uintptr_t)p + 3 * PG, (uintptr_t)p + 8 * PG);
    mark();
    n = mremap(p, 8 * PG, 3 * PG, 0);
    CHECK(n == p);
    r->p1 = p;
    r->l1 = 3 * PG;
    return 0;
}

static int sc_mmap_fixed(struct run *r)
{
    char *p = map_anon(4 * PG);
    char *n;

    watch_expect(r, p, 4 * PG, (uintptr_t)p + PG, (uintptr_t)p + 3 * PG);
    mark();
    n = mmap(p + PG, 2 * PG, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    CHECK(n == p + PG);
    r->p1 = p;
    r->l1 = 4 * PG;
    return 0;
}

static int madv(struct run *r, int advice)
{
    char *p = map_anon(4 * PG);

    if (hb_memmon_watch(p, 4 * PG) != 0) {
        printf("  NOT APPLICABLE: cannot watch anonymous memory here (%s)\n",
               hb_memmon_describe());
        munmap(p, 4 * PG);
        return 1;
    }
    r->w_addr = p;
    r->w_len = 4 * PG;
    r->lo = (uintptr_t)p + PG;
    r->hi = (uintptr_t)p + 3 * PG;
    mark();
    CHECK(madvise(p + PG, 2 * PG, advice) == 0);
    r->p1 = p;
    r->l1 = 4 * PG;
    return 0;
}

static int sc_madv_dontneed(struct run *r)
{
    return madv(r, MADV_DONTNEED);
}
static int sc_madv_free(struct run *r)
{
    return madv(r, MADV_FREE);
}

static int sc_sbrk_shrink(struct run *r)
{
    size_t sz = 64 * PG;
    char *old = sbrk(0), *p;

    if ((uintptr_t)old & (PG - 1)) { /* align the break first */
        if (sbrk(PG - ((uintptr_t)old & (PG - 1))) == (void *)-1) {
            printf("  NOT APPLICABLE: sbrk: %s\n", strerror(errno));
            return 1;
        }
    }
    p = sbrk((intptr_t)sz);
    if (p == (void *)-1) {
        printf("  NOT APPLICABLE: sbrk: %s\n", strerror(errno));
        return 1;
    }
    memset(p, 0x5a, sz);
    watch_expect(r, p, sz, (uintptr_t)p + sz / 2, (uintptr_t)p + sz);
    mark();
    CHECK(sbrk(-(intptr_t)(sz / 2)) != (void *)-1);
    /* the other half goes back after the checks */
    r->p2 = p; /* marker: shrink the rest in cleanup */
    r->l2 = sz / 2;
    return 0;
}

static void cleanup_sbrk(struct run *r)
{
    if (r->p2)
        sbrk(-(intptr_t)r->l2);
    r->p2 = NULL;
}

static int shm_segment(size_t len, char **out)
{
    int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
    char *p;

    if (id < 0) {
        printf("  NOT APPLICABLE: shmget: %s\n", strerror(errno));
        return -1;
    }
    p = shmat(id, NULL, 0);
    shmctl(id, IPC_RMID, NULL); /* gone at the last detach */
    if (p == (void *)-1) {
        printf("  NOT APPLICABLE: shmat: %s\n", strerror(errno));
        return -1;
    }
    memset(p, 0x5a, len);
    *out = p;
    return id;
}

static int sc_shmdt(struct run *r)
{
    char *p;

    if (shm_segment(16 * PG, &p) < 0)
        return 1;
    /* SysV shm is shared memory, never watched (refusals below), so
     * never cached: its shmdt cannot leave a stale registration.  The
     * hook still reports; check that. */
    CHECK(hb_memmon_watch(p + 4 * PG, 4 * PG) == -EINVAL);
    r->lo = (uintptr_t)p;
    r->hi = (uintptr_t)p + 16 * PG;
    mark();
    CHECK(shmdt(p) == 0);
    return 0;
}

static int sc_shmat_remap(struct run *r)
{
    char *p = map_anon(16 * PG), *s;
    int id = shmget(IPC_PRIVATE, 16 * PG, IPC_CREAT | 0600);

    if (id < 0) {
        printf("  NOT APPLICABLE: shmget: %s\n", strerror(errno));
        munmap(p, 16 * PG);
        return 1;
    }
    watch_expect(r, p, 16 * PG, (uintptr_t)p, (uintptr_t)p + 16 * PG);
    mark();
    s = shmat(id, p, SHM_REMAP);
    shmctl(id, IPC_RMID, NULL);
    CHECK(s == p);
    r->p1 = s;
    return 0;
}

static void cleanup_shmat(struct run *r)
{
    if (r->p1)
        shmdt(r->p1);
    r->p1 = NULL;
}

static int sc_free_large(struct run *r)
{
    char *b = malloc(1 << 20);

    memset(b, 0x5a, 1 << 20);
    watch_expect(r, b, 1 << 20, (uintptr_t)b, (uintptr_t)b + (1 << 20));
    mark();
    free(b); /* glibc: munmap_chunk -> __munmap */
    return 0;
}

static int sc_realloc_grow(struct run *r)
{
    char *b = malloc(1 << 20), *g, *n;
    size_t usable = malloc_usable_size(b);

    memset(b, 0x5a, 1 << 20);
    /* The chunk's mapping ends at b + usable; occupy the next page so the
     * growth cannot happen in place (it may be occupied already). */
    g = mmap(b + usable, PG, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    watch_expect(r, b, 1 << 20, (uintptr_t)b, (uintptr_t)b + (1 << 20));
    mark();
    n = realloc(b, 4 << 20); /* glibc: mremap_chunk -> __mremap */
    CHECK(n != NULL);
    if (n == b)
        printf(
            "  NOT APPLICABLE: realloc grew the block in place (no change to report)\n");
    r->p1 = n;
    if (g != MAP_FAILED) {
        r->p2 = g;
        r->l2 = PG;
    }
    return n == b;
}

static void cleanup_malloc(struct run *r)
{
    free(r->p1);
    r->p1 = NULL;
}

static int sc_realloc_shrink(struct run *r)
{
    char *b = malloc(4 << 20), *n;

    memset(b, 0x5a, 4 << 20);
    watch_expect(r, b, 4 << 20, (uintptr_t)b + (1 << 20) + PG,
                 (uintptr_t)b + (4 << 20) -
                     PG); /* the tail beyond the new end */
    mark();
    n = realloc(b, 1 << 20); /* glibc: mremap_chunk shrinks in place */
    CHECK(n == b);
    r->p1 = n;
    return 0;
}

#define NSMALL 8192
#define SMALL 2000
static char *small[NSMALL + 1];

static int trim(struct run *r, int keep_last)
{
    uintptr_t lo, hi;
    int released;

    for (int i = 0; i <= NSMALL; i++) {
        small[i] = malloc(SMALL);
        memset(small[i], 0x5a, SMALL);
    }
    lo = ((uintptr_t)small[0] + PG - 1) & ~(PG - 1);
    hi = (uintptr_t)small[NSMALL - 1] & ~(PG - 1);
    if (hi <= lo + 16 * PG ||
        (uintptr_t)small[NSMALL - 1] < (uintptr_t)small[0]) {
        printf(
            "  NOT APPLICABLE: small blocks are not laid out contiguously\n");
        for (int i = 0; i <= NSMALL; i++)
            free(small[i]);
        return 1;
    }
    watch_expect(r, (void *)lo, hi - lo, lo, hi);
    r->overlap_ok = 1;
    for (int i = 0; i < NSMALL; i++)
        free(small[i]); /* M_TRIM_THRESHOLD is huge: free() never trims */
    if (!keep_last)
        free(small[NSMALL]);
    mark();
    released = malloc_trim(0); /* glibc: __madvise(DONTNEED) and/or sbrk(-n) */
    if (keep_last)
        r->p1 = small[NSMALL];
    if (!released) {
        printf("  NOT APPLICABLE: malloc_trim(0) returned no memory\n");
        return 1;
    }
    return 0;
}

static int sc_trim_madvise(struct run *r)
{
    return trim(r, 1);
}
static int sc_trim_top(struct run *r)
{
    return trim(r, 0);
}

struct scenario {
    const char *name;
    int (*run)(struct run *);
    void (*cleanup)(struct run *);
};

static const struct scenario scenarios[] = {
    {"munmap", sc_munmap, NULL},
    {"mremap move (MREMAP_FIXED)", sc_mremap_move, NULL},
    {"mremap grow, forced to move", sc_mremap_grow_moves, NULL},
    {"mremap shrink", sc_mremap_shrink, NULL},
    {"mmap MAP_FIXED over the range", sc_mmap_fixed, NULL},
    {"madvise MADV_DONTNEED", sc_madv_dontneed, NULL},
    {"madvise MADV_FREE", sc_madv_free, NULL},
    {"sbrk shrink", sc_sbrk_shrink, cleanup_sbrk},
    {"shmdt", sc_shmdt, NULL},
    {"shmat SHM_REMAP over the range", sc_shmat_remap, cleanup_shmat},
    {"free() of a 1 MiB malloc (glibc __munmap)", sc_free_large, NULL},
    {"realloc() 1 -> 4 MiB (glibc __mremap move)", sc_realloc_grow,
     cleanup_malloc},
    {"realloc() 4 -> 1 MiB (glibc __mremap shrink)", sc_realloc_shrink,
     cleanup_malloc},
    {"malloc_trim(0), interior pages (glibc __madvise)", sc_trim_madvise,
     cleanup_malloc},
    {"malloc_trim(0), heap top (glibc sbrk shrink)", sc_trim_top, NULL},
};
#define NSCEN (sizeof scenarios / sizeof scenarios[0])

static void run_scenarios(int muted)
{
    printf("== scenarios, monitor %s ==\n",
           muted ? "MUTED (debug switch)" : "on");
    hb_memmon_set_muted(muted);
    for (size_t i = 0; i < NSCEN; i++) {
        struct run r;
        struct hb_memmon_stats s0, s1;
        uintptr_t glo = 0, ghi = 0;
        unsigned got;

        memset(&r, 0, sizeof r);
        hb_memmon_stats(&s0);
        printf("%-50s", scenarios[i].name);
        fflush(stdout);
        if (scenarios[i].run(&r) != 0) {
            if (r.w_addr)
                hb_memmon_unwatch(r.w_addr, r.w_len);
            if (scenarios[i].cleanup)
                scenarios[i].cleanup(&r);
            continue;
        }
        hb_memmon_sync();
        got = since();
        hb_memmon_stats(&s1);
        if (!muted) {
            if (r.overlap_ok) {
                unsigned n = overlapping(r.lo, r.hi);
                printf(
                    " ok: %u callback(s) overlap the watched heap [%#lx, %#lx)\n",
                    n, (unsigned long)r.lo, (unsigned long)r.hi);
                CHECK(n > 0);
            } else if (covered(r.lo, r.hi, &glo, &ghi)) {
                printf(" ok: callback [%#lx, %#lx) covers [%#lx, %#lx)\n",
                       (unsigned long)glo, (unsigned long)ghi,
                       (unsigned long)r.lo, (unsigned long)r.hi);
            } else {
                printf(
                    " FAILED: no callback covers [%#lx, %#lx) (%u callbacks)\n",
                    (unsigned long)r.lo, (unsigned long)r.hi, got);
                CHECK(!"callback covering the change");
            }
        } else {
            printf(" %s: %u callback(s), %llu event(s) dropped\n",
                   got == 0 ? "ok" : "FAILED", got,
                   (unsigned long long)(s1.muted - s0.muted));
            CHECK_EQ_U64(got, 0);
            CHECK(s1.muted > s0.muted);
        }
        if (r.w_addr)
            hb_memmon_unwatch(r.w_addr, r.w_len);
        if (scenarios[i].cleanup)
            scenarios[i].cleanup(&r);
        if (r.p1 && !scenarios[i].cleanup)
            munmap(r.p1, r.l1);
        if (r.p2 && !scenarios[i].cleanup)
            munmap(r.p2, r.l2);
        else if (r.p2 && scenarios[i].cleanup == cleanup_malloc)
            munmap(r.p2, r.l2);
    }
    hb_memmon_set_muted(0);
}

/* ---- limits, printed --------------------------------------------------- */

static void limits(void)
{
    char *p;
    int id, r;
    struct hb_memmon_stats s0, s1;

    printf("== limits ==\n");
    /* raw shmat(SHM_REMAP) over a watched range: the hook is bypassed
     * and the kernel reports nothing */
    p = map_anon(4 * PG);
    id = shmget(IPC_PRIVATE, 4 * PG, IPC_CREAT | 0600);
    if (id >= 0 && hb_memmon_watch(p, 4 * PG) == 0) {
        hb_memmon_stats(&s0);
        mark();
        CHECK(syscall(SYS_shmat, id, p, SHM_REMAP) == (long)(uintptr_t)p);
        hb_memmon_sync_local();
        hb_memmon_stats(&s1);
        printf("LIMIT: raw syscall(SYS_shmat, SHM_REMAP) over a watched range "
               "bypasses the shmat() hook, and the kernel sends no event: %u "
               "callback(s)\n",
               since());
        hb_memmon_unwatch(p, 4 * PG);
        shmdt(p);
    } else {
        printf("  NOT APPLICABLE: raw shmat case: shmget or watch failed\n");
        munmap(p, 4 * PG);
    }
    if (id >= 0)
        shmctl(id, IPC_RMID, NULL);
    /* an unmapped range */
    p = map_anon(PG);
    munmap(p, PG);
    r = hb_memmon_watch(p, PG);
    printf("watching an unmapped range fails: %d (%s)\n", r, strerror(-r));
    CHECK(r < 0);
}

/* ---- which memory is watched ---------------------------------------- */

/* watch(p, len) == want, said in one line. */
static void refusal(const char *what, void *p, size_t len, int want)
{
    int r = hb_memmon_watch(p, len);

    printf("  %-52s %s\n", what, r == 0 ? "watched" : strerror(-r));
    CHECK(r == want);
    if (r == 0)
        hb_memmon_unwatch(p, len);
}

static char *map_fd(int fd, int flags)
{
    char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, flags, fd, 0);

    CHECK(p != MAP_FAILED);
    if (p != MAP_FAILED)
        memset(p, 0x5a, 4 * PG);
    return p;
}

/* Only private anonymous memory: the pages of shared or file-backed
 * memory can be replaced with no event in this process (a truncate or a
 * hole punched in the file, another process's MADV_REMOVE), and a pinned
 * registration would keep the old ones.  Watch must refuse those even
 * where the kernel could register them (shmem from Linux 5.19, any file
 * with WP_ASYNC from 6.7): hotbuf then leaves such buffers to MPI. */
static void watchable_tests(void)
{
    int fd = memfd_create("hb-memmon", MFD_CLOEXEC);
    int zero = open("/dev/zero", O_RDWR | O_CLOEXEC);
    char *p, *heap = malloc(64);

    printf("== which memory is watched ==\n");
    CHECK(fd >= 0 && ftruncate(fd, 4 * PG) == 0);
    refusal("private anonymous", p = map_anon(4 * PG), 4 * PG, 0);
    munmap(p, 4 * PG);
    refusal("the heap", heap, 64, 0);
    free(heap);
    refusal("/dev/zero, private", p = map_fd(zero, MAP_PRIVATE), 4 * PG, 0);
    munmap(p, 4 * PG);
    refusal("/dev/zero, shared", p = map_fd(zero, MAP_SHARED), 4 * PG, -EINVAL);
    munmap(p, 4 * PG);
    p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
             -1, 0);
    refusal("MAP_SHARED|MAP_ANONYMOUS", p, 4 * PG, -EINVAL);
    munmap(p, 4 * PG);
    refusal("memfd, shared", p = map_fd(fd, MAP_SHARED), 4 * PG, -EINVAL);
    munmap(p, 4 * PG);
    refusal("memfd, private (file-backed)", p = map_fd(fd, MAP_PRIVATE), 4 * PG,
            -EINVAL);
    munmap(p, 4 * PG);
    refusal("program text (file-backed)",
            (void *)((uintptr_t)&watchable_tests & ~(PG - 1)), PG, -EINVAL);
    if (shm_segment(4 * PG, &p) >= 0) {
        refusal("SysV shm", p, 4 * PG, -EINVAL);
        shmdt(p);
    }
    /* one range over both kinds: refused whole; its private part alone is
     * watched */
    p = map_anon(4 * PG);
    CHECK(mmap(p + 2 * PG, 2 * PG, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_FIXED, fd, 0) == p + 2 * PG);
    refusal("private anonymous, then memfd shared", p, 4 * PG, -EINVAL);
    refusal("  its private anonymous part", p, 2 * PG, 0);
    munmap(p, 4 * PG);
    /* a hole: a mapping placed there before the pinning would be pinned
     * unwatched */
    p = map_anon(4 * PG);
    munmap(p + PG, PG);
    refusal("private anonymous with a hole in it", p, 4 * PG, -EINVAL);
    munmap(p, 4 * PG);
    /* memory the MPI allocated (MPI_Win_allocate's): trusted while marked */
    p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
             -1, 0);
    CHECK(hb_memmon_trust(p, 2 * PG) == 0);
    refusal("MAP_SHARED|MAP_ANONYMOUS, trusted (the MPI's)", p, 2 * PG, 0);
    refusal("  and a range reaching past the trusted part", p, 4 * PG, -EINVAL);
    hb_memmon_untrust(p, 2 * PG);
    refusal("  no longer trusted", p, 2 * PG, -EINVAL);
    munmap(p, 4 * PG);
    CHECK(strstr(hb_memmon_describe(), "private anonymous") != NULL);
    close(zero);
    close(fd);
}

/* ---- unwatch, nesting ------------------------------------------------ */

static void unwatch_tests(void)
{
    struct hb_memmon_stats s0, s1;
    char *p = map_anon(4 * PG);

    printf("== unwatch ==\n");
    CHECK(hb_memmon_watch(p, 4 * PG) == 0);
    hb_memmon_unwatch(p, 4 * PG);
    hb_memmon_stats(&s0);
    mark();
    madvise(p, 4 * PG, MADV_DONTNEED);
    hb_memmon_sync_local();
    hb_memmon_stats(&s1);
    printf("after unwatch: %llu remove event(s) (want 0)\n",
           (unsigned long long)(s1.remove_events - s0.remove_events));
    CHECK_EQ_U64(s1.remove_events - s0.remove_events, 0);

    /* nested: A = pages 0-1, B = pages 1-2 */
    CHECK(hb_memmon_watch(p, 2 * PG) == 0);
    CHECK(hb_memmon_watch(p + PG, 2 * PG) == 0);
    hb_memmon_stats(&s0);
    CHECK_EQ_U64(s0.watched_bytes, 3 * PG);
    hb_memmon_unwatch(p, 2 * PG); /* page 1 still watched by B */
    hb_memmon_stats(&s0);
    CHECK_EQ_U64(s0.watched_bytes, 2 * PG);
    madvise(p, PG, MADV_DONTNEED);
    hb_memmon_sync_local();
    hb_memmon_stats(&s1);
    CHECK_EQ_U64(s1.remove_events - s0.remove_events, 0);
    madvise(p + PG, PG, MADV_DONTNEED);
    hb_memmon_sync_local();
    hb_memmon_stats(&s1);
    printf(
        "nested watches: page 0 unwatched (0 events), page 1 still watched (%llu event)\n",
        (unsigned long long)(s1.remove_events - s0.remove_events));
    CHECK_EQ_U64(s1.remove_events - s0.remove_events, 1);
    hb_memmon_unwatch(p + PG, 2 * PG);
    hb_memmon_stats(&s0);
    CHECK_EQ_U64(s0.watched_bytes, 0);

    /* unmapped pages: unwatch must not UNREGISTER (someone else's now) */
    CHECK(hb_memmon_watch(p, PG) == 0);
    munmap(p, 4 * PG);
    hb_memmon_sync_local();
    hb_memmon_stats(&s0);
    hb_memmon_unwatch(p, PG);
    hb_memmon_stats(&s1);
    printf("unwatch after munmap: %llu unregister, %llu skipped as dead\n",
           (unsigned long long)(s1.unregisters - s0.unregisters),
           (unsigned long long)(s1.dead_skips - s0.dead_skips));
    CHECK_EQ_U64(s1.unregisters - s0.unregisters, 0);
    CHECK_EQ_U64(s1.dead_skips - s0.dead_skips, 1);
}

/* Random nested watch/unwatch on 64 pages against a per-page model; the
 * kernel's view is probed with madvise(DONTNEED): an event iff watched. */
static void table_fuzz(void)
{
    enum { NP = 64, MAXW = 48, OPS = 3000 };
    char *p = map_anon(NP * PG);
    int cnt[NP] = {0};
    struct {
        int a, b;
    } w[MAXW];
    int nw = 0, bad_bytes = 0, bad_events = 0, probes = 0;
    unsigned seed = 42;

    printf("== nested watches, random ==\n");
    for (int op = 0; op < OPS; op++) {
        struct hb_memmon_stats s0, s1;
        uint64_t want = 0;
        int pg;

        if (nw < MAXW && (nw == 0 || rand_r(&seed) % 2)) {
            int a = rand_r(&seed) % NP, b = a + 1 + rand_r(&seed) % 8;
            if (b > NP)
                b = NP;
            /* unaligned byte ranges inside the pages, as buffers are */
            if (hb_memmon_watch(p + a * PG + 17, (size_t)(b - a) * PG - 40) !=
                0) {
                CHECK(!"watch in fuzz");
                continue;
            }
            w[nw].a = a;
            w[nw++].b = b;
            for (int i = a; i < b; i++)
                cnt[i]++;
        } else {
            int k = rand_r(&seed) % nw;
            hb_memmon_unwatch(p + w[k].a * PG + 17,
                              (size_t)(w[k].b - w[k].a) * PG - 40);
            for (int i = w[k].a; i < w[k].b; i++)
                cnt[i]--;
            w[k] = w[--nw];
        }
        for (int i = 0; i < NP; i++)
            want += cnt[i] > 0 ? PG : 0;
        hb_memmon_stats(&s0);
        bad_bytes += s0.watched_bytes != want;
        if (op % 10 == 0) {
            pg = rand_r(&seed) % NP;
            madvise(p + pg * PG, PG, MADV_DONTNEED);
            hb_memmon_sync();
            hb_memmon_stats(&s1);
            bad_events +=
                (s1.remove_events - s0.remove_events) != (cnt[pg] > 0);
            probes++;
        }
    }
    while (nw > 0) {
        nw--;
        hb_memmon_unwatch(p + w[nw].a * PG + 17,
                          (size_t)(w[nw].b - w[nw].a) * PG - 40);
    }
    {
        struct hb_memmon_stats s0;
        hb_memmon_stats(&s0);
        printf(
            "%d ops: watched-bytes mismatches %d, wrong kernel state in %d of %d probes, "
            "left watched %llu B\n",
            OPS, bad_bytes, bad_events, probes,
            (unsigned long long)s0.watched_bytes);
        CHECK_EQ_U64(s0.watched_bytes, 0);
    }
    CHECK_EQ_U64(bad_bytes, 0);
    CHECK_EQ_U64(bad_events, 0);
    munmap(p, NP * PG);
}

/* ---- whole VMAs: the application's view of its mappings ---------------
 * Registering part of a VMA would split it, and mremap of a whole mapping
 * then fails with EFAULT (issue 11, defect 3).  These check the VMA layout
 * (/proc/self/maps) and the system calls against an unwatched twin. */

/* VMAs intersecting [p, p+len). */
static int vmas_in(const void *p, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long lo, hi, a = (uintptr_t)p, b = a + len;
    char line[512];
    int n = 0;

    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < b && hi > a)
            n++;
    if (f)
        fclose(f);
    return n;
}

/* 1 if the VMA holding p is registered with a userfaultfd in
 * write-protect mode (smaps VmFlags "uw"), 0 if not, -1 unknown. */
static int uffd_wp_flag(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    unsigned long lo, hi, a = (uintptr_t)p;
    char line[512];
    int in = 0, r = -1;

    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') &&
            line[strspn(line, "0123456789abcdef")] == '-')
            in = lo <= a && a < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            r = strstr(line, " uw") != NULL;
            break;
        }
    }
    if (f)
        fclose(f);
    return r;
}

/* mremap(MAYMOVE) of a whole 16-page mapping to 32 pages: 0 or errno;
 * unmaps the result either way. */
static int remap_whole(char *p)
{
    char *q = mremap(p, 16 * PG, 32 * PG, MREMAP_MAYMOVE);
    int err = q == MAP_FAILED ? errno : 0;

    if (!err)
        CHECK(q[5 * PG] == 0x5a && q[15 * PG] == 0x5a);
    munmap(q == MAP_FAILED ? p : q, (err ? 16 : 32) * PG);
    return err;
}

static void vma_whole_test(void)
{
    char *twin = map_anon(16 * PG), *p = map_anon(16 * PG);
    int e_twin, e, n;

    /* part of a mapping watched: one VMA, and mremap of it all works */
    CHECK(watch_or_die(p + 4 * PG + 8, 2 * PG - 16) == 0);
    n = vmas_in(p, 16 * PG);
    printf("16-page mapping, pages 4-5 watched: %d VMA(s) (want 1), "
           "uffd-wp flag %d\n",
           n, uffd_wp_flag(p));
    CHECK_EQ_U64(n, 1);
    CHECK(uffd_wp_flag(p + 15 * PG) != 0);
    e_twin = remap_whole(twin);
    mark();
    e = remap_whole(p);
    hb_memmon_sync_local();
    printf("mremap(MAYMOVE) of the whole mapping: %s (unwatched twin: %s), "
           "%u callback(s) over the watched pages\n",
           e ? strerror(e) : "ok", e_twin ? strerror(e_twin) : "ok",
           overlapping((uintptr_t)p + 4 * PG, (uintptr_t)p + 6 * PG));
    CHECK_EQ_U64(e, e_twin);
    CHECK(overlapping((uintptr_t)p + 4 * PG, (uintptr_t)p + 6 * PG) > 0);
    hb_memmon_unwatch(p + 4 * PG + 8, 2 * PG - 16);
}

/* Two watches in one VMA; events elsewhere in it are filtered; the VMA
 * is unregistered (whole) with the last of them. */
static void vma_two_watches_test(void)
{
    char *p = map_anon(16 * PG);
    unsigned c2, c10, c14;

    CHECK(watch_or_die(p + 2 * PG, 2 * PG) == 0);
    CHECK(watch_or_die(p + 10 * PG, 2 * PG) == 0);
    CHECK_EQ_U64(vmas_in(p, 16 * PG), 1);
    hb_memmon_unwatch(p + 2 * PG, 2 * PG);
    CHECK_EQ_U64(vmas_in(p, 16 * PG), 1);
    CHECK(uffd_wp_flag(p) != 0); /* still needed for pages 10-11 */
    mark();
    madvise(p + 2 * PG, PG, MADV_DONTNEED);
    hb_memmon_sync_local();
    c2 = since();
    mark();
    madvise(p + 14 * PG, PG, MADV_DONTNEED);
    hb_memmon_sync_local();
    c14 = since();
    mark();
    madvise(p + 10 * PG, PG, MADV_DONTNEED);
    hb_memmon_sync_local();
    c10 = since();
    printf("two watches in one VMA, first unwatched: madvise callbacks on "
           "its page %u, unwatched page %u, still watched page %u "
           "(want 0 0 1)\n",
           c2, c14, c10);
    CHECK_EQ_U64(c2, 0);
    CHECK_EQ_U64(c14, 0);
    CHECK_EQ_U64(c10, 1);
    hb_memmon_unwatch(p + 10 * PG, 2 * PG);
    printf("last unwatched: uffd-wp flag %d (want 0), %d VMA(s)\n",
           uffd_wp_flag(p), vmas_in(p, 16 * PG));
    CHECK(uffd_wp_flag(p) == 0);
    CHECK_EQ_U64(vmas_in(p, 16 * PG), 1);
    memset(p, 0x5a, 16 * PG);
    CHECK_EQ_U64(remap_whole(p), 0);
}

/* The application splits and re-merges a watched VMA (mprotect), unmaps
 * a part of it, and mremaps it: as without hotbuf. */
static void vma_app_changes_test(void)
{
    char *twin = map_anon(16 * PG), *p = map_anon(16 * PG);
    int nt, np, e;
    char *q;

    CHECK(watch_or_die(p + 4 * PG, 2 * PG) == 0);
    mprotect(twin + 8 * PG, 4 * PG, PROT_READ);
    mprotect(p + 8 * PG, 4 * PG, PROT_READ);
    nt = vmas_in(twin, 16 * PG);
    np = vmas_in(p, 16 * PG);
    CHECK_EQ_U64(np, nt);
    mprotect(twin + 8 * PG, 4 * PG, PROT_READ | PROT_WRITE);
    mprotect(p + 8 * PG, 4 * PG, PROT_READ | PROT_WRITE);
    printf("mprotect of a part splits into %d VMA(s) (twin %d), back: %d "
           "(twin %d)\n",
           np, nt, vmas_in(p, 16 * PG), vmas_in(twin, 16 * PG));
    CHECK_EQ_U64(vmas_in(p, 16 * PG), vmas_in(twin, 16 * PG));
    CHECK_EQ_U64(remap_whole(twin), 0);
    mark();
    munmap(p + 12 * PG, 4 * PG); /* not watched: filtered, pages 4-5 live */
    hb_memmon_sync_local();
    CHECK_EQ_U64(since(), 0);
    q = mremap(p, 12 * PG, 24 * PG, MREMAP_MAYMOVE);
    e = q == MAP_FAILED ? errno : 0;
    hb_memmon_sync_local();
    printf("munmap of an unwatched part: 0 callbacks; mremap of the rest: "
           "%s, %u callback(s)\n",
           e ? strerror(e) : "ok", since());
    CHECK_EQ_U64(e, 0);
    hb_memmon_unwatch(p + 4 * PG, 2 * PG);
    if (q == MAP_FAILED)
        munmap(p, 12 * PG);
    else
        munmap(q, 24 * PG);
}

/* After the last unwatch the mapping merges with a neighbour again. */
static void vma_merge_after_test(void)
{
    char *p =
        mmap(NULL, 16 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *a, *b;

    if (p == MAP_FAILED)
        return;
    munmap(p, 16 * PG);
    a = mmap(p, 8 * PG, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CHECK(a == p);
    memset(a, 0x5a, 8 * PG);
    CHECK(watch_or_die(a + PG, PG) == 0);
    hb_memmon_unwatch(a + PG, PG);
    b = mmap(p + 8 * PG, 8 * PG, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CHECK(b == p + 8 * PG);
    memset(b, 0x5a, 8 * PG);
    printf("after the unwatch, a neighbour mapping merges: %d VMA(s) "
           "(want 1)\n",
           vmas_in(p, 16 * PG));
    CHECK_EQ_U64(vmas_in(p, 16 * PG), 1);
    CHECK_EQ_U64(remap_whole(p), 0);
}

/* The heap (brk) and the stack: watching a part splits neither. */
static void vma_heap_stack_test(void)
{
    char stackbuf[3 * 4096];
    char *old = sbrk(0), *h;
    int n0, n1;

    memset(stackbuf, 1, sizeof stackbuf);
    n0 = vmas_in(stackbuf, sizeof stackbuf);
    CHECK(watch_or_die(stackbuf + 4096, 4096) == 0);
    n1 = vmas_in((char *)stackbuf - 64 * PG, 128 * PG);
    hb_memmon_unwatch(stackbuf + 4096, 4096);
    printf("stack: watch of a page leaves %d VMA(s) around it (unwatched: "
           "%d)\n",
           n1, vmas_in((char *)stackbuf - 64 * PG, 128 * PG));
    CHECK_EQ_U64(n1, vmas_in((char *)stackbuf - 64 * PG, 128 * PG));
    (void)n0;
    if ((uintptr_t)old & (PG - 1))
        sbrk((intptr_t)(PG - ((uintptr_t)old & (PG - 1))));
    h = sbrk((intptr_t)(16 * PG));
    if (h == (void *)-1) {
        printf("  NOT APPLICABLE: sbrk: %s\n", strerror(errno));
        return;
    }
    memset(h, 0x5a, 16 * PG);
    n0 = vmas_in(h, 16 * PG);
    CHECK(watch_or_die(h + 4 * PG, 2 * PG) == 0);
    n1 = vmas_in(h, 16 * PG);
    printf("heap: watch of 2 of 16 brk pages: %d VMA(s) (before %d)\n", n1, n0);
    CHECK_EQ_U64(n1, n0);
    hb_memmon_unwatch(h + 4 * PG, 2 * PG);
    CHECK(sbrk(-(intptr_t)(16 * PG)) != (void *)-1);
}

static void vma_tests(void)
{
    printf("== whole VMAs ==\n");
    vma_whole_test();
    vma_two_watches_test();
    vma_app_changes_test();
    vma_merge_after_test();
    vma_heap_stack_test();
}

/* ---- ordering -------------------------------------------------------- */

static void *unmapper(void *arg)
{
    char *p = arg;

    munmap(p, 4 * PG);
    return NULL;
}

static void ordering_tests(void)
{
    char *p;
    double t0, t;
    unsigned c1, c2;
    pthread_t th;

    printf("== ordering ==\n");
    /* 1. the kernel holds munmap until the monitor reads the event */
    p = map_anon(4 * PG);
    CHECK(hb_memmon_watch(p, 4 * PG) == 0);
    hb_memmon_debug_delays(200000, 0);
    t0 = now();
    munmap(p, 4 * PG);
    t = now() - t0;
    hb_memmon_debug_delays(0, 0);
    hb_memmon_sync_local();
    printf(
        "munmap with the monitor 200 ms late to read: returned after %.0f ms\n",
        t * 1e3);
    CHECK(t > 0.15);
    hb_memmon_unwatch(p, 4 * PG);

    /* 2. read -> callback window; hb_memmon_sync_local waits for the callback */
    p = map_anon(4 * PG);
    CHECK(hb_memmon_watch(p, 4 * PG) == 0);
    hb_memmon_debug_delays(0, 200000);
    mark();
    munmap(p, 4 * PG);
    c1 = since();
    t0 = now();
    hb_memmon_sync_local();
    t = now() - t0;
    c2 = since();
    hb_memmon_debug_delays(0, 0);
    printf(
        "callback 200 ms after read: %u callback(s) when munmap returned, %u after "
        "hb_memmon_sync_local (waited %.0f ms)\n",
        c1, c2, t * 1e3);
    CHECK_EQ_U64(c1, 0);
    CHECK(c2 >= 1);
    hb_memmon_unwatch(p, 4 * PG);

    /* 3. another thread's munmap still waiting in the queue: hb_memmon_sync_local
     *    cannot see it, hb_memmon_sync waits for it */
    p = map_anon(4 * PG);
    CHECK(hb_memmon_watch(p, 4 * PG) == 0);
    hb_memmon_debug_delays(300000, 0);
    mark();
    CHECK(pthread_create(&th, NULL, unmapper, p) == 0);
    while (is_mapped(p, 4 * PG))
        sched_yield();
    hb_memmon_sync_local();
    c1 = since();
    t0 = now();
    hb_memmon_sync();
    t = now() - t0;
    c2 = since();
    pthread_join(th, NULL);
    hb_memmon_debug_delays(0, 0);
    printf(
        "other thread's munmap done, event unread: %u callback(s) after hb_memmon_sync_local, "
        "%u after hb_memmon_sync (waited %.0f ms)\n",
        c1, c2, t * 1e3);
    CHECK_EQ_U64(c1, 0);
    CHECK(c2 >= 1);
    hb_memmon_unwatch(p, 4 * PG);
}

/* ---- fork, privileges, start-up ---------------------------------------- */

static void fork_tests(void)
{
    char *p = map_anon(4 * PG);
    struct hb_memmon_stats s0, s1;
    int st = -1;
    pid_t pid;

    printf("== fork ==\n");
    CHECK(hb_memmon_watch(p, 4 * PG) == 0);
    hb_memmon_stats(&s0);
    pid = fork();
    if (pid == 0) {
        char why[256];
        int r;
        char *q;

        if (hb_memmon_active())
            _exit(2);
        if (hb_memmon_watch(p, PG) != -ECHILD)
            _exit(3);
        munmap(p, 4 * PG); /* not watched in the child: must not block */
        /* the child can start its own monitor */
        if (hb_memmon_start(test_cb, &the_ctx, 0, why, sizeof why) != 0) {
            fprintf(stderr, "child start: %s\n", why);
            _exit(4);
        }
        q = map_anon(PG);
        if (hb_memmon_watch(q, PG) != 0)
            _exit(5);
        mark();
        munmap(q, PG);
        hb_memmon_sync_local();
        r = since() >= 1 ? 0 : 6;
        hb_memmon_stop();
        _exit(r);
    }
    CHECK(pid > 0);
    waitpid(pid, &st, 0);
    hb_memmon_sync_local();
    hb_memmon_stats(&s1);
    printf("child: exit %d (0: monitor off after fork, child munmap unblocked, "
           "restart works); parent saw %llu event(s) from the child\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           (unsigned long long)(s1.unmap_events - s0.unmap_events));
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ_U64(s1.unmap_events - s0.unmap_events, 0);
    mark();
    munmap(p, 4 * PG);
    hb_memmon_sync_local();
    printf("parent after fork: munmap -> %u callback(s)\n", since());
    CHECK(since() >= 1);
    hb_memmon_unwatch(p, 4 * PG);
}

/* The application closes our userfaultfd (e.g. a close-all-fds loop):
 * registrations and events are gone, so the monitor must invalidate
 * everything once, report itself inactive and refuse new watches. */
static void broken_fd_test(void)
{
    int st = -1;
    pid_t pid;

    printf("== userfaultfd closed behind the monitor's back ==\n");
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char why[256], link[64], path[64];
        char *p, *q;
        int fd = -1, found = 0;

        if (hb_memmon_start(test_cb, &the_ctx, 0, why, sizeof why) != 0)
            _exit(20);
        p = map_anon(PG);
        q = map_anon(PG);
        if (hb_memmon_watch(p, PG) != 0)
            _exit(21);
        for (int i = 3; i < 1024; i++) {
            ssize_t n;
            snprintf(path, sizeof path, "/proc/self/fd/%d", i);
            n = readlink(path, link, sizeof link - 1);
            if (n > 0) {
                link[n] = 0;
                if (strstr(link, "userfaultfd")) {
                    fd = i;
                    found++;
                }
            }
        }
        if (found != 1)
            _exit(22);
        close(fd);
        mark();
        munmap(p, PG); /* wakes the monitor, which finds its fd gone */
        for (int i = 0; i < 200 && hb_memmon_active(); i++)
            usleep(10000);
        hb_memmon_sync_local();
        printf(
            "child: active=%d, %u callback(s), first [%#lx, %#lx), watch -> %d\n",
            hb_memmon_active(), since(), (unsigned long)rec[mark_at].lo,
            (unsigned long)rec[mark_at].hi, hb_memmon_watch(q, PG));
        fflush(stdout);
        if (hb_memmon_active() || since() < 1 || rec[mark_at].lo != 0 ||
            rec[mark_at].hi != UINTPTR_MAX || hb_memmon_watch(q, PG) != -EBADF)
            _exit(23);
        hb_memmon_stop();
        _exit(0);
    }
    waitpid(pid, &st, 0);
    printf(
        "child exit %d (0: broken monitor invalidated everything and refuses watches)\n",
        WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* What the monitor thread itself unmaps on its way out (a thread-specific
 * destructor; AddressSanitizer frees its per-thread state so) may lie in a
 * VMA still registered: here the remnant of a watched VMA the application
 * partly unmapped (the dead pages are not unregistered at stop).  Its
 * munmap waits for an event only the monitor thread reads: the thread
 * must drop its userfaultfd before it exits.  The ASan build of the
 * library hung so in MPI_Finalize (pthread_join in hb_memmon_stop). */
static pthread_key_t exit_key;
static char *_Atomic exit_unmap_at;

static void unmap_at_thread_exit(void *p)
{
    munmap(p, PG);
}

static void exit_cb(void *ctx, const void *addr, size_t len)
{
    char *p = atomic_exchange(&exit_unmap_at, NULL);

    (void)ctx;
    (void)addr;
    (void)len;
    if (p)
        pthread_setspecific(exit_key, p); /* in the monitor thread */
}

static void stop_exit_unmap_test(void)
{
    int st = -1;
    pid_t pid;

    printf("== the monitor thread unmaps watched-VMA memory as it exits ==\n");
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char why[256];
        char *v;
        int reg;

        alarm(20); /* a hang is a failure, not a stuck suite */
        if (pthread_key_create(&exit_key, unmap_at_thread_exit) != 0 ||
            hb_memmon_start(exit_cb, &the_ctx, 0, why, sizeof why) != 0)
            _exit(30);
        v = map_anon(8 * PG);
        if (hb_memmon_watch(v + 2 * PG, 2 * PG) != 0)
            _exit(31);
        atomic_store(&exit_unmap_at, v + 6 * PG);
        munmap(v + 2 * PG, 2 * PG); /* the callback arms the destructor */
        hb_memmon_sync_local();
        reg = uffd_wp_flag(v + 6 * PG);
        hb_memmon_stop();
        printf("child: remnant registered before stop: %d; stop returned, "
               "remnant unmapped by the thread's destructor: %d\n",
               reg, !is_mapped(v + 6 * PG, PG));
        fflush(stdout);
        if (atomic_load(&exit_unmap_at) != NULL || is_mapped(v + 6 * PG, PG))
            _exit(32);
        _exit(reg == 1 ? 0 : 33);
    }
    waitpid(pid, &st, 0);
    printf("child exit %d, signal %d (0/0: stop returned)\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1,
           WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void unprivileged_test(void)
{
    int st = -1;
    pid_t pid;

    printf("== unprivileged process ==\n");
    if (geteuid() != 0) {
        printf(
            "  NOT APPLICABLE: not root, cannot switch to uid 65534 (this run is "
            "unprivileged already: start succeeded above)\n");
        return;
    }
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char why[256], sys[8] = "?";
        int fd, e, r;
        FILE *f = fopen("/proc/sys/vm/unprivileged_userfaultfd", "r");

        if (f) {
            if (!fgets(sys, sizeof sys, f))
                strcpy(sys, "?");
            sys[strcspn(sys, "\n")] = 0;
            fclose(f);
        }
        if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
            _exit(10);
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
        e = errno;
        printf(
            "uid 65534, vm.unprivileged_userfaultfd=%s: userfaultfd() without "
            "UFFD_USER_MODE_ONLY -> %s\n",
            sys, fd >= 0 ? "ok" : strerror(e));
        if (fd >= 0)
            close(fd);
        r = hb_memmon_start(test_cb, &the_ctx, 0, why, sizeof why);
        printf("uid 65534: hb_memmon_start -> %d: %s\n", r,
               r ? why : hb_memmon_describe());
        fflush(stdout);
        if (r == 0) {
            char *q = map_anon(PG);
            if (hb_memmon_watch(q, PG) != 0)
                _exit(12);
            mark();
            munmap(q, PG);
            hb_memmon_sync_local();
            r = since() >= 1 ? 0 : 13;
            hb_memmon_stop();
            _exit(r);
        }
        _exit(11);
    }
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* Unavailable: a seccomp filter forbids userfaultfd(2), as container
     * runtimes' default profiles do, and /dev/userfaultfd is root-only. */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        struct sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                     offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {sizeof code / sizeof code[0], code};
        char why[256];
        int r;

        if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
            _exit(10);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
            _exit(11);
        r = hb_memmon_start(test_cb, &the_ctx, 0, why, sizeof why);
        printf(
            "uid 65534 + seccomp denying userfaultfd: hb_memmon_start -> %d: %s\n",
            r, why);
        fflush(stdout);
        _exit(r == -1 && strstr(why, "unavailable") && !hb_memmon_active()
                  ? 0
                  : 12);
    }
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void startup_tests(void)
{
    char why[256];
    int r;

    printf("== start-up ==\n");
    r = hb_memmon_start(test_cb, &the_ctx, 0, why, sizeof why);
    printf("second start -> %d: %s\n", r, why);
    CHECK(r == -1 && why[0]);
}

/* The monitor is a library: whether to run it is its caller's setting
 * (HOTBUF_MEMMON is parsed by shim/config), never read from the
 * environment here. */
static void no_env_test(void)
{
    char why[256];
    int r;

    r = hb_memmon_start(NULL, &the_ctx, 0, why, sizeof why);
    printf("no callback -> %d: %s\n", r, why);
    CHECK(r == -1 && strstr(why, "no callback"));
    CHECK(!hb_memmon_active());
    CHECK(hb_memmon_watch(&r, sizeof r) == -ENODEV);
    setenv("HOTBUF_MEMMON", "none", 1);
    r = hb_memmon_start(test_cb, &the_ctx, 0, why, sizeof why);
    unsetenv("HOTBUF_MEMMON");
    printf("HOTBUF_MEMMON=none in the environment -> %d: %s\n", r,
           r ? why : "ignored");
    CHECK(r == 0 ||
          !strstr(why, "HOTBUF_MEMMON")); /* unavailable is another matter */
    if (r == 0)
        hb_memmon_stop();
}

static void muted_start_test(void)
{
    char why[256];
    char *p;
    int r;

    r = hb_memmon_start(test_cb, &the_ctx, HB_MEMMON_F_MUTED, why, sizeof why);
    printf("HB_MEMMON_F_MUTED -> %d: %s\n", r, hb_memmon_describe());
    CHECK(r == 0);
    CHECK(r != 0 || strstr(hb_memmon_describe(), "MUTED"));
    if (r)
        return;
    p = map_anon(PG);
    CHECK(hb_memmon_watch(p, PG) == 0);
    mark();
    munmap(p, PG);
    hb_memmon_sync_local();
    CHECK_EQ_U64(since(), 0);
    hb_memmon_unwatch(p, PG);
    hb_memmon_stop();
}

int main(void)
{
    char why[256];
    struct hb_memmon_stats s;

    setvbuf(stdout, NULL, _IOLBF, 0);
    PG = (size_t)sysconf(_SC_PAGESIZE);
    /* Deterministic glibc: 1 MiB blocks always mmap'ed, free() never trims. */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
    mallopt(M_TOP_PAD, 0);

    no_env_test();
    muted_start_test();
    if (hb_memmon_start(test_cb, &the_ctx, 0, why, sizeof why) != 0) {
        printf("memory monitor unavailable on this machine: %s\n", why);
        printf(
            "NOT APPLICABLE: every event test (the caller would fall back)\n");
        CHECK(!"memory monitor available (expected on the project's hosts)");
        return CHECK_DONE();
    }
    printf("mechanism: %s\n", hb_memmon_describe());
    startup_tests();
    run_scenarios(0);
    run_scenarios(1);
    limits();
    watchable_tests();
    unwatch_tests();
    table_fuzz();
    vma_tests();
    ordering_tests();
    fork_tests();
    broken_fd_test();
    stop_exit_unmap_test();
    unprivileged_test();
    CHECK(cb_ctx_ok);
    hb_memmon_stats(&s);
    printf(
        "stats: unmap %llu remove %llu remap %llu fault %llu shmdt %llu shmat %llu "
        "callbacks %llu muted %llu watch %llu (failed %llu) unwatch %llu "
        "unregister %llu dead-skip %llu watched %llu B strict-probe-stuck %llu\n",
        (unsigned long long)s.unmap_events, (unsigned long long)s.remove_events,
        (unsigned long long)s.remap_events, (unsigned long long)s.fault_events,
        (unsigned long long)s.shmdt_hooks, (unsigned long long)s.shmat_hooks,
        (unsigned long long)s.callbacks, (unsigned long long)s.muted,
        (unsigned long long)s.watch_calls, (unsigned long long)s.watch_failures,
        (unsigned long long)s.unwatch_calls, (unsigned long long)s.unregisters,
        (unsigned long long)s.dead_skips, (unsigned long long)s.watched_bytes,
        (unsigned long long)s.strict_probe_stuck);
    CHECK_EQ_U64(s.fault_events, 0);
    hb_memmon_stop();
    CHECK(!hb_memmon_active());
    return CHECK_DONE();
}
