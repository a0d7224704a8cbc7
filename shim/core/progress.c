/* The progress callbacks (see progress.h). */
#include "progress.h"

#include <sched.h>
#include <stdatomic.h>

/* Static: the waits that drive progress are reached from PMPI wrappers,
 * which carry no context. */
static struct {
    MPI_Comm comm;
    atomic_flag running; /* the re-entry guard (see hb_progress) */
    int n;
    struct {
        hb_progress_fn fn;
        void *arg;
    } cb[HB_PROGRESS_MAX];
} progress = {.comm = MPI_COMM_NULL, .running = ATOMIC_FLAG_INIT};

void hb_progress_init(MPI_Comm comm)
{
    progress.comm = comm;
}

int hb_progress_add(hb_progress_fn fn, void *arg)
{
    if (progress.n == HB_PROGRESS_MAX)
        return -1;
    progress.cb[progress.n].fn = fn;
    progress.cb[progress.n].arg = arg;
    progress.n++;
    return 0;
}

void hb_progress_remove(hb_progress_fn fn, void *arg)
{
    int keep = 0;
    for (int i = 0; i < progress.n; i++)
        if (progress.cb[i].fn != fn || progress.cb[i].arg != arg)
            progress.cb[keep++] = progress.cb[i];
    progress.n = keep;
}

/* The guard: a callback's PMPI call drives MPI's progress, which calls the
 * hook, which would run the callbacks again in the middle of one of them
 * (the transport's poll loop is not re-entrant).  An atomic flag rather
 * than a plain one, because MPI may call its progress from a thread of its
 * own: that thread then skips instead of racing the owner. */
int hb_progress(void)
{
    if (atomic_flag_test_and_set_explicit(&progress.running,
                                          memory_order_acquire))
        return 0;
    for (int i = 0; i < progress.n; i++)
        progress.cb[i].fn(progress.cb[i].arg);
    atomic_flag_clear_explicit(&progress.running, memory_order_release);
    return 1;
}

void hb_progress_yield(void *arg)
{
    int flag;
    (void)arg;
    hb_progress();
    if (progress.comm != MPI_COMM_NULL)
        PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, progress.comm, &flag,
                    MPI_STATUS_IGNORE);
    sched_yield();
}
