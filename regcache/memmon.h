/* hotbuf memory-change monitor: tells the registration cache when a range
 * it may have registered stops mapping the memory that was registered.
 *
 * ==== Design note =========================================================
 *
 * Mechanism: userfaultfd non-cooperative events, on the registered ranges
 * only, read by one monitor thread; plus symbol interposition of shmdt()
 * and shmat(SHM_REMAP), the two calls the kernel does not report.
 *
 *   hb_memmon_watch(addr, len) does UFFDIO_REGISTER on the pages (mode WP:
 *   write-protect tracking that is never armed, so no page fault is ever
 *   delivered to us -- we only want the events).  The fd asks for
 *   UFFD_FEATURE_EVENT_UNMAP (munmap, mremap shrink, brk/sbrk shrink,
 *   mmap(MAP_FIXED) over the range), EVENT_REMOVE (madvise DONTNEED, FREE,
 *   REMOVE) and EVENT_REMAP (mremap move; the kernel moves the
 *   registration with the pages).  These are raised by the kernel's mm
 *   code, so every caller is caught: glibc's internal __munmap in free(),
 *   __mremap in realloc(), sbrk/madvise in malloc_trim and heap trimming,
 *   ld.so, other allocators, raw syscall instructions.  The kernel puts the
 *   thread doing munmap/madvise/mremap/brk to sleep until the monitor has
 *   read() the event (madvise: before the pages are zapped; munmap/mremap:
 *   after the unmap, before the syscall returns).  The monitor calls the
 *   callback (hb_regcache_invalidate) right after the read.
 *
 * Ordering ("before any later lookup can reuse the registration"):
 *   - The kernel completes the event inside read(), so the unmapping
 *     thread can run again a moment before the callback has run.  The
 *     monitor therefore bumps a sequence counter to odd *before* read() and
 *     back to even after the callbacks; hb_memmon_sync() waits while it is
 *     odd.  Calling hb_memmon_sync() before each cache lookup makes every
 *     lookup that follows the unmapping syscall on the same thread, or on
 *     a thread that synchronised with it afterwards, see the invalidation.
 *   - A thread that has *not* synchronised with the unmapping thread can
 *     map the freed addresses again (e.g. thread A free()s a 1 MiB block =
 *     munmap, thread B malloc()s = mmap at the same address) while A's
 *     event still waits in the queue, unread.  hb_memmon_sync_strict()
 *     closes that window too: it also polls the fd and waits until the
 *     queue is empty and dispatched (one poll() syscall, ~0.3 us).  Use it
 *     when a lookup hits (a miss registers the new pages anyway), or always
 *     when the job has several threads that allocate and free buffers.
 *   - shmdt/shmat hooks bracket the syscall with an in-flight counter
 *     that both sync functions wait on.
 *
 * Why not patching glibc's syscall wrappers (UCX "bistro"; Open MPI's and
 * libfabric's patchers):  it works without privileges and calls the hook
 * synchronously, but (1) it is not composable: UCX (the default transport
 * of Open MPI and MPICH on RDMA hardware) overwrites the first bytes of
 * munmap/mremap/madvise/brk/shmat/shmdt with its own jump whose hook then
 * issues the syscall itself, so whichever library patches last silently
 * disables the other's monitor -- if hotbuf patched after UCX, UCX's own
 * cache would serve stale data; if before, hotbuf's would; (2) it depends
 * on the exact machine code of each glibc build (endbr64, syscall
 * template, CET), needs libc's text made writable (SELinux execmod),
 * and must not race with a thread executing the prologue; (3) it still
 * misses raw syscalls (tcmalloc/LSS, Go, io in other runtimes),
 * ld.so's private munmap (dlclose), and glibc's internal mmap(MAP_FIXED)
 * used by heap shrinking unless mmap is patched as well.  Plain symbol
 * interposition (LD_PRELOAD munmap, or GOT patching as in libfabric's
 * memhooks) misses glibc's internal calls entirely: free() -> __munmap,
 * realloc() -> __mremap, trimming -> __madvise / sbrk's inline brk.
 * Other options: RDMA on-demand paging (ODP) makes the NIC follow the
 * page tables and needs no monitor, but needs mlx5-class hardware (rxe on
 * Debian 12's 6.1 kernel has none); seccomp RET_TRAP / syscall user
 * dispatch catch every syscall but are inherited by exec'd children
 * (which then die on SIGSYS) or trap every syscall; kdreg2 needs an
 * out-of-tree module.
 *
 * Failure modes of userfaultfd, and what we do:
 *   - Not permitted: vm.unprivileged_userfaultfd=0 (Debian's default)
 *     refuses unprivileged users unless UFFD_USER_MODE_ONLY is given
 *     (Linux >= 5.11).  We always pass it: we never resolve faults, so
 *     kernel-mode faults do not matter.  Older kernels (EINVAL) are
 *     retried without it (needs root/CAP_SYS_PTRACE or the sysctl at 1),
 *     then /dev/userfaultfd is tried.  Container seccomp profiles (Docker,
 *     Kubernetes RuntimeDefault) usually return EPERM: start fails with a
 *     one-line reason and the caller falls back.
 *   - WP-mode registration needs Linux >= 5.7 (anonymous memory) and
 *     5.19 (shmem, hugetlb).  MISSING mode (what libfabric uses) would
 *     deliver page faults on pages zapped by madvise; with
 *     UFFD_USER_MODE_ONLY a syscall touching such a page (read() into a
 *     freshly trimmed heap buffer) would fail with EFAULT.  We refuse to
 *     start without WP support.
 *   - Only anonymous, shmem (incl. SysV, memfd, /dev/shm) and hugetlb
 *     mappings can be watched, not file-backed ones (static .data of an
 *     executable, mmap'ed files): hb_memmon_watch() fails and the caller
 *     must not cache that range.  hugetlb ranges need huge-page-aligned
 *     registration: watch fails on them (not cached).  A range another
 *     userfaultfd already owns (e.g. libfabric's uffd monitor, CRIU)
 *     fails with EBUSY: not cached.
 *   - The kernel does not report shmdt() or shmat(SHM_REMAP) (it passes
 *     no userfaultfd list), nor file-level changes (fallocate hole punch or
 *     ftruncate of a mapped memfd/tmpfs file, remap_file_pages).  shmdt and
 *     shmat are interposed here (memmon_shm.c); raw syscalls to them, or a
 *     library that redirects the application's GOT entry for shmdt (UCX in
 *     "reloc" hook mode), bypass that.
 *   - Every munmap/madvise/mremap of a watched range costs the caller a
 *     round trip through the monitor thread (a few microseconds).  If the
 *     monitor thread never runs, those callers hang (killable only), so it
 *     blocks every signal, never allocates and never touches watched
 *     memory, and the callback must return quickly.
 *   - Registration splits VMAs; watched ranges count against
 *     vm.max_map_count.  unwatch unregisters pages whose last watch goes.
 *   - UFFDIO_UNREGISTER also removes another userfaultfd's registration of
 *     the same pages (kernels up to at least 6.15).  We never unregister
 *     pages that an event told us were unmapped or moved.
 *
 * ==== Contract ============================================================
 *
 * Callback: void cb(void *ctx, const void *addr, size_t len) is called for
 * a range covering every change to a watched range (often larger: the
 * whole munmap/madvise argument).  It runs on the monitor thread, or, for
 * shmdt/shmat, on the thread that called them, possibly in a signal
 * handler.  It must not allocate, block, take a lock that application
 * code may hold, or touch memory it does not own; hb_regcache_invalidate()
 * qualifies.  It may be called for ranges that were never watched.
 *
 * Threads: start and stop are called once each, single-threaded (library
 * init/teardown), not concurrently with any other call.  watch, unwatch,
 * sync, sync_strict, stats and set_muted are thread-safe.  watch/unwatch
 * take an internal mutex (never taken on the event path) and may
 * allocate; call them from the cache's reg/dereg callbacks, not from
 * signal handlers.  sync/sync_strict must not be called from the callback
 * or from a signal handler that may interrupt shmdt/shmat.
 *
 * Order of use: start; for each registration: watch(range) BEFORE
 * pinning it (ibv_reg_mr), unwatch(same range) after deregistering it;
 * sync() (or sync_strict()) before every cache lookup; stop before
 * destroying the cache.  If watch fails, do not cache that registration.
 *
 * fork: the parent is unaffected.  In the child the monitor is stopped
 * (no thread, fd closed, no callbacks, watch fails with -ECHILD, active
 * returns 0); the kernel drops the child's registrations.  The child may
 * call hb_memmon_start again.  vfork/posix_spawn children share the
 * parent's monitor until they exec; the fd is close-on-exec.
 *
 * Debug switch: HOTBUF_MEMMON=off (or hb_memmon_set_muted(1)) keeps the
 * mechanism running but drops every callback (counted in stats.muted) --
 * for integrity tests that must show stale data appears without the
 * monitor.  HOTBUF_MEMMON=none makes start fail ("disabled"), as when the
 * mechanism is unavailable.  Unset or "on": normal.
 */
