/* Memory-change monitor (design, contract and alternatives in memmon.h).
 *
 * Layout
 *   - Whole mappings.  UFFDIO_REGISTER of part of a VMA splits it (the
 *     flag VM_UFFD_WP is per VMA), and a lazily cached registration keeps
 *     it split: the application's mremap() of its whole mapping then
 *     fails with EFAULT (the old range must lie in one VMA).  So watch
 *     registers every VMA the range touches, whole (found in
 *     /proc/self/maps), and unwatch unregisters the VMAs of the last
 *     watched pages in them, whole.  The kernel then reports changes
 *     anywhere in those VMAs; the monitor thread drops the ones that miss
 *     every watched range (a seqlock'ed copy of the table, `snap`).
 *   - One userfaultfd (O_NONBLOCK, close-on-exec, user-mode-only) asking
 *     for the UNMAP, REMOVE and REMAP events.  Watched pages are
 *     registered in write-protect mode and never write-protected, so the
 *     fd only ever carries events.
 *   - A monitor thread polls the fd and an eventfd (stop).  For each wake
 *     it makes `seq` odd, reads every queued message (each read completes
 *     the event and lets the unmapping thread continue), calls the
 *     callback for each, and makes `seq` even again.  hb_memmon_sync_local()
 *     waits for even; hb_memmon_sync() first waits until the
 *     kernel's mmap_changing count of our context is zero (probed with a
 *     no-op write-protect ioctl that fails with EAGAIN while it is not).
 *   - The watch table (sorted, disjoint page ranges with a watch count)
 *     lets nested watches share pages: UFFDIO_UNREGISTER is issued only
 *     when the last watch of a page goes.  Pages an UNMAP/REMAP event
 *     reported gone are marked dead (the kernel dropped or moved their
 *     registration; unregistering them could hit someone else's new
 *     registration of the same addresses).  The monitor thread never
 *     takes the table mutex: it hands dead ranges over through a
 *     single-producer ring that watch/unwatch drain under the mutex.
 *   - shmdt/shmat interposers (memmon_shm.c) report synchronously through
 *     hb_memmon__hook_*, bracketed by `inflight`.
 */
#define _GNU_SOURCE

#include "memmon.h"
#include "memmon_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/why.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

#define NEEDED_EVENTS                                                          \
    (UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |                    \
     UFFD_FEATURE_EVENT_REMAP)
#define MSG_BATCH 32
#define DEAD_SLOTS 1024
#define THREAD_STACK (256 * 1024)
#define TABLE_INITIAL 64
#define SNAP_MAX 4096 /* watched ranges the event filter can hold */
#define MAPS_BUF 8192 /* > one /proc/self/maps line (PATH_MAX) */

_Static_assert(ATOMIC_LONG_LOCK_FREE == 2, "hooks need lock-free atomics");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "hooks need lock-free atomics");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "hooks need lock-free atomics");

enum { ST_STOPPED = 0, ST_RUNNING = 1 };

struct seg {
    uintptr_t start, end; /* page aligned, disjoint, sorted */
    unsigned long count;  /* watches covering these pages */
    int dead;             /* registration gone (unmapped or moved) */
};

static struct {
    atomic_int state;
    atomic_int broken; /* our fd was closed/replaced behind our back */
    int forked;        /* stopped by fork in this (child) process */
    dev_t fd_dev;      /* identity of the userfaultfd, to notice that */
    ino_t fd_ino;
    pid_t owner;
    int fd;     /* the userfaultfd, -1 when stopped */
    int wakefd; /* eventfd that stops the thread */
    pthread_t thread;
    hb_memmon_cb cb; /* stable while state is RUNNING */
    void *ctx;
    atomic_int deliver;   /* 0 during the self-test: count only */
    atomic_int muted;     /* debug switch */
    atomic_ulong seq;     /* odd while the thread reads and dispatches */
    atomic_long inflight; /* hooks between enter and leave */
    atomic_uint wake_delay_us, dispatch_delay_us;
    uintptr_t page;
    int user_mode_only;
    char *probe;         /* PROT_NONE page, never registered */
    atomic_int probe_ok; /* the mmap_changing probe works */
    char desc[320];

    pthread_mutex_t lock; /* the table; never taken by the thread */
    struct seg *segs;
    size_t nsegs, cap;
    struct seg *trusted; /* hb_memmon_trust's ranges (count unused) */
    size_t ntrusted, captrusted;

