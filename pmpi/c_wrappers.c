/* C bindings: generated from c_wrappers.def, plus the life-cycle calls. */
#include <mpi.h>

#include "../shim/runtime.h"
#include "../shim/track_mpi.h"

#define HB_CALLER __builtin_return_address(0)
#define HB_EXPORT __attribute__((visibility("default")))

#define HB_PRE(name, params, args, action)                                 \
    HB_EXPORT int MPI_##name params                                                   \
    {                                                                       \
        if (hb_should_track()) {                                            \
            action;                                                         \
        }                                                                   \
        return PMPI_##name args;                                            \
    }

#define HB_POST(name, params, args, action)                                \
    HB_EXPORT int MPI_##name params                                                   \
    {                                                                       \
        int rc_ = PMPI_##name args;                                         \
        if (rc_ == MPI_SUCCESS && hb_should_track()) {                      \
            action;                                                         \
        }                                                                   \
        return rc_;                                                         \
    }

#include "c_wrappers.def"

/* Life cycle: the runtime hooks are idempotent because Fortran bindings may
 * reach PMPI_Init without passing here, or pass here from inside the
 * Fortran wrapper. */
HB_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv), provided = MPI_THREAD_SINGLE;
    if (rc == MPI_SUCCESS) {
        PMPI_Query_thread(&provided);
        hb_runtime_after_init(provided);
    }
    return rc;
}

HB_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        hb_runtime_after_init(*provided);
    return rc;
}

HB_EXPORT int MPI_Finalize(void)
{
    hb_runtime_before_finalize();
    return PMPI_Finalize();
}

HB_EXPORT int MPI_Abort(MPI_Comm comm, int code)
{
    hb_runtime_note_abort();
    return PMPI_Abort(comm, code);
}
