/* See memlock.h. */
#include "memlock.h"

#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* hotbuf's share is HOTBUF_PARTS of PARTS (the MPI keeps the rest); of it
 * the cache has CACHE_PARTS, the transport what is left. */
#define PARTS 8
#define HOTBUF_PARTS 4
#define CACHE_PARTS 3

int hb_memlock_can_exceed(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0}};

    if (syscall(SYS_capget, &hdr, data) != 0)
        return 0;
    return (data[CAP_IPC_LOCK / 32].effective >> (CAP_IPC_LOCK % 32)) & 1;
}

size_t hb_memlock_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        hb_memlock_can_exceed())
        return 0;
    return rl.rlim_cur ? (size_t)rl.rlim_cur : 1;
}

size_t hb_memlock_hotbuf_share(size_t limit)
{
    return limit / PARTS * HOTBUF_PARTS;
}

size_t hb_memlock_cache_share(size_t limit)
{
    return limit / PARTS * CACHE_PARTS;
}

size_t hb_memlock_transport_share(size_t limit)
{
    return hb_memlock_hotbuf_share(limit) - hb_memlock_cache_share(limit);
}

size_t hb_memlock_limit_for_transport(size_t pinned)
{
    size_t parts = HOTBUF_PARTS - CACHE_PARTS;
    return (pinned + parts - 1) / parts * PARTS;
}