    /* dead ranges: produced by the thread, consumed under lock */
    uintptr_t dead_start[DEAD_SLOTS], dead_end[DEAD_SLOTS];
    atomic_ulong dead_head, dead_tail;
    atomic_int dead_overflow;
} M = {.fd = -1, .wakefd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static struct {
    atomic_ullong unmap, remove, remap, fault, shmdt, shmat, callbacks, muted,
        watch, watch_fail, unwatch, unreg, dead_skip, probe_stuck, filtered;
} C;

/* The watched ranges as the monitor thread sees them, written under
 * M.lock (never during a system call, so the reader's retry loop is
 * short) and read without it: the thread must never wait for a thread
 * that may itself be waiting for an event to be read.  n == SNAP_ALL:
 * too many ranges, let every event through. */
#define SNAP_ALL ((size_t)-1)
static struct {
    atomic_ulong gen; /* odd while being written */
    atomic_size_t n;
    _Atomic uintptr_t lo[SNAP_MAX], hi[SNAP_MAX];
} S;

static void counters_reset(void)
{
    atomic_ullong *all[] = {
        &C.unmap,   &C.remove,    &C.remap,     &C.fault,       &C.shmdt,
        &C.shmat,   &C.callbacks, &C.muted,     &C.watch,       &C.watch_fail,
        &C.unwatch, &C.unreg,     &C.dead_skip, &C.probe_stuck, &C.filtered};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        atomic_store_explicit(all[i], 0, memory_order_relaxed);
}

static void inc(atomic_ullong *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void sleep_us(unsigned us)
{
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void cpu_relax(unsigned *spins)
{
    if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield();
    }
}

/* ---- dispatch (monitor thread or hook; no locks, no allocation) ------- */

static void deliver(atomic_ullong *kind, uintptr_t start, uintptr_t end)
{
    inc(kind);
    if (end <= start || !atomic_load_explicit(&M.deliver, memory_order_acquire))
        return;
    if (atomic_load_explicit(&M.muted, memory_order_relaxed)) {
        inc(&C.muted);
        return;
    }
    M.cb(M.ctx, (const void *)start, end - start);
    inc(&C.callbacks);
}

/* Single producer: the monitor thread. */
static void dead_push(uintptr_t start, uintptr_t end)
{
    unsigned long h = atomic_load_explicit(&M.dead_head, memory_order_relaxed);
    unsigned long t = atomic_load_explicit(&M.dead_tail, memory_order_acquire);

    if (h - t >= DEAD_SLOTS) {
        atomic_store_explicit(&M.dead_overflow, 1, memory_order_release);
        return;
    }
    M.dead_start[h % DEAD_SLOTS] = start;
    M.dead_end[h % DEAD_SLOTS] = end;
    atomic_store_explicit(&M.dead_head, h + 1, memory_order_release);
}

/* Does [lo, hi) overlap a watched range?  Lock-free (seqlock reader). */
static int snap_hit(uintptr_t lo, uintptr_t hi)
{
    unsigned spins = 0;

    for (;;) {
        unsigned long g = atomic_load_explicit(&S.gen, memory_order_acquire);
        size_t n = atomic_load_explicit(&S.n, memory_order_relaxed);
        size_t a = 0, b = n;
        int hit;

        if (g & 1) {
            cpu_relax(&spins);
            continue;
        }
        if (n == SNAP_ALL)
            return 1;
        if (n > SNAP_MAX)
            n = b = SNAP_MAX; /* torn read: retried below */
        while (a < b) {       /* first range ending after lo */
            size_t mid = a + (b - a) / 2;

            if (atomic_load_explicit(&S.hi[mid], memory_order_relaxed) > lo)
                b = mid;
            else
                a = mid + 1;
        }
        hit =
            a < n && atomic_load_explicit(&S.lo[a], memory_order_relaxed) < hi;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&S.gen, memory_order_relaxed) == g)
            return hit;
    }
}

/* Events outside every watched range (elsewhere in a VMA registered
 * whole) are counted and dropped: no callback, no dead marking. */
static int wanted(uintptr_t lo, uintptr_t hi)
{
    if (snap_hit(lo, hi))
        return 1;
    inc(&C.filtered);
    return 0;
}

static void handle_msg(const struct uffd_msg *m)
{
    switch (m->event) {
    case UFFD_EVENT_UNMAP:
        if (!wanted(m->arg.remove.start, m->arg.remove.end))
            break;
        dead_push(m->arg.remove.start, m->arg.remove.end);
        deliver(&C.unmap, m->arg.remove.start, m->arg.remove.end);
        break;
    case UFFD_EVENT_REMOVE:
        if (!wanted(m->arg.remove.start, m->arg.remove.end))
            break;
        deliver(&C.remove, m->arg.remove.start, m->arg.remove.end);
        break;
    case UFFD_EVENT_REMAP:
        /* The registration moved with the pages to arg.remap.to. */
        if (!wanted(m->arg.remap.from, m->arg.remap.from + m->arg.remap.len))
            break;
        dead_push(m->arg.remap.from, m->arg.remap.from + m->arg.remap.len);
        deliver(&C.remap, m->arg.remap.from,
                m->arg.remap.from + m->arg.remap.len);
        break;
    case UFFD_EVENT_PAGEFAULT: {
        /* Cannot happen: nothing is ever write-protected and no range is
         * registered for missing pages.  Unblock the thread anyway. */
        uintptr_t a = m->arg.pagefault.address & ~(M.page - 1);

        inc(&C.fault);
        if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
            struct uffdio_writeprotect wp = {{a, M.page}, 0};
            (void)ioctl(M.fd, UFFDIO_WRITEPROTECT, &wp);
        } else {
            struct uffdio_range r = {a, M.page};
            (void)ioctl(M.fd, UFFDIO_WAKE, &r);
        }
        break;
    }
    default: break;
    }
}

/* Reads and dispatches everything queued.  seq is odd throughout, from
 * before the first read() (which lets unmapping threads continue) to
 * after the last callback. */
static void drain_events(void)
{
    struct uffd_msg msg[MSG_BATCH];
    unsigned delay;

    atomic_fetch_add(&M.seq, 1);
    for (;;) {
        ssize_t r = read(M.fd, msg, sizeof msg);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < (ssize_t)sizeof msg[0])
            break; /* EAGAIN: queue empty */
        delay =
            atomic_load_explicit(&M.dispatch_delay_us, memory_order_relaxed);
        if (delay)
            sleep_us(delay);
        for (size_t i = 0; i < (size_t)r / sizeof msg[0]; i++)
            handle_msg(&msg[i]);
    }
    atomic_fetch_add(&M.seq, 1);
}

/* Is M.fd still our userfaultfd?  An application that closes file
 * descriptors it does not own would drop every registration (munmaps no
 * longer wait, events are lost) and the number may then name another
 * file, which we must neither read nor close. */
static int fd_is_ours(void)
{
    struct stat st;

    return M.fd >= 0 && fstat(M.fd, &st) == 0 && st.st_dev == M.fd_dev &&
           st.st_ino == M.fd_ino;
}

/* Monitor thread only: events may have been lost, so invalidate
 * everything once and stop for good (watch fails from now on). */
static void go_broken(void)
{
    atomic_fetch_add(&M.seq, 1); /* odd: sync waits for the invalidation */
    deliver(&C.unmap, 0, UINTPTR_MAX);
    snprintf(
        M.desc, sizeof M.desc,
        "memory monitor BROKEN: its userfaultfd was closed by someone else; "
        "everything invalidated, nothing can be watched any more");
    atomic_store(&M.broken, 1);
    atomic_fetch_add(&M.seq, 1);
}

/* Stopping: the thread closes the userfaultfd itself, before it exits.
 * What it unmaps on its way out (thread-specific destructors; ASan frees
 * its per-thread state so) may lie in a VMA that is still registered --
 * one merged with a watched buffer's, or the remnant of a watched VMA the
 * application partly unmapped, whose dead pages stop does not unregister
 * -- and that munmap would wait for an event only this thread can read.
 * Closing drops every registration and wakes any waiter.  teardown()
 * sees fd -1 after the join and does not close it again. */
