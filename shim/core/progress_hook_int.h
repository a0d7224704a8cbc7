/* Between the progress hook (progress_hook.c) and its mechanisms: the
 * ucp_worker_progress interposer (progress_hook_ucp.c) and the test probe
 * (progress_probe.c). */
#ifndef HOTBUF_PROGRESS_HOOK_INT_H
#define HOTBUF_PROGRESS_HOOK_INT_H

#include <mpi.h>

/* One pass of MPI's progress engine: every HB_PROGRESS_HOOK_EVERY-th runs
 * hb_progress(). */
void hb_progress_hook_pass(void);

/* The interposer: 1 when the real ucp_worker_progress is loaded (a
 * library behind this one exports it). */
int hb_ucp_hook_available(void);
/* From now on (on != 0) every call passes through hb_progress_hook_pass. */
void hb_ucp_hook_enable(int on);

/* Test only: registers the probe callback (progress.h). */
void hb_progress_probe_start(MPI_Comm own);
void hb_progress_probe_stop(void);

#endif
