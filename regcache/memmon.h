/* hotbuf memory-change monitor: tells the registration cache when a range
 * it may have registered stops mapping the memory that was registered.
 *
 * ==== Design note =========================================================
 *
 * Mechanism: userfaultfd non-cooperative events on the watched (=
 * registered) ranges, read by one monitor thread, plus interposition of
 * shmdt() and shmat(SHM_REMAP), the two calls the kernel does not report.
 * hb_memmon_watch() does UFFDIO_REGISTER in write-protect mode and never
 * arms write protection, so the fd carries only events: UNMAP (munmap,
 * mremap shrink, brk/sbrk shrink, mmap MAP_FIXED over the range), REMOVE
 * (madvise DONTNEED/FREE/REMOVE) and REMAP (mremap move).  The kernel's mm
 * code raises them, so every caller is seen: glibc's internal __munmap
 * (free), __mremap (realloc), __madvise and inline brk (malloc_trim, heap
 * trimming), ld.so, other allocators, raw syscalls.  The kernel makes the
 * changing thread wait until the monitor has read() the event.
 *
 * Whole VMAs.  The registration covers every VMA (mapping) the watched
 * range touches, whole, so it never splits one: a split would change the
 * application's system calls (mremap of a whole mapping fails with EFAULT
 * when its old range spans two VMAs).  Events elsewhere in those VMAs are
 * dropped by the monitor thread (stats.filtered_events).  The VMAs are
 * unregistered, whole, when their last watched page is unwatched.
 *
 * Ordering.  read() itself wakes the waiting thread, before our callback
 * runs; so the monitor keeps `seq` odd from before read() until after the
 * callbacks.  A thread that gets the same addresses back from the kernel
 * without synchronising with the one that gave them up (A: free(1 MiB) =
 * munmap; B: malloc = mmap at the same address) can also run while A's
 * event is unread or not even queued (UNMAP is queued after the unmap):
 * with 4 threads doing that, thousands of stale hits per 12000 lookups
 * (test_memmon_regcache).  hb_memmon_sync() therefore first waits for the
 * context's mmap_changing count, which the kernel raises under mmap_lock
 * before it changes the pages and lowers after the read -- a no-op
 * write-protect ioctl fails with EAGAIN while it is raised (one ioctl,
 * ~0.4 us) -- then for `seq` to be even.  hb_memmon_sync_local() waits
 * only for `seq` (an atomic load): enough when the lookup is ordered after
 * the change by the caller's own synchronisation (same thread).
 *
 * Why not patch glibc's syscall wrappers (UCX "bistro", the Open MPI and
 * libfabric patchers)?  Not composable: UCX -- the RDMA transport of
 * Debian's Open MPI and MPICH -- overwrites the same entry points with a
 * jump to its own hook, which then issues the syscall itself, so whoever
 * patches last silently blinds the other's cache.  It also depends on
 * each glibc build's machine code, needs writable libc text, and still
 * misses raw syscalls.  Symbol interposition (LD_PRELOAD munmap, GOT
 * patching) misses glibc's internal calls altogether.  ODP (the NIC
 * follows the page tables) needs hardware support rxe lacks on Linux 6.1.
 *
 * Limits (each reported, none silent):
 *  - start fails (one-line reason) if userfaultfd is not permitted: we
 *    pass UFFD_USER_MODE_ONLY (Linux >= 5.11), which works unprivileged
 *    with Debian's vm.unprivileged_userfaultfd=0; seccomp profiles of
 *    containers usually forbid the syscall.  Needs write-protect
 *    registration (Linux >= 5.7).
 *  - watch fails (do not cache) for anything but private anonymous memory
 *    (the heap, stacks, MAP_PRIVATE|MAP_ANONYMOUS, /dev/zero and hugetlb
 *    mapped private): the pages of shared or file-backed memory (memfd,
 *    tmpfs, SysV shm, MAP_SHARED anonymous, any file) can be replaced with
 *    no event in this process -- the file truncated or a hole punched in
 *    it, or another process's madvise(MADV_REMOVE) -- and a pinned
 *    registration would keep the old ones.  Also when /proc/self/maps
 *    cannot be read, and for ranges another userfaultfd owns (EBUSY).
 *  - While registered, a VMA does not merge with neighbours (VM_UFFD_WP
 *    and the context are per VMA): a mapping the application places
 *    right next to a watched one stays a separate VMA, so an mremap of
 *    both as one range fails with EFAULT where, without hotbuf, the
 *    kernel might have merged them.  Parts the application splits off a
 *    watched VMA (mprotect) or moves (mremap) stay registered after the
 *    unwatch (events there are filtered; merging with them is blocked).
 *  - Not seen: a raw shmat(SHM_REMAP) syscall over a watched range (it
 *    bypasses the shmat() hook), remap_file_pages.  File-level changes
 *    cannot reach watched memory (above).
 *  - Each munmap/madvise/mremap of a watched range costs its caller a
 *    round trip through the monitor thread (microseconds); that thread
 *    blocks all signals, never allocates, never touches watched memory.
 *  - If the application closes our fd, the monitor invalidates
 *    everything once ([0, UINTPTR_MAX)), goes inactive, watch fails.
 *
 * ==== Contract ============================================================
 *
 * Callback cb(ctx, addr, len): called with a range covering each change of
 * a watched range (often larger; also for never-watched ranges), on the
 * monitor thread or, for shmdt/shmat, on the caller's thread, maybe in a
 * signal handler.  It must not allocate, block or take locks;
 * hb_regcache_invalidate() qualifies.
 *
 * Threads: start/stop once each, single-threaded.  watch, unwatch, sync,
 * sync_local, stats, set_muted are thread-safe; watch/unwatch take a
 * mutex the event path never takes and may allocate (call them from the
 * cache's reg/dereg callbacks, not from signal handlers).
 *
 * Order of use: start; watch(range) BEFORE pinning it (unwatch if pinning
 * fails); unwatch(same range) after unpinning; hb_memmon_sync() before
 * every lookup (at least before using a hit: a miss registers the current
 * pages anyway); stop before destroying the cache.  If watch fails, do not
 * cache that registration.
 *
 * fork: the parent is unaffected.  In the child the monitor is stopped (no
 * thread, fd closed, watch returns -ECHILD, active returns 0; the kernel
 * does not copy registrations); the child may call start again.  The fd
 * is close-on-exec; vfork children share the parent's monitor.
 *
 * Debug switch: HB_MEMMON_F_MUTED at start or hb_memmon_set_muted(1):
 * events are still read and counted (stats.muted) but no callback runs --
 * for integrity tests that must show stale data without the monitor.
 * Whether to start the monitor at all is the caller's decision (hotbuf's
 * HOTBUF_MEMMON is parsed by shim/config, not here).
 */