static void close_own_fd(void)
{
    if (fd_is_ours())
        close(M.fd);
    M.fd = -1;
}

static void *monitor_main(void *arg)
{
    struct pollfd p[2] = {{M.fd, POLLIN, 0}, {M.wakefd, POLLIN, 0}};
    unsigned delay;

    (void)arg;
    for (;;) {
        int n = poll(p, 2, -1);

        if (n < 0) {
            /* Never leave: unmapping threads would wait for us forever. */
            if (errno != EINTR)
                sleep_us(1000);
            continue;
        }
        if (p[1].revents & POLLIN)
            break;
        if ((p[0].revents & (POLLERR | POLLNVAL | POLLHUP)) || !fd_is_ours()) {
            go_broken();
            return NULL;
        }
        if (p[0].revents & POLLIN) {
            delay =
                atomic_load_explicit(&M.wake_delay_us, memory_order_relaxed);
            if (delay)
                sleep_us(delay);
            drain_events();
        }
    }
    drain_events(); /* release anyone still waiting */
    close_own_fd();
    return NULL;
}

/* ---- hooks (memmon_shm.c) -------------------------------------------- */

int hb_memmon__hook_enter(void)
{
    if (atomic_load_explicit(&M.state, memory_order_relaxed) != ST_RUNNING)
        return 0;
    atomic_fetch_add(&M.inflight, 1);
    if (atomic_load(&M.state) != ST_RUNNING) {
        atomic_fetch_sub(&M.inflight, 1);
        return 0;
    }
    return 1;
}

void hb_memmon__hook_report(enum hb_memmon_hook_kind kind, uintptr_t start,
                            uintptr_t end)
{
    deliver(kind == HB_MEMMON_HOOK_SHMDT ? &C.shmdt : &C.shmat, start, end);
}

void hb_memmon__hook_leave(void)
{
    atomic_fetch_sub(&M.inflight, 1);
}

/* ---- sync ------------------------------------------------------------- */

void hb_memmon_sync_local(void)
{
    unsigned spins = 0;

    while ((atomic_load_explicit(&M.seq, memory_order_acquire) & 1) ||
           atomic_load_explicit(&M.inflight, memory_order_acquire) != 0)
        cpu_relax(&spins);
}

/* 1 while some unmap/remove/remap event of ours is between its "prep"
 * (under mmap_lock, before the pages change) and the end of its wait
 * (after the monitor read it): the kernel's ctx->mmap_changing, visible
 * as EAGAIN from a write-protect ioctl.  The probe page is mapped but not
 * registered, so when nothing is changing the ioctl fails with ENOENT and
 * touches nothing. */
static int probe_changing(void)
{
    struct uffdio_writeprotect wp;

    memset(&wp, 0, sizeof wp);
    wp.range.start = (uintptr_t)M.probe;
    wp.range.len = M.page;
    return ioctl(M.fd, UFFDIO_WRITEPROTECT, &wp) != 0 && errno == EAGAIN;
}

/* Fallback when the probe is unusable: wait until the queue is empty
 * while seq stays even.  Misses an event whose unmap is done but which
 * is not queued yet (a few instructions in the kernel). */
static void sync_poll(void)
{
    unsigned spins = 0;

    for (;;) {
        unsigned long s = atomic_load(&M.seq);
        struct pollfd p = {M.fd, POLLIN, 0};

        if ((s & 1) || atomic_load(&M.inflight) != 0) {
            cpu_relax(&spins);
            continue;
        }
        if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
            cpu_relax(&spins);
            continue;
        }
        if (atomic_load(&M.seq) == s)
            return;
    }
}

void hb_memmon_sync(void)
{
    int saved = errno;
    unsigned spins = 0, n = 0;
    unsigned long s0;
    double t0 = 0;

    if (atomic_load(&M.state) != ST_RUNNING || atomic_load(&M.broken)) {
        hb_memmon_sync_local();
        return;
    }
    if (!atomic_load_explicit(&M.probe_ok, memory_order_relaxed)) {
        sync_poll();
        errno = saved;
        return;
    }
    s0 = atomic_load(&M.seq);
    while (probe_changing()) {
        cpu_relax(&spins);
        if ((++n & 1023) != 0)
            continue;
        if (t0 == 0) {
            t0 = hb_clock_s();
        } else if (hb_clock_s() - t0 > 5.0 && atomic_load(&M.seq) == s0) {
            struct pollfd p = {M.fd, POLLIN, 0};

            if (poll(&p, 1, 0) == 0) {
                /* Changing for 5 s with nothing queued and nothing read:
                 * a leaked count (kernel bug).  Use poll from now.  Not
                 * sooner: on a loaded host the unmapping thread can be
                 * preempted between the kernel's "prep" and the queueing
                 * of its event for far longer than 100 ms, and the weaker
                 * poll would then miss that event (a stale registration
                 * seen in the guest with three VMs on two CPUs). */
                atomic_store(&M.probe_ok, 0);
                inc(&C.probe_stuck);
                sync_poll();
                errno = saved;
                return;
            }
            t0 = hb_clock_s();
            s0 = atomic_load(&M.seq);
        }
    }
    /* Every event begun before the probe has been read; the drain that
     * read it made seq odd before reading, so wait for even.  (The fence
     * orders our loads after the kernel's, on weakly ordered CPUs.) */
    atomic_thread_fence(memory_order_seq_cst);
    hb_memmon_sync_local();
    errno = saved;
}

void hb_memmon_sync_strict(void)
{
    hb_memmon_sync();
}

/* ---- watch table (under M.lock) ------------------------------------- */

