/* The progress callbacks (see progress.h). */
#include "progress.h"

#include <sched.h>

/* Static: the waits that drive progress are reached from PMPI wrappers,
 * which carry no context. */
static struct {
    MPI_Comm comm;
    int n;
    struct {
        hb_progress_fn fn;
        void *arg;
    } cb[HB_PROGRESS_MAX];
} progress = {.comm = MPI_COMM_NULL};

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

void hb_progress(void)
{
    for (int i = 0; i < progress.n; i++)
        progress.cb[i].fn(progress.cb[i].arg);
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