#ifndef HOTBUF_REGCACHE_MEMMON_H
#define HOTBUF_REGCACHE_MEMMON_H

#include <stddef.h>
#include <stdint.h>

typedef void (*hb_memmon_cb)(void *ctx, const void *addr, size_t len);

/* Starts the monitor: opens the userfaultfd, starts the thread, and
 * self-tests munmap, madvise and mremap events on a scratch mapping.
 * Returns 0, or -1 with a one-line reason in why (may be NULL) when the
 * mechanism is unavailable or disabled; the caller should then register
 * only memory hotbuf allocated itself. */
int hb_memmon_start(hb_memmon_cb cb, void *ctx, char *why, size_t whylen);

/* Stops the thread, unregisters every watched range, closes the fd.
 * Callbacks may run until it returns, never after. */
void hb_memmon_stop(void);

/* 1 while started in this process (0 in a forked child). */
int hb_memmon_active(void);

/* Watches the pages covering [addr, addr+len).  0, or a negative errno:
 * -EINVAL (not watchable: file-backed, hugetlb, holes or unmapped),
 * -EBUSY (another userfaultfd owns it), -ENOMEM, -ENODEV (not started),
 * -ECHILD (forked child).  Watches nest: pages stay watched until every
 * watch covering them has been undone. */
