/* Whether every receive-, probe- and request-taking MPI function of the
 * running library is known to be wrapped: the bindings were checked
 * against this MPI version (pmpi/check_wrapped.py, pmpi/wrap_version.c).
 * Point-to-point rerouting stays off otherwise: a call that bypasses
 * hotbuf could take a message hotbuf's matcher owns. */
#ifndef HOTBUF_WRAPCHECK_H
#define HOTBUF_WRAPCHECK_H

/* Set by the bindings right after MPI_Init, before the subsystems start;
 * why says what differs when checked is 0. */
void hb_wrapcheck_set(int checked, const char *why);

/* 1: the library is the checked version (0 until hb_wrapcheck_set). */
int hb_bindings_checked(void);

/* One note, on rank 0, when point-to-point is wanted but unchecked. */
void hb_wrapcheck_note(void);

#endif
