/* C bindings of the life-cycle calls: Init, Finalize, Abort. */
#include <mpi.h>

#include "mpi_library.h"

#include "bindings.h"
#include "wrap_version.h"

/* The intercepted calls themselves are generated from mpi_calls.def
 * (build/<mpi>/gen/c_bindings.c). */

/* Life cycle.  hotbuf defines PMPI_Init, PMPI_Init_thread and
 * PMPI_Finalize themselves, forwarding to the MPI library's through
 * dlsym(RTLD_NEXT): the Fortran bindings (Open MPI's mpif.h and mpi_f08,
 * MPICH's mpi_f08) call these PMPI_ entry points directly, so a hook in
 * MPI_Init alone would never run for them.  The MPI_ names forward to the
 * PMPI_ ones so that C programs take the same path. */
static int init_thread(int *argc, char ***argv, int required, int *provided)
{
    static int (*next)(int *, char ***, int, int *);
    if (!next)
        next = (int (*)(int *, char ***, int, int *))hb_mpi_library_symbol(
            "PMPI_Init_thread");
    int rc = next(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        hb_wrap_version_check();
        hb_runtime_after_init(*provided);
    }
    return rc;
}

static int init(int *argc, char ***argv)
{
    static int (*next)(int *, char ***);
    if (!next)
        next = (int (*)(int *, char ***))hb_mpi_library_symbol("PMPI_Init");
    int rc = next(argc, argv), provided = MPI_THREAD_SINGLE;
    if (rc == MPI_SUCCESS) {
        PMPI_Query_thread(&provided);
        hb_wrap_version_check();
        hb_runtime_after_init(provided);
    }
    return rc;
}

static int finalize(void)
{
    static int (*next)(void);
    if (!next)
        next = (int (*)(void))hb_mpi_library_symbol("PMPI_Finalize");
    hb_runtime_before_finalize();
    return next();
}

HB_EXPORT int PMPI_Init(int *argc, char ***argv)
{
    return init(argc, argv);
}
HB_EXPORT int MPI_Init(int *argc, char ***argv)
{
    return init(argc, argv);
}
HB_EXPORT int PMPI_Init_thread(int *argc, char ***argv, int required,
                               int *provided)
{
    return init_thread(argc, argv, required, provided);
}
HB_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required,
                              int *provided)
{
    return init_thread(argc, argv, required, provided);
}
HB_EXPORT int PMPI_Finalize(void)
{
    return finalize();
}
HB_EXPORT int MPI_Finalize(void)
{
    return finalize();
}

HB_EXPORT int MPI_Abort(MPI_Comm comm, int code)
{
    hb_runtime_note_abort();
    return PMPI_Abort(comm, code);
}
