/* shmdt() and shmat(SHM_REMAP) interposers for the memory monitor.
 *
 * The kernel raises no userfaultfd event for either: shmdt unmaps the
 * segment without the unmap-event list, and shmat maps over an existing
 * range the same way.  glibc never calls them internally, so defining
 * the symbols here (exported from libhotbuf.so, which is preloaded) sees
 * every call made through the dynamic linker.  Not seen: raw syscalls,
 * and callers whose GOT entry another library redirected past us (UCX
 * in "reloc" hook mode).
 *
 * The hooks bracket the syscall with hb_memmon__hook_enter/leave so that
 * hb_memmon_sync() on another thread waits for the callback.  The extent
 * of the detached segment comes from /proc/self/maps, read before the
 * syscall with a stack buffer: no allocation, no locks (async-signal-safe).
 * When it cannot be read, everything from the address up is reported.
 * Before hb_memmon_start (and in forked children) the hooks only forward,
 * to the next definition resolved at load time (dlsym RTLD_NEXT).
 */
#define _GNU_SOURCE

#include "memmon_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HB_EXPORT __attribute__((visibility("default")))

typedef int (*shmdt_fn)(const void *);
typedef void *(*shmat_fn)(int, const void *, int);

static _Atomic(shmdt_fn) next_shmdt;
static _Atomic(shmat_fn) next_shmat;

HB_EXPORT int shmdt(const void *addr);
HB_EXPORT void *shmat(int shmid, const void *addr, int flags);

/* Resolved when the library loads, so that even before hb_memmon_start
 * calls reach the next definition (libc's, perhaps patched by UCX's own
 * memory hooks) and not a bare syscall that would bypass those. */
__attribute__((constructor)) static void shm_resolve_early(void)
{
    hb_memmon__shm_init();
}

void hb_memmon__shm_init(void)
{
    void *f;

    if (!atomic_load(&next_shmdt)) {
        f = dlsym(RTLD_NEXT, "shmdt");
        if (f && f != (void *)shmdt)
            atomic_store(&next_shmdt, (shmdt_fn)f);
    }
    if (!atomic_load(&next_shmat)) {
        f = dlsym(RTLD_NEXT, "shmat");
        if (f && f != (void *)shmat)
            atomic_store(&next_shmat, (shmat_fn)f);
    }
}

static int call_shmdt(const void *addr)
{
    shmdt_fn f = atomic_load_explicit(&next_shmdt, memory_order_acquire);

    return f ? f(addr) : (int)syscall(SYS_shmdt, addr);
}

static void *call_shmat(int shmid, const void *addr, int flags)
{
    shmat_fn f = atomic_load_explicit(&next_shmat, memory_order_acquire);

    return f ? f(shmid, addr, flags)
             : (void *)syscall(SYS_shmat, shmid, addr, flags);
}

/* ---- /proc/self/maps, allocation-free ------------------------------- */

struct extent {
    uintptr_t addr; /* segment attached here */
    int found;
    unsigned long inode; /* SysV shm: inode number == shmid */
    uintptr_t lo, hi;
};

static uintptr_t parse_hex(const char **pp, const char *end)
{
    uintptr_t v = 0;
    const char *p = *pp;

    for (; p < end; p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else
            break;
        v = v * 16 + (uintptr_t)d;
    }
    *pp = p;
    return v;
}

static const char *skip_field(const char *p, const char *end)
{
    while (p < end && *p != ' ')
        p++;
    while (p < end && *p == ' ')
        p++;
    return p;
}

/* "start-end perms offset dev inode   path" */
static void extent_line(struct extent *x, const char *p, const char *end)
{
    uintptr_t s, e;
    unsigned long ino = 0;

    s = parse_hex(&p, end);
    if (p >= end || *p != '-')
        return;
    p++;
    e = parse_hex(&p, end);
    p = skip_field(p, end); /* to perms */
    p = skip_field(p, end); /* to offset */
    p = skip_field(p, end); /* to dev */
    p = skip_field(p, end); /* to inode */
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        ino = ino * 10 + (unsigned long)(*p - '0');
    while (p < end && *p == ' ')
        p++;
    if (end - p < 5 || memcmp(p, "/SYSV", 5) != 0)
        return;
    if (!x->found) {
        if (s == x->addr) {
            x->found = 1;
            x->inode = ino;
            x->lo = s;
            x->hi = e;
        }
    } else if (ino == x->inode && e > x->hi) {
        x->hi = e; /* the rest of the segment (split by mprotect etc.) */
    }
}

/* Finds the SysV segment attached at addr.  Returns 1 and its extent, 0
 * if there is none, -1 if the maps could not be read. */
static int shm_extent(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    struct extent x = {addr, 0, 0, 0, 0};
    char buf[4096];
    size_t have = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        size_t off = 0;

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        for (;;) {
            char *nl = memchr(buf + off, '\n', have - off);
            if (!nl)
                break;
            extent_line(&x, buf + off, nl);
            off = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + off, have - off);
        have -= off;
        if (have == sizeof buf)
            have = 0; /* absurdly long line: skip it */
    }
    close(fd);
    if (!x.found)
        return 0;
    *lo = x.lo;
    *hi = x.hi;
    return 1;
}

/* ---- the interposers ------------------------------------------------- */

HB_EXPORT int shmdt(const void *addr)
{
    uintptr_t lo = 0, hi = 0;
    int have, r, err;

    if (!hb_memmon__hook_enter())
        return call_shmdt(addr);
    have = shm_extent((uintptr_t)addr, &lo, &hi);
    if (have < 0) { /* unknown size: everything from addr up */
        lo = (uintptr_t)addr;
        hi = UINTPTR_MAX;
    }
    r = call_shmdt(addr);
    err = errno;
    if (r == 0 && have != 0)
        hb_memmon__hook_report(HB_MEMMON_HOOK_SHMDT, lo, hi);
    hb_memmon__hook_leave();
    errno = err;
    return r;
}

HB_EXPORT void *shmat(int shmid, const void *addr, int flags)
{
    uintptr_t lo = 0, hi = 0;
    void *r;
    int err, have;

    if (!(flags & SHM_REMAP) || !hb_memmon__hook_enter())
        return call_shmat(shmid, addr, flags);
    r = call_shmat(shmid, addr, flags);
    err = errno;
    if (r != (void *)-1) {
        /* What was mapped at [r, r + size) before is gone. */
        have = shm_extent((uintptr_t)r, &lo, &hi);
        if (have <= 0) {
            lo = (uintptr_t)r;
            hi = UINTPTR_MAX;
        }
        hb_memmon__hook_report(HB_MEMMON_HOOK_SHMAT, lo, hi);
    }
    hb_memmon__hook_leave();
    errno = err;
    return r;
}