#ifndef HOTBUF_REGCACHE_MEMMON_H
#define HOTBUF_REGCACHE_MEMMON_H

#include <stddef.h>
#include <stdint.h>

typedef void (*hb_memmon_cb)(void *ctx, const void *addr, size_t len);

/* Starts the monitor: opens the userfaultfd, starts the thread, and
 * self-tests munmap, madvise and mremap events on a scratch mapping.
 * Returns 0, or -1 with a one-line reason in why (may be NULL) when the
 * mechanism is unavailable; the caller should then register
 * only memory hotbuf allocated itself. */
int hb_memmon_start(hb_memmon_cb cb, void *ctx, unsigned flags, char *why,
                    size_t whylen);

/* hb_memmon_start flags. */
#define HB_MEMMON_F_MUTED 1u /* start muted (debug, see above) */

/* Stops the thread, unregisters every watched range, closes the fd.
 * Callbacks may run until it returns, never after. */
void hb_memmon_stop(void);

/* 1 while started and working in this process (0 in a forked child, or
 * after the fd was closed behind our back). */
int hb_memmon_active(void);

/* Watches the pages covering [addr, addr+len).  0, or a negative errno:
 * -EINVAL (not watchable: not private anonymous, holes or unmapped),
 * -EBUSY (another userfaultfd owns it), -ENOMEM, -ENODEV (not started),
 * -ECHILD (forked child), -EBADF (fd closed behind our back).  Watches
 * nest: pages stay watched until every watch covering them is undone. */
