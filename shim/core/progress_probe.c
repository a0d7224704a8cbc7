/* Test only (HOTBUF_TEST_PROGRESS_PROBE=1, see progress.h): a progress
 * callback that makes, from inside the hook, the PMPI calls the
 * point-to-point engine will make there: an Iprobe on hotbuf's own
 * communicator, and claims of the application's messages on
 * MPI_COMM_WORLD with Improbe + Imrecv, completed with Test on later
 * passes.  Only messages with HB_PROBE_TAG are claimed: a test program
 * (tests/mpi/progress_hook.c) sends them and counts them with
 * hotbuf_test_progress_claimed(). */
#include <stddef.h>

#include "progress.h"
#include "progress_hook_int.h"

#define HB_PROBE_TAG 32001 /* <= 32767, the smallest MPI_TAG_UB allowed */

/* Static: a progress callback's state, for the test's lifetime. */
static struct {
    MPI_Comm own;
    MPI_Request req; /* the claimed message being received */
    char buf[64];
    unsigned long claimed;
} probe = {.own = MPI_COMM_NULL, .req = MPI_REQUEST_NULL};

static void claim(void)
{
    int flag;
    MPI_Message msg;
    if (probe.req != MPI_REQUEST_NULL) {
        PMPI_Test(&probe.req, &flag, MPI_STATUS_IGNORE);
        if (!flag)
            return;
    }
    PMPI_Improbe(MPI_ANY_SOURCE, HB_PROBE_TAG, MPI_COMM_WORLD, &flag, &msg,
                 MPI_STATUS_IGNORE);
    if (!flag)
        return;
    PMPI_Imrecv(probe.buf, sizeof(probe.buf), MPI_BYTE, &msg, &probe.req);
    probe.claimed++;
}

static void probe_cb(void *arg)
{
    int flag;
    (void)arg;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, probe.own, &flag,
                MPI_STATUS_IGNORE);
    claim();
}

void hb_progress_probe_start(MPI_Comm own)
{
    probe.own = own;
    hb_progress_add(probe_cb, NULL);
}

void hb_progress_probe_stop(void)
{
    hb_progress_remove(probe_cb, NULL);
    if (probe.req != MPI_REQUEST_NULL) /* not inside the hook: may block */
        PMPI_Wait(&probe.req, MPI_STATUS_IGNORE);
}

__attribute__((visibility("default"))) unsigned long
hotbuf_test_progress_claimed(void)
{
    return probe.claimed;
}
