/* Fortran bindings written by hand: Abort, and the state the generated
 * ones share (build/<mpi>/gen/f_bindings.c, from mpi_calls.def).
 *
 * Init and finalize need no Fortran wrapper: every binding ends in
 * PMPI_Init* / PMPI_Finalize, which hotbuf interposes (c_wrappers.c).
 * MPI_Abort is forwarded to the library's own pmpi_abort_ (found with
 * dlsym(RTLD_NEXT) on first use, so that libhotbuf does not link the
 * Fortran MPI library into C programs), after noting the abort.
 */
#include <mpi.h>

#include "bindings.h"
#include "f_convert.h"
#include "mpi_library.h"

__thread void *hb_f08_caller __attribute__((tls_model("initial-exec")));

int hb_f08_adopt(void **caller)
{
    if (hb_nested != HB_F08_PENDING)
        return 0;
    hb_nested = 0;
    *caller = hb_f08_caller;
    return 1;
}

HB_EXPORT void mpi_abort_(MPI_Fint *comm, MPI_Fint *code, MPI_Fint *ierr)
{
    static void (*next)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
    if (!next)
        next = (void (*)(MPI_Fint *, MPI_Fint *,
                         MPI_Fint *))hb_mpi_library_symbol("pmpi_abort_");
    hb_runtime_note_abort();
    hb_nested++;
    next(comm, code, ierr);
    hb_nested--;
}
HB_F_ALIAS(mpi_abort_, mpi_abort__)
HB_F_ALIAS(mpi_abort_, mpi_abort)
HB_F_ALIAS(mpi_abort_, MPI_ABORT)
#ifdef OPEN_MPI
HB_F_ALIAS(mpi_abort_, ompi_abort_f)
#endif