int hb_memmon_watch(const void *addr, size_t len);

/* Undoes one successful hb_memmon_watch(addr, len) (same arguments). */
void hb_memmon_unwatch(const void *addr, size_t len);

/* Memory the MPI library allocated and keeps until a free the caller sees
 * (MPI_Win_allocate's window, often shared memory among the node's
 * ranks): watch accepts shared memory inside [addr, addr+len) too.  Its
 * pages could only be replaced through the MPI's own file, which no
 * correct application truncates or punches.  0, or -ENOMEM.  Undone by
 * hb_memmon_untrust with the same arguments. */
int hb_memmon_trust(const void *addr, size_t len);
void hb_memmon_untrust(const void *addr, size_t len);

/* Returns once every change of a watched range that began before the
 * call has been reported to the callback: no unmap/madvise/mremap of ours
 * in progress in the kernel (including ones whose event is not queued
 * yet), no event being dispatched, no shmdt/shmat hook between syscall and
 * callback.  One ioctl when idle (poll() on kernels where the probe does
 * not work).  Call it before every cache lookup.  Preserves errno.  Not
 * from the callback, nor from a signal handler that may interrupt
 * shmdt/shmat. */
void hb_memmon_sync(void);

/* The cheap part of hb_memmon_sync(): waits only until no event already
 * read is being dispatched and no hook is in flight (atomic loads).
 * Enough when the caller's own synchronisation orders the lookup after
 * the change (same thread; or after learning from the changing thread
 * that its munmap returned).  Not enough for addresses that another thread
 * gave back to the kernel and this one got back from it. */
void hb_memmon_sync_local(void);

/* Earlier name of hb_memmon_sync(), kept for existing callers. */
void hb_memmon_sync_strict(void);

/* Debug: 1 = read events but drop callbacks (unsafe; tests only). */
void hb_memmon_set_muted(int muted);

struct hb_memmon_stats {
    uint64_t unmap_events;  /* UFFD_EVENT_UNMAP: munmap, brk, mremap shrink */
    uint64_t remove_events; /* UFFD_EVENT_REMOVE: madvise */
    uint64_t remap_events;  /* UFFD_EVENT_REMAP: mremap move */
    uint64_t fault_events;  /* page faults (never expected) */
    uint64_t shmdt_hooks;   /* shmdt() interposer reports */
    uint64_t shmat_hooks;   /* shmat(SHM_REMAP) interposer reports */
    uint64_t callbacks;     /* callback invocations */
    uint64_t muted;         /* reports dropped by the debug switch */
    uint64_t watch_calls, watch_failures, unwatch_calls;
    uint64_t unregisters;        /* UFFDIO_UNREGISTER calls made by unwatch */
    uint64_t dead_skips;         /* unregisters skipped: pages already gone */
    uint64_t strict_probe_stuck; /* hb_memmon_sync fell back to poll() */
    uint64_t watched_bytes;      /* pages watched now (by the table) */
    uint64_t filtered_events;    /* events outside every watched range (in a
                                 VMA registered whole), dropped */
};

void hb_memmon_stats(struct hb_memmon_stats *out);

/* One line describing the mechanism in use (or why it is not). */
const char *hb_memmon_describe(void);

/* Test hooks: sleep before reading a woken fd (simulates a monitor thread
 * that is slow to be scheduled) and between read() and dispatch. */
void hb_memmon_debug_delays(unsigned wake_us, unsigned dispatch_us);

#endif
