/* Progress inside MPI: the hook that runs hotbuf's progress while the rank
 * sits in any blocking MPI call (see progress.h for the mechanisms and
 * what a callback may do from inside it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "progress_hook_int.h"

_Static_assert((HB_PROGRESS_HOOK_EVERY & (HB_PROGRESS_HOOK_EVERY - 1)) == 0,
               "a power of two: the pass counter is masked");

enum hook_mech { HOOK_NONE, HOOK_OPAL, HOOK_UCP };

typedef int (*opal_cb_fn)(void);
typedef int (*opal_reg_fn)(opal_cb_fn cb);

/* Static: MPI's progress engine calls the hook without a context. */
static struct {
    enum hook_mech mech; /* installed, until removed */
    int was_active;
    int probe; /* the test probe is registered */
    unsigned long calls, passes;
    opal_reg_fn opal_unregister;
    char status[160];
} hook;

void hb_progress_hook_pass(void)
{
    if (++hook.calls & (HB_PROGRESS_HOOK_EVERY - 1))
        return;
    if (hb_progress())
        hook.passes++;
}

/* Open MPI: called by opal_progress() on every pass; no events to count
 * for its idle yield (hotbuf's own waits yield by themselves). */
static int opal_hook(void)
{
    hb_progress_hook_pass();
    return 0;
}

static int install_opal(void)
{
    opal_reg_fn reg =
        (opal_reg_fn)dlsym(RTLD_DEFAULT, "opal_progress_register");
    opal_reg_fn unreg =
        (opal_reg_fn)dlsym(RTLD_DEFAULT, "opal_progress_unregister");
    if (!reg || !unreg)
        return 0;
    int rc = reg(opal_hook);
    if (rc != 0) {
        snprintf(hook.status, sizeof(hook.status),
                 "absent: opal_progress_register failed (%d)", rc);
        return -1;
    }
    hook.opal_unregister = unreg;
    hook.mech = HOOK_OPAL;
    return 1;
}

static int install_ucp(void)
{
    if (!hb_ucp_hook_available())
        return 0;
    hb_ucp_hook_enable(1);
    hook.mech = HOOK_UCP;
    return 1;
}

/* Does MPI's progress really reach the hook?  libucp may be loaded by an
 * MPI whose device does not poll it (an MPICH built for another device,
 * with UCX in the process for other reasons).  Probes on hotbuf's
 * communicator each run MPI's progress once, but not always opal_progress:
 * Open MPI's pml ucx calls it every opal_common_ucx_progress_iterations-th
 * poll (100 by default), so 64 probes found no hook there and pull, and
 * with it every grant, was off.  The loop stops at the first call. */
#define HOOK_PROBES 4096

static int hook_reached(MPI_Comm comm)
{
    unsigned long before = hook.calls;
    int flag;
    for (int i = 0; i < HOOK_PROBES && hook.calls == before; i++)
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag,
                    MPI_STATUS_IGNORE);
    return hook.calls != before;
}

static void set_status(const char *s)
{
    snprintf(hook.status, sizeof(hook.status), "%s", s);
}

static int choose_mechanism(MPI_Comm own)
{
    int rc = install_opal();
    if (rc < 0)
        return -1;
    if (!rc && !install_ucp()) {
        set_status(
            "absent: neither opal_progress_register (Open MPI) nor ucp_worker_progress "
            "(MPICH ch4:ucx) in this process");
        return -1;
    }
    if (!hook_reached(own)) {
        hb_progress_hook_remove();
        set_status(hook.status[0]
                       ? hook.status
                       : "absent: MPI's progress does not reach the hook "
                         "(MPICH on a device other than ch4:ucx?)");
        return -1;
    }
    set_status(
        hook.mech == HOOK_OPAL
            ? "active: Open MPI's opal_progress (opal_progress_register)"
            : "active: MPICH's progress through UCX (ucp_worker_progress "
              "interposed)");
    return 0;
}

/* HOTBUF_TEST_PROGRESS_HOOK / _PROBE: test switches, not settings (read
 * here once, like HOTBUF_TEST_RMA_FAIL). */
static int test_switch(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

int hb_progress_hook_install(MPI_Comm own, int thread_level)
{
    hook.status[0] = 0;
    if (thread_level == MPI_THREAD_MULTIPLE) {
        set_status("off: MPI_THREAD_MULTIPLE (hotbuf's progress is not "
                   "thread-safe)");
        return 1;
    }
    if (!test_switch("HOTBUF_TEST_PROGRESS_HOOK", 1)) {
        set_status("off: test switch HOTBUF_TEST_PROGRESS_HOOK=0");
        return 1;
    }
    if (choose_mechanism(own))
        return -1;
    hook.was_active = 1;
    if (test_switch("HOTBUF_TEST_PROGRESS_PROBE", 0)) {
        hb_progress_probe_start(own);
        hook.probe = 1;
    }
    return 0;
}

void hb_progress_hook_remove(void)
{
    if (hook.probe)
        hb_progress_probe_stop();
    hook.probe = 0;
    if (hook.mech == HOOK_OPAL)
        hook.opal_unregister(opal_hook);
    else if (hook.mech == HOOK_UCP)
        hb_ucp_hook_enable(0);
    hook.mech = HOOK_NONE;
}

int hb_progress_hook_active(void)
{
    return hook.mech != HOOK_NONE;
}

const char *hb_progress_hook_status(void)
{
    return hook.status[0] ? hook.status : "off: hotbuf did not start";
}

unsigned long hb_progress_hook_passes(void)
{
    return hook.passes;
}

int hb_progress_hook_was_active(void)
{
    return hook.was_active;
}

/* Test only: a program run under hotbuf finds this with dlsym to see the
 * hook's passes while it sits in an MPI call (tests/mpi/progress_hook.c). */
__attribute__((visibility("default"))) unsigned long
hotbuf_test_progress_passes(void)
{
    return hook.passes;
}
