/* See wrap_version.h.  A list of wrapped functions is only known complete
 * for the mpi.h it was checked against: another MPI version may add a
 * receive- or request-taking function that bypasses hotbuf, which would
 * then lose messages it matched.  So point-to-point rerouting needs the
 * library that runs to be the version the build checked (major.minor). */
#include "wrap_version.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wrapcheck.h"

#ifdef OPEN_MPI
#define LIBRARY "Open MPI"
#define VERSION_KEY "Open MPI v" /* "Open MPI v4.1.4, package: ..." */
#else
#define LIBRARY "MPICH"
#define VERSION_KEY "MPICH Version:" /* "MPICH Version:\t4.0.2\n..." */
#endif

/* major.minor of the running library; 0 when its string is unknown.
 * HOTBUF_TEST_MPI_LIBRARY_VERSION replaces the library's string (the test
 * p2p_version plays another version with it). */
static int library_version(int *major, int *minor)
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    const char *fake = getenv("HOTBUF_TEST_MPI_LIBRARY_VERSION");
    if (fake)
        snprintf(text, sizeof(text), "%s", fake);
    else if (PMPI_Get_library_version(text, &len) != MPI_SUCCESS)
        return 0;
    const char *at = strstr(text, VERSION_KEY);
    return at && sscanf(at + strlen(VERSION_KEY), " %d.%d", major, minor) == 2;
}

void hb_wrap_version_check(void)
{
    const struct hb_wrap_checked *b = &hb_wrap_checked;
    char why[160];
    int major = 0, minor = 0;
    if (!b->listed) {
        snprintf(why, sizeof(why),
                 "this build's mpi.h is " LIBRARY
                 " %d.%d, for which pmpi/unwrapped.def has no checked list",
                 b->major, b->minor);
        hb_wrapcheck_set(0, why);
    } else if (!library_version(&major, &minor)) {
        hb_wrapcheck_set(0, "the MPI library does not say its " LIBRARY
                            " version");
    } else if (major != b->major || minor != b->minor) {
        snprintf(why, sizeof(why),
                 "the MPI library is " LIBRARY
                 " %d.%d, the build checked its wrapped calls for %d.%d",
                 major, minor, b->major, b->minor);
        hb_wrapcheck_set(0, why);
    } else {
        hb_wrapcheck_set(1, "");
    }
}