int hb_memmon_watch(const void *addr, size_t len);

/* Undoes one successful hb_memmon_watch(addr, len) (same arguments). */
void hb_memmon_unwatch(const void *addr, size_t len);

/* Returns once no event read so far is still being dispatched and no
 * shmdt/shmat hook is between its syscall and its callback.  One or two
 * atomic loads when idle. */
void hb_memmon_sync(void);

/* Like hb_memmon_sync(), and also waits until every event the kernel has
 * queued so far has been read and dispatched (one poll() syscall). */
void hb_memmon_sync_strict(void);

/* Debug: 1 = read events but drop callbacks (unsafe; tests only). */
void hb_memmon_set_muted(int muted);

struct hb_memmon_stats {
    uint64_t unmap_events;    /* UFFD_EVENT_UNMAP: munmap, brk, mremap shrink */
    uint64_t remove_events;   /* UFFD_EVENT_REMOVE: madvise */
    uint64_t remap_events;    /* UFFD_EVENT_REMAP: mremap move */
    uint64_t fault_events;    /* page faults (never expected) */
    uint64_t shmdt_hooks;     /* shmdt() interposer reports */
    uint64_t shmat_hooks;     /* shmat(SHM_REMAP) interposer reports */
    uint64_t callbacks;       /* callback invocations */
    uint64_t muted;           /* reports dropped by the debug switch */
    uint64_t watch_calls, watch_failures, unwatch_calls;
    uint64_t unregisters;     /* UFFDIO_UNREGISTER calls made by unwatch */
    uint64_t dead_skips;      /* unregisters skipped: pages already gone */
    uint64_t watched_bytes;   /* pages watched now (by the table) */
};

void hb_memmon_stats(struct hb_memmon_stats *out);

/* One line describing the mechanism in use (or why it is not). */
const char *hb_memmon_describe(void);

/* Test hooks: sleep before reading a woken fd (simulates a monitor thread
 * that is slow to be scheduled) and between read() and dispatch. */
void hb_memmon_debug_delays(unsigned wake_us, unsigned dispatch_us);

#endif