static size_t seg_find(uintptr_t x) /* first segment with end > x */
{
    size_t lo = 0, hi = M.nsegs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (M.segs[mid].end > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int seg_reserve(size_t want)
{
    struct seg *n;
    size_t cap = M.cap ? M.cap : TABLE_INITIAL;

    if (want <= M.cap)
        return 0;
    while (cap < want)
        cap *= 2;
    n = realloc(M.segs, cap * sizeof *n);
    if (!n)
        return -ENOMEM;
    M.segs = n;
    M.cap = cap;
    return 0;
}

static void seg_insert(size_t i, struct seg v) /* capacity reserved */
{
    memmove(&M.segs[i + 1], &M.segs[i], (M.nsegs - i) * sizeof M.segs[0]);
    M.segs[i] = v;
    M.nsegs++;
}

static void seg_split(uintptr_t x) /* capacity for one more reserved */
{
    size_t i = seg_find(x);

    if (i < M.nsegs && M.segs[i].start < x) {
        struct seg hi = M.segs[i];

        hi.start = x;
        M.segs[i].end = x;
        seg_insert(i + 1, hi);
    }
}

/* Drops zero-count segments and merges equal neighbours. */
static void seg_compact(void)
{
    size_t out = 0;

    for (size_t i = 0; i < M.nsegs; i++) {
        struct seg *s = &M.segs[i];

        if (s->count == 0)
            continue;
        if (out > 0 && M.segs[out - 1].end == s->start &&
            M.segs[out - 1].count == s->count &&
            M.segs[out - 1].dead == s->dead) {
            M.segs[out - 1].end = s->end;
            continue;
        }
        M.segs[out++] = *s;
    }
    M.nsegs = out;
}

/* Marks pages the kernel no longer has registered for us (unmapped, or
 * moved by mremap).  Runs under M.lock in watch/unwatch, so it may
 * allocate to split segments exactly; without memory it marks whole
 * segments (conservative: they are then never unregistered). */
static void mark_dead(uintptr_t s, uintptr_t e)
{
    size_t i;

    if (seg_reserve(M.nsegs + 2) == 0) {
        seg_split(s);
        seg_split(e);
    }
    for (i = seg_find(s); i < M.nsegs && M.segs[i].start < e; i++)
        M.segs[i].dead = 1;
}

static void dead_drain_locked(void)
{
    unsigned long t = atomic_load_explicit(&M.dead_tail, memory_order_relaxed);
    unsigned long h = atomic_load_explicit(&M.dead_head, memory_order_acquire);

    if (atomic_exchange(&M.dead_overflow, 0)) {
        for (size_t i = 0; i < M.nsegs; i++) /* lost some: assume all */
            M.segs[i].dead = 1;
    }
    for (; t != h; t++) {
        uintptr_t ds = M.dead_start[t % DEAD_SLOTS],
                  de = M.dead_end[t % DEAD_SLOTS];

        atomic_store_explicit(&M.dead_tail, t + 1, memory_order_release);
        mark_dead(ds, de);
    }
    seg_compact();
}

/* Copies the ranges with watches (dead or not: conservative) to the
 * monitor thread's filter.  Pure stores: see S. */
static void snap_publish(void)
{
    size_t n = 0;

    atomic_store_explicit(&S.gen, atomic_load(&S.gen) + 1,
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (size_t i = 0; i < M.nsegs && n != SNAP_ALL; i++) {
        uintptr_t lo = M.segs[i].start, hi = M.segs[i].end;

        if (M.segs[i].count == 0)
            continue;
        if (n > 0 &&
            atomic_load_explicit(&S.hi[n - 1], memory_order_relaxed) == lo) {
            atomic_store_explicit(&S.hi[n - 1], hi, memory_order_relaxed);
        } else if (n == SNAP_MAX) {
            n = SNAP_ALL;
        } else {
            atomic_store_explicit(&S.lo[n], lo, memory_order_relaxed);
            atomic_store_explicit(&S.hi[n++], hi, memory_order_relaxed);
        }
    }
    atomic_store_explicit(&S.n, n, memory_order_relaxed);
    atomic_store_explicit(&S.gen, atomic_load(&S.gen) + 1,
                          memory_order_release);
}

/* ---- whole VMAs (/proc/self/maps; watch/unwatch only) ------------------ */

struct span {
    uintptr_t s, e;   /* the range asked about */
    uintptr_t vs, ve; /* the VMAs it touches, so far */
    int state;        /* 0 none yet, 1 collecting, 2 done, -1 hole */
    int shared;       /* a line over [s, e) is not private anonymous memory */
    uintptr_t cov;    /* [s, cov) seen in private anonymous lines */
    int past;         /* a line at or beyond e was read: stop */
};

/* Is the rest of a maps line ("perms offset dev inode path") private
 * anonymous memory?  Only there does every change of the pages go through
 * this process's page tables, where the kernel reports it.  The pages of
 * shared or file-backed memory can be replaced with no event here: the
 * file truncated or a hole punched in it (ftruncate, fallocate on a memfd,
 * tmpfs, SysV shm), or another process's madvise(MADV_REMOVE); a pinned
 * registration would then keep the old pages.  /dev/zero and hugetlb
 * mapped private are anonymous too: their pages have no file behind. */
static int private_anon(const char *rest)
{
    char perms[8] = "", path[32] = "";
    unsigned long long inode = 1;

    if (sscanf(rest, " %7s %*s %*s %llu %31s", perms, &inode, path) < 2 ||
        strlen(perms) < 4 || perms[3] != 'p')
        return 0;
    return inode == 0 || strcmp(path, "/dev/zero") == 0 ||
           strcmp(path, "/anon_hugepage") == 0;
}

/* Is [lo, hi) inside one range of hb_memmon_trust's?  Under M.lock. */
static int trusted(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < M.ntrusted; i++)
        if (M.trusted[i].start <= lo && hi <= M.trusted[i].end)
            return 1;
    return 0;
}

/* What kind of memory the lines over [s, e) are, and whether they cover
 * it.  Apart from the span's state: /proc/self/maps is read in pieces, and
 * another thread's mmap or munmap between two pieces can shift the VMA
 * boundaries the span follows (a hole that is none), but not the kind of
 * memory under a live buffer. */
static void span_kind(struct span *sp, uintptr_t lo, uintptr_t hi,
                      const char *rest)
{
    if (lo >= sp->e)
        return;
    if (!private_anon(rest) &&
        !trusted(lo > sp->s ? lo : sp->s, hi < sp->e ? hi : sp->e))
        sp->shared = 1;
    else if (lo <= sp->cov && hi > sp->cov)
        sp->cov = hi;
}

/* Feeds one maps line ("lo-hi perms ...") to the span. */
static void span_line(struct span *sp, const char *l)
{
    char *end;
    uintptr_t lo = strtoull(l, &end, 16), hi;

    if (*end != '-')
        return;
    hi = strtoull(end + 1, &end, 16);
    if (hi <= sp->s)
        return;
    span_kind(sp, lo, hi, end);
    sp->past |= lo >= sp->e;
    if (sp->state >= 2 || sp->state < 0)
        return;
    if (lo >= sp->e) {
        sp->state = sp->state == 1 ? 2 : -1;
    } else if (sp->state == 0) {
        sp->state = lo <= sp->s ? 1 : -1;
        sp->vs = lo;
        sp->ve = hi;
    } else {
        sp->state = lo == sp->ve ? 1 : -1;
        sp->ve = hi;
    }
}

/* Feeds the complete lines in buf[0, *have) and keeps the incomplete
 * tail (a line longer than the buffer is dropped). */
static void span_lines(struct span *sp, char *buf, size_t *have)
{
    char *line = buf, *nl;

    buf[*have] = 0;
    while ((nl = memchr(line, '\n', (size_t)(buf + *have - line))) != NULL) {
        *nl = 0;
        span_line(sp, line);
        line = nl + 1;
    }
    *have = (size_t)(buf + *have - line);
    if (*have == MAPS_BUF - 1)
        *have = 0;
    memmove(buf, line, *have);
}

/* The union [*vs, *ve) of the VMAs that [s, e) touches, when they leave
 * no hole in it: 0.  -2: some of [s, e) is not private anonymous memory
 * (see private_anon).  -1: no such union (a hole, a race with another
 * thread's mmap, /proc not readable); *whole then says whether every page
 * of [s, e) was seen in private anonymous memory all the same. */
static int vma_span(uintptr_t s, uintptr_t e, uintptr_t *vs, uintptr_t *ve,
                    int *whole)
{
    char buf[MAPS_BUF];
    size_t have = 0;
    struct span sp = {s, e, 0, 0, 0, 0, s, 0};
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    while (fd >= 0 && !sp.past) {
        ssize_t r = read(fd, buf + have, MAPS_BUF - 1 - have);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        span_lines(&sp, buf, &have);
    }
    if (fd >= 0)
        close(fd);
    if (sp.shared)
        return -2;
    *whole = sp.cov >= e;
    if (sp.state == 1 && sp.ve >= e)
        sp.state = 2; /* the last VMA of the file */
    if (sp.state != 2 || sp.ve < e)
        return -1;
    *vs = sp.vs;
    *ve = sp.ve;
    return 0;
}

static int uffd_register(uintptr_t s, uintptr_t e)
{
    struct uffdio_register reg;

    memset(&reg, 0, sizeof reg);
    reg.range.start = s;
    reg.range.len = e - s;
    reg.mode = UFFDIO_REGISTER_MODE_WP;
    return ioctl(M.fd, UFFDIO_REGISTER, &reg) != 0 ? -errno : 0;
}

/* Registers the VMAs [s, e) lies in, whole, so that none is split (see
 * the layout note), when they are all private anonymous memory and leave
 * no hole in [s, e); else -EINVAL (not cacheable: the caller falls back).
 * A hole is refused too: a mapping placed there between this registration
 * and the pinning would be pinned unwatched.  If the VMAs could not be
 * told apart (another thread's mmap moved their boundaries while maps was
 * read) or changed before the registration, [s, e) alone: correct, only
 * the split comes back.  A read that saw less than all of [s, e) is tried
 * once more: that too may be another thread's mmap. */
static int register_span(uintptr_t s, uintptr_t e)
{
    uintptr_t vs, ve;
    int whole = 0, r = vma_span(s, e, &vs, &ve, &whole);

    if (r == -1 && !whole)
        r = vma_span(s, e, &vs, &ve, &whole);
    if (r == 0 && uffd_register(vs, ve) == 0)
        return 0;
    if (r == 0 || (r == -1 && whole))
        return uffd_register(s, e);
    return -EINVAL;
}

/* Does [s, e) hold a page that is watched and still registered? */
static int live_in(uintptr_t s, uintptr_t e)
{
    for (size_t i = seg_find(s); i < M.nsegs && M.segs[i].start < e; i++)
        if (M.segs[i].count > 0 && !M.segs[i].dead)
            return 1;
    return 0;
}

/* The last watch of the registered pages [s, e) went.  Unregister the
 * VMAs they lie in, whole -- they are ours entirely, a VMA has one
 * userfaultfd -- unless another watched page shares one: then all stay
 * registered, and that page's last unwatch unregisters them. */
static void unregister_span(uintptr_t s, uintptr_t e)
{
    uintptr_t vs = s, ve = e;
    struct uffdio_range rg;
    int whole;

    if (vma_span(s, e, &vs, &ve, &whole) == 0 && live_in(vs, ve))
        return;
    if (vs > s || ve < e) { /* cannot happen; never unregister less */
        vs = s;
        ve = e;
    }
    rg.start = vs;
    rg.len = ve - vs;
    (void)ioctl(M.fd, UFFDIO_UNREGISTER, &rg); /* gone: ignore */
    inc(&C.unreg);
}

/* Unregisters each run of pages in [s, e) whose count reached 0 and
 * whose registration is still there; dead ones are only counted. */
static void release_unwatched(uintptr_t s, uintptr_t e)
{
    size_t i = seg_find(s);

    while (i < M.nsegs && M.segs[i].start < e) {
        struct seg *g = &M.segs[i++];
        uintptr_t rs = g->start, re = g->end;

        if (g->count != 0)
            continue;
        if (g->dead) {
            inc(&C.dead_skip);
            continue;
        }
        while (i < M.nsegs && M.segs[i].start == re && M.segs[i].count == 0 &&
               !M.segs[i].dead && M.segs[i].start < e)
            re = M.segs[i++].end;
        unregister_span(rs, re);
    }
}

static int page_range(const void *addr, size_t len, uintptr_t *s, uintptr_t *e)
{
    uintptr_t a = (uintptr_t)addr;

    if (len == 0 || a + len < a || a + len > UINTPTR_MAX - M.page)
        return -EINVAL;
    *s = a & ~(M.page - 1);
    *e = (a + len + M.page - 1) & ~(M.page - 1);
    return 0;
}

static int check_running(void)
{
    if (atomic_load(&M.state) != ST_RUNNING)
        return M.forked ? -ECHILD : -ENODEV;
    if (getpid() != M.owner)
        return -ECHILD; /* a child made without fork handlers */
    if (atomic_load(&M.broken) || !fd_is_ours())
        return -EBADF;
    return 0;
}

int hb_memmon_watch(const void *addr, size_t len)
{
    uintptr_t s, e, x;
    size_t i, k;
    int r;

    inc(&C.watch);
    r = check_running();
    if (r == 0)
        r = page_range(addr, len, &s, &e);
    if (r) {
        inc(&C.watch_fail);
        return r;
    }
    pthread_mutex_lock(&M.lock);
    dead_drain_locked();
    for (k = 0, i = seg_find(s); i < M.nsegs && M.segs[i].start < e; i++)
        k++;
    r = seg_reserve(M.nsegs + k + 3); /* 2 splits + at most k+1 gaps */
    if (r == 0)
        r = register_span(s, e);
    if (r == 0) {
        seg_split(s);
        seg_split(e);
        for (x = s, i = seg_find(s); x < e;) {
            if (i < M.nsegs && M.segs[i].start <= x) {
                M.segs[i].count++;
                M.segs[i].dead = 0; /* registered again just now */
                x = M.segs[i++].end;
            } else {
                uintptr_t ge =
                    (i < M.nsegs && M.segs[i].start < e) ? M.segs[i].start : e;
                seg_insert(i++, (struct seg){x, ge, 1, 0});
                x = ge;
            }
        }
        seg_compact();
        snap_publish();
    }
    pthread_mutex_unlock(&M.lock);
    if (r)
        inc(&C.watch_fail);
    return r;
}

int hb_memmon_trust(const void *addr, size_t len)
{
    uintptr_t s, e;
    int r = page_range(addr, len, &s, &e);

    if (r)
        return r;
    pthread_mutex_lock(&M.lock);
    if (M.ntrusted == M.captrusted) {
        size_t cap = M.captrusted ? 2 * M.captrusted : 16;
        struct seg *t = realloc(M.trusted, cap * sizeof(*t));
        if (!t) {
            pthread_mutex_unlock(&M.lock);
            return -ENOMEM;
        }
        M.trusted = t;
        M.captrusted = cap;
    }
    M.trusted[M.ntrusted++] = (struct seg){s, e, 0, 0};
    pthread_mutex_unlock(&M.lock);
    return 0;
}

void hb_memmon_untrust(const void *addr, size_t len)
{
    uintptr_t s, e;

    if (page_range(addr, len, &s, &e))
        return;
    pthread_mutex_lock(&M.lock);
    for (size_t i = 0; i < M.ntrusted; i++)
        if (M.trusted[i].start == s && M.trusted[i].end == e) {
            M.trusted[i] = M.trusted[--M.ntrusted];
            break;
        }
    pthread_mutex_unlock(&M.lock);
}

void hb_memmon_unwatch(const void *addr, size_t len)
{
    uintptr_t s, e;

    inc(&C.unwatch);
    if (check_running() || page_range(addr, len, &s, &e))
        return;
    pthread_mutex_lock(&M.lock);
    dead_drain_locked();
    if (seg_reserve(M.nsegs + 2) == 0) { /* else: leave it watched */
        seg_split(s);
        seg_split(e);
        for (size_t i = seg_find(s); i < M.nsegs && M.segs[i].start < e; i++)
            if (M.segs[i].count > 0)
                M.segs[i].count--;
        snap_publish(); /* filter first: these pages are not watched now */
        release_unwatched(s, e);
        seg_compact();
    }
    pthread_mutex_unlock(&M.lock);
}

/* ---- start / stop ------------------------------------------------------ */

static void why_set(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void why_set(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(M.desc, sizeof M.desc, fmt, ap);
    va_end(ap);
    hb_why(why, n, "%s", M.desc);
}

static const char *sysctl_unpriv(char *buf, size_t n)
{
    int fd =
        open("/proc/sys/vm/unprivileged_userfaultfd", O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? read(fd, buf, n - 1) : -1;

    if (fd >= 0)
        close(fd);
    if (r <= 0)
        return "?";
    buf[r] = 0;
    buf[strcspn(buf, "\n")] = 0;
    return buf;
}

static int open_uffd(char *why, size_t n)
{
    int fd, dev, e1, e2 = ENOENT, umo;
    char sys[16], hint[160] = "";

    M.user_mode_only = 1;
    fd = (int)syscall(SYS_userfaultfd,
                      O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd >= 0)
        return fd;
    e1 = errno;
    if (e1 == EINVAL) { /* Linux < 5.11: no user-mode-only flag */
        M.user_mode_only = 0;
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0)
            return fd;
        e1 = errno;
    }
    umo = M.user_mode_only; /* which attempt e1 belongs to */
    dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev < 0) {
        e2 = errno;
    } else {
        M.user_mode_only = 1;
        fd = ioctl(dev, USERFAULTFD_IOC_NEW,
                   O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
        if (fd < 0 && errno == EINVAL) {
            M.user_mode_only = 0;
            fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
        }
        e2 = errno;
        close(dev);
        if (fd >= 0)
            return fd;
    }
    if (e1 == ENOSYS) {
        snprintf(hint, sizeof hint,
                 " (kernel without CONFIG_USERFAULTFD, or a seccomp filter)");
    } else if (e1 == EPERM && umo) {
        /* user-mode-only is allowed to everyone: not the sysctl */
        snprintf(hint, sizeof hint,
                 " (denied by a seccomp filter or security module)");
    } else if (e1 == EPERM) {
        snprintf(
            hint, sizeof hint,
            " (Linux < 5.11: vm.unprivileged_userfaultfd=%s and no CAP_SYS_PTRACE, "
            "or a seccomp filter)",
            sysctl_unpriv(sys, sizeof sys));
    }
    why_set(
        why, n,
        "memory monitor unavailable: userfaultfd(2): %s%s; /dev/userfaultfd: %s",
        strerror(e1), hint, strerror(e2));
    return -1;
}

static int start_thread(void)
{
    sigset_t all, old;
    pthread_attr_t attr;
    int r;

    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread blocks all */
    r = pthread_create(&M.thread, &attr, monitor_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (r == 0)
        pthread_setname_np(M.thread, "hotbuf-memmon");
    return r;
}

static void teardown(int joined_thread_running)
{
    int ours = fd_is_ours();

    atomic_store(&M.state, ST_STOPPED);
    {
        unsigned spins = 0;
        while (atomic_load(&M.inflight) != 0)
            cpu_relax(&spins);
    }
    pthread_mutex_lock(&M.lock);
    for (size_t i = 0; ours && i < M.nsegs; i++)
        M.segs[i].count = 0;
    if (ours && M.nsegs)
        release_unwatched(M.segs[0].start, M.segs[M.nsegs - 1].end);
    free(M.segs);
    M.segs = NULL;
    M.nsegs = M.cap = 0;
    free(M.trusted);
    M.trusted = NULL;
    M.ntrusted = M.captrusted = 0;
    snap_publish();
    pthread_mutex_unlock(&M.lock);
    if (joined_thread_running) {
        uint64_t one = 1;
        ssize_t w;
        do
            w = write(M.wakefd, &one, sizeof one);
        while (w < 0 && errno == EINTR);
        pthread_join(M.thread, NULL); /* it closed M.fd (close_own_fd) */
    }
    if (M.fd >= 0 && ours)
        close(M.fd); /* drops every registration, wakes any waiter */
    if (M.probe) {
        munmap(M.probe, M.page);
        M.probe = NULL;
    }
    atomic_store(&M.probe_ok, 0);
    if (M.wakefd >= 0)
        close(M.wakefd);
    M.fd = M.wakefd = -1;
    atomic_store(&M.deliver, 0);
    M.cb = NULL;
    M.ctx = NULL;
}

/* Runs munmap, madvise and mremap on a scratch mapping and checks that
 * each produced its event.  Callbacks are off (deliver == 0). */
static int self_test(char *why, size_t n)
{
    size_t pg = M.page;
    unsigned long long u0 = atomic_load(&C.unmap), r0 = atomic_load(&C.remove),
                       m0 = atomic_load(&C.remap);
    char *p, *q;
    int r;

    p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    q = mmap(NULL, 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || q == MAP_FAILED) {
        why_set(why, n, "memory monitor self-test: mmap: %s", strerror(errno));
        return -1;
    }
    memset(p, 1, 4 * pg);
    r = hb_memmon_watch(p, 4 * pg);
    if (r) {
        munmap(p, 4 * pg);
        munmap(q, 2 * pg);
        why_set(why, n,
                "memory monitor unavailable: UFFDIO_REGISTER (write-protect "
                "mode) of anonymous memory failed: %s",
                strerror(-r));
        return -1;
    }
    madvise(p, pg, MADV_DONTNEED); /* REMOVE */
    if (mremap(p + 2 * pg, 2 * pg, 2 * pg, MREMAP_MAYMOVE | MREMAP_FIXED, q) ==
        MAP_FAILED) /* REMAP */
        munmap(q, 2 * pg);
    munmap(p, 2 * pg);      /* UNMAP */
    munmap(q, 2 * pg);      /* UNMAP (moved) */
    hb_memmon_sync_local(); /* dispatched, so unwatch sees the pages dead */
    hb_memmon_unwatch(p, 4 * pg);
    if (atomic_load(&C.remove) == r0 || atomic_load(&C.unmap) == u0 ||
        atomic_load(&C.remap) == m0) {
        why_set(why, n,
                "memory monitor self-test failed: events seen: remove %llu, "
                "unmap %llu, remap %llu",
                atomic_load(&C.remove) - r0, atomic_load(&C.unmap) - u0,
                atomic_load(&C.remap) - m0);
        return -1;
    }
    hb_memmon_sync_local();
    /* The mmap_changing probe must fail with ENOENT when idle. */
    {
        struct uffdio_writeprotect wp;

        memset(&wp, 0, sizeof wp);
        wp.range.start = (uintptr_t)M.probe;
        wp.range.len = pg;
        atomic_store(&M.probe_ok, ioctl(M.fd, UFFDIO_WRITEPROTECT, &wp) != 0 &&
                                      errno == ENOENT);
    }
    return 0;
}

static void atfork_child(void)
{
    if (atomic_load(&M.state) != ST_RUNNING)
        return;
    /* No thread here; the kernel did not copy our registrations. */
    if (M.fd >= 0)
        close(M.fd);
    if (M.wakefd >= 0)
        close(M.wakefd);
    M.fd = M.wakefd = -1;
    if (M.probe)
        munmap(M.probe, M.page);
    M.probe = NULL;
    atomic_store(&M.probe_ok, 0);
    pthread_mutex_init(&M.lock, NULL);
    free(M.segs);
    M.segs = NULL;
    M.nsegs = M.cap = 0;
    free(M.trusted);
    M.trusted = NULL;
    M.ntrusted = M.captrusted = 0;
    atomic_store(&S.n, 0);
    atomic_store(&S.gen, 0);
    atomic_store(&M.inflight, 0);
    atomic_store(&M.seq, 0);
    atomic_store(&M.deliver, 0);
    M.cb = NULL;
    M.ctx = NULL;
    M.forked = 1;
    snprintf(M.desc, sizeof M.desc,
             "memory monitor stopped in forked child (call hb_memmon_start)");
    atomic_store(&M.state, ST_STOPPED);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void atfork_register(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}

/* The caller's part: a callback, and no monitor running already. */
static int check_start(hb_memmon_cb cb, char *why, size_t n)
{
    if (why && n)
        why[0] = 0;
    if (!cb) {
        why_set(why, n, "memory monitor: no callback given");
        return -1;
    }
    if (atomic_load(&M.state) == ST_RUNNING) { /* keep M.desc */
        hb_why(why, n, "memory monitor already started");
        return -1;
    }
    return 0;
}

/* UFFDIO_API on a fresh fd: 0 with *api; -1 no fd (why says why); -2 the
 * API call refused our features (errno; the fd is closed). */
static int uffd_api(unsigned long long features, struct uffdio_api *api,
                    char *why, size_t n)
{
    M.fd = open_uffd(why, n);
    if (M.fd < 0)
        return -1;
    memset(api, 0, sizeof *api);
    api->api = UFFD_API;
    api->features = features;
    if (ioctl(M.fd, UFFDIO_API, api) == 0 &&
        (api->features & NEEDED_EVENTS) == NEEDED_EVENTS)
        return 0;
    {
        int e = errno;

        close(M.fd);
        M.fd = -1;
        errno = e;
    }
    return -2;
}

/* Opens the userfaultfd with the events we need.  (Not WP_ASYNC, Linux
 * >= 6.7, which would let write-protect mode register file-backed memory
 * and SysV shm: watch refuses those anyway, see private_anon.) */
static int negotiate_uffd(char *why, size_t n)
{
    struct uffdio_api api;
    struct stat st;
    int rc = uffd_api(NEEDED_EVENTS, &api, why, n);

    if (rc == -1)
        return -1;
    if (rc == -2) {
        why_set(why, n,
                "memory monitor unavailable: UFFDIO_API with unmap/remove/"
                "remap events: %s (needs Linux >= 4.11)",
                strerror(errno));
        return -1;
    }
    if (fstat(M.fd, &st) == 0) {
        M.fd_dev = st.st_dev;
        M.fd_ino = st.st_ino;
    }
    atomic_store(&M.broken, 0);
    if (!(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
        why_set(why, n,
                "memory monitor unavailable: userfaultfd has no write-protect "
                "registration (needs Linux >= 5.7)");
        close(M.fd);
        M.fd = -1;
        return -1;
    }
    return 0;
}

/* The stop eventfd, the probe page and the watch table. */
static int make_resources(char *why, size_t n)
{
    M.wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    M.probe = mmap(NULL, M.page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (M.probe == MAP_FAILED)
        M.probe = NULL;
    if (M.wakefd < 0 || !M.probe || seg_reserve(TABLE_INITIAL) != 0) {
        why_set(why, n, "memory monitor: eventfd/table: %s", strerror(errno));
        teardown(0);
        return -1;
    }
    return 0;
}

/* Fresh counters and rings, then the thread (callbacks still off). */
static int run_thread(hb_memmon_cb cb, void *ctx, int muted, char *why,
                      size_t n)
{
    int r;

    atomic_store(&M.dead_head, 0);
    atomic_store(&M.dead_tail, 0);
    atomic_store(&M.dead_overflow, 0);
    atomic_store(&M.seq, 0);
    atomic_store(&M.inflight, 0);
    atomic_store(&M.deliver, 0);
    atomic_store(&M.muted, muted);
    M.cb = cb;
    M.ctx = ctx;
    M.owner = getpid();
    M.forked = 0;
    pthread_once(&atfork_once, atfork_register);
    atomic_store(&M.state, ST_RUNNING);
    r = start_thread();
    if (r != 0) {
        why_set(why, n, "memory monitor: pthread_create: %s", strerror(r));
        teardown(0);
        return -1;
    }
    return 0;
}

/* The self-test; on failure everything is torn down, keeping its reason. */
static int checked_self_test(char *why, size_t n)
{
    char keep[sizeof M.desc];

    if (self_test(why, n) == 0)
        return 0;
    memcpy(keep, M.desc, sizeof keep);
    teardown(1);
    memcpy(M.desc, keep, sizeof keep);
    return -1;
}

static void describe_running(int muted)
{
    hb_why(M.desc, sizeof M.desc,
           "userfaultfd unmap/remove/remap events on watched ranges "
           "(write-protect-mode registration%s; watchable: private "
           "anonymous memory; hb_memmon_sync by %s), shmdt/shmat "
           "interposed%s",
           M.user_mode_only ? ", user-mode-only" : "",
           atomic_load(&M.probe_ok) ? "mmap_changing probe" : "poll",
           muted ? "; MUTED (debug: callbacks dropped)" : "");
}

int hb_memmon_start(hb_memmon_cb cb, void *ctx, unsigned flags, char *why,
                    size_t whylen)
{
    int muted = (flags & HB_MEMMON_F_MUTED) != 0;

    if (check_start(cb, why, whylen))
        return -1;
    M.page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (negotiate_uffd(why, whylen) || make_resources(why, whylen) ||
        run_thread(cb, ctx, muted, why, whylen) ||
        checked_self_test(why, whylen))
        return -1;
    hb_memmon__shm_init();
    counters_reset();
    describe_running(muted);
    atomic_store_explicit(&M.deliver, 1, memory_order_release);
    return 0;
}

void hb_memmon_stop(void)
{
    if (atomic_load(&M.state) != ST_RUNNING)
        return;
    if (getpid() != M.owner) { /* child made without fork handlers */
        atfork_child();
        return;
    }
    teardown(1);
    snprintf(M.desc, sizeof M.desc, "memory monitor stopped");
}

int hb_memmon_active(void)
{
    return atomic_load(&M.state) == ST_RUNNING && !atomic_load(&M.broken);
}

void hb_memmon_set_muted(int muted)
{
    atomic_store(&M.muted, muted ? 1 : 0);
}

void hb_memmon_debug_delays(unsigned wake_us, unsigned dispatch_us)
{
    atomic_store(&M.wake_delay_us, wake_us);
    atomic_store(&M.dispatch_delay_us, dispatch_us);
}

const char *hb_memmon_describe(void)
{
    return M.desc[0] ? M.desc : "memory monitor not started";
}

void hb_memmon_stats(struct hb_memmon_stats *out)
{
    uint64_t bytes = 0;

    memset(out, 0, sizeof *out);
    out->unmap_events = atomic_load(&C.unmap);
    out->remove_events = atomic_load(&C.remove);
    out->remap_events = atomic_load(&C.remap);
    out->fault_events = atomic_load(&C.fault);
    out->shmdt_hooks = atomic_load(&C.shmdt);
    out->shmat_hooks = atomic_load(&C.shmat);
    out->callbacks = atomic_load(&C.callbacks);
    out->muted = atomic_load(&C.muted);
    out->watch_calls = atomic_load(&C.watch);
    out->watch_failures = atomic_load(&C.watch_fail);
    out->unwatch_calls = atomic_load(&C.unwatch);
    out->unregisters = atomic_load(&C.unreg);
    out->dead_skips = atomic_load(&C.dead_skip);
    out->strict_probe_stuck = atomic_load(&C.probe_stuck);
    out->filtered_events = atomic_load(&C.filtered);
    pthread_mutex_lock(&M.lock);
    for (size_t i = 0; i < M.nsegs; i++)
        if (!M.segs[i].dead)
            bytes += M.segs[i].end - M.segs[i].start;
    pthread_mutex_unlock(&M.lock);
    out->watched_bytes = bytes;
}
