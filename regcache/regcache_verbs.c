/* See regcache_verbs.h. */
#include "regcache_verbs.h"

#include "memmon.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include "util/memlock.h"

int hb_regcache_verbs_access(void)
{
    return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
           IBV_ACCESS_REMOTE_READ;
}

/* Once fork protection is on in the process (ibv_fork_init: UCX calls it
 * by default, so under MPICH and Open MPI's pml ucx it is; or
 * RDMAV_FORK_SAFE), rdma-core 44's ibv_reg_mr applies MADV_DONTFORK to the
 * registered pages.  VM_DONTCOPY is per VMA, so that splits the
 * application's mapping around every cached registration: its mremap of
 * the whole mapping fails with EFAULT, and a forked child lacks those
 * pages.  When the kernel copies pinned pages at fork (Linux >= 5.13,
 * IBV_FORK_UNNEEDED) the advice protects nothing: take it back.  (A
 * no-op, no split, where it was not applied.)  Older kernels need it;
 * there the split stays (memmon.h, limits). */
static void undo_dontfork(void *addr, size_t len)
{
    if (ibv_is_fork_initialized() == IBV_FORK_UNNEEDED)
        (void)madvise(addr, len, MADV_DOFORK); /* EINVAL on VM_IO: fine */
}

/* ibv_reg_mr reports "memlock exhausted" as ENOMEM (sometimes EAGAIN or
 * EPERM from the pinning code); the cache treats ENOMEM/EAGAIN as "evict
 * and retry", so EPERM from pinning is mapped there too. */
static int verbs_reg(void *ctx, void *addr, size_t len, void **handle)
{
    struct ibv_mr *mr =
        ibv_reg_mr((struct ibv_pd *)ctx, addr, len, hb_regcache_verbs_access());
    if (!mr) {
        int err = errno ? errno : ENOMEM;
        return -(err == EPERM ? ENOMEM : err);
    }
    undo_dontfork(addr, len);
    *handle = mr;
    return 0;
}

static void verbs_dereg(void *ctx, void *handle)
{
    (void)ctx;
    ibv_dereg_mr((struct ibv_mr *)handle);
}

const struct hb_regcache_ops hb_regcache_verbs_ops = {verbs_reg, verbs_dereg};

/* Watch first: a change that lands between the watch and the pinning is
 * reported, and the cache drops a registration that an invalidation
 * overlapped while it was being made. */
static int watched_reg(void *ctx, void *addr, size_t len, void **handle)
{
    int rc = hb_memmon_watch(addr, len);
    if (rc)
        return rc == -ENOMEM ? -ENOMEM
                             : -EFAULT; /* unwatchable: do not cache */
    rc = verbs_reg(ctx, addr, len, handle);
    if (rc)
        hb_memmon_unwatch(addr, len);
    return rc;
}

static void watched_dereg(void *ctx, void *handle)
{
    struct ibv_mr *mr = handle;
    void *addr = mr->addr;
    size_t len = mr->length;
    verbs_dereg(ctx, handle);
    hb_memmon_unwatch(addr, len);
}

const struct hb_regcache_ops hb_regcache_verbs_watched_ops = {watched_reg,
                                                              watched_dereg};

/* The split of RLIMIT_MEMLOCK with the transport is decided in util/memlock.h. */
size_t hb_regcache_default_max_bytes(void)
{
    return hb_memlock_cache_share(hb_memlock_limit());
}
