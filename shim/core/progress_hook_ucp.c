/* MPICH ch4:ucx's progress engine polls UCX with ucp_worker_progress() on
 * every pass, through the PLT of libmpich: this library, preloaded,
 * defines the symbol, calls the real one (the next definition, libucp's)
 * and then, once enabled, hotbuf's progress hook.  The hook runs after the
 * real call has returned: UCX forbids ucp_worker_progress() from inside
 * its own callbacks, and hotbuf's callbacks may drive MPI's progress
 * again (see progress.h).  Until enabled (and in an Open MPI job, whose
 * hook is opal_progress) it only forwards. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "progress_hook_int.h"

typedef unsigned (*ucp_progress_fn)(void *worker);

/* Static: UCX's caller has no way to hand us a context. */
static struct {
    _Atomic(ucp_progress_fn) real;
    atomic_int on;
} ucp = {0};

static ucp_progress_fn real_progress(void)
{
    ucp_progress_fn f = atomic_load_explicit(&ucp.real, memory_order_relaxed);
    if (!f) { /* a race resolves the same pointer twice: harmless */
        f = (ucp_progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
        atomic_store_explicit(&ucp.real, f, memory_order_relaxed);
    }
    return f;
}

/* The interposed UCX entry point (ucp/api/ucp.h: unsigned
 * ucp_worker_progress(ucp_worker_h)); the worker stays opaque here. */
__attribute__((visibility("default"))) unsigned ucp_worker_progress(void *w)
{
    ucp_progress_fn f = real_progress();
    unsigned n = f ? f(w) : 0;
    if (atomic_load_explicit(&ucp.on, memory_order_relaxed))
        hb_progress_hook_pass();
    return n;
}

int hb_ucp_hook_available(void)
{
    return real_progress() != NULL;
}

void hb_ucp_hook_enable(int on)
{
    atomic_store_explicit(&ucp.on, on, memory_order_relaxed);
}
