/* Which MPI version this build's receive-side wrapping was checked against
 * (pmpi/check_wrapped.py writes build/<mpi>/gen/wrap_checked.c), and the
 * comparison with the library that runs. */
#ifndef HOTBUF_WRAP_VERSION_H
#define HOTBUF_WRAP_VERSION_H

struct hb_wrap_checked {
    int major, minor; /* the build's mpi.h */
    int listed;       /* pmpi/unwrapped.def was reviewed for that version */
};
extern const struct hb_wrap_checked hb_wrap_checked;

/* After MPI_Init: tells the runtime whether the library is a version whose
 * wrapped list was checked (core/wrapcheck.h). */
void hb_wrap_version_check(void);

#endif
