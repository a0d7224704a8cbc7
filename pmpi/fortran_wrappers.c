/* Fortran bindings.
 *
 * Open MPI's mpif.h/`use mpi` entry points (mpi_send_ ...) and its mpi_f08
 * module (through ompi_send_f) call PMPI_Send directly, so a C MPI_Send
 * wrapper never sees Fortran traffic: these symbols are wrapped too.
 * MPICH's bindings call the C MPI_Send instead; the nesting counter keeps
 * such a call from being counted twice.  Each wrapper forwards to the MPI
 * library's own pmpi_<name>_, found with dlsym(RTLD_NEXT) on first use, so
 * libhotbuf does not link the Fortran MPI library into C programs.
 *
 * gfortran mangles `call MPI_Send` to mpi_send_; the other spellings MPI
 * libraries export (mpi_send__, mpi_send, MPI_SEND) are aliases.
 */
#include <mpi.h>

#include "mpi_library.h"

#include "core/runtime.h"
#include "core/track_mpi.h"

#define HB_CALLER __builtin_return_address(0)
#define HB_EXPORT __attribute__((visibility("default")))
#define FI(a) (*(const MPI_Fint *)(a))
#define FT(a) PMPI_Type_f2c(FI(a))
#define FR(a) PMPI_Request_f2c(FI(a))

#define P1 void *a1
#define P2 P1, void *a2
#define P3 P2, void *a3
#define P7 P3, void *a4, void *a5, void *a6, void *a7
#define P8 P7, void *a8
#define P9 P8, void *a9
#define P10 P9, void *a10
#define P13 P10, void *a11, void *a12, void *a13
#define A1 a1
#define A2 A1, a2
#define A3 A2, a3
#define A7 A3, a4, a5, a6, a7
#define A8 A7, a8
#define A9 A8, a9
#define A10 A9, a10
#define A13 A10, a11, a12, a13
#define IERR1 a1
#define IERR2 a2
#define IERR3 a3
#define IERR7 a7
#define IERR8 a8
#define IERR9 a9
#define IERR10 a10
#define IERR13 a13

#define HB_F_NEXT(lower, n)                                                 \
    static void (*next_)(P##n);                                             \
    if (!next_)                                                             \
        next_ = (void (*)(P##n))hb_mpi_library_symbol("pmpi_" #lower "_")

#define HB_F_CALL(n)                                                        \
    do {                                                                    \
        hb_nested++;                                                        \
        next_(A##n);                                                        \
        hb_nested--;                                                        \
    } while (0)

#ifdef OPEN_MPI
#define HB_F_OMPI_ALIAS(lower, n)                                           \
    HB_EXPORT void ompi_##lower##_f(P##n) __attribute__((alias("mpi_" #lower "_")));
#else
#define HB_F_OMPI_ALIAS(lower, n)
#endif

#define HB_F_ALIASES(lower, UPPER, n)                                       \
    HB_EXPORT void mpi_##lower##__(P##n) __attribute__((alias("mpi_" #lower "_")));   \
    HB_EXPORT void mpi_##lower(P##n) __attribute__((alias("mpi_" #lower "_")));       \
    HB_EXPORT void MPI_##UPPER(P##n) __attribute__((alias("mpi_" #lower "_")));       \
    HB_F_OMPI_ALIAS(lower, n)

#define HB_F_PRE(lower, UPPER, n, action)                                   \
    HB_EXPORT void mpi_##lower##_(P##n)                                             \
    {                                                                       \
        HB_F_NEXT(lower, n);                                                \
        if (hb_should_track()) {                                            \
            action;                                                         \
        }                                                                   \
        HB_F_CALL(n);                                                       \
    }                                                                       \
    HB_F_ALIASES(lower, UPPER, n)

#define HB_F_POST(lower, UPPER, n, action)                                  \
    HB_EXPORT void mpi_##lower##_(P##n)                                             \
    {                                                                       \
        HB_F_NEXT(lower, n);                                                \
        HB_F_CALL(n);                                                       \
        if (FI(IERR##n) == MPI_SUCCESS && hb_should_track()) {              \
            action;                                                         \
        }                                                                   \
    }                                                                       \
    HB_F_ALIASES(lower, UPPER, n)

#include "fortran_wrappers.def"

/* Init and finalize need no Fortran wrapper: every binding ends in
 * PMPI_Init* / PMPI_Finalize, which hotbuf interposes (c_wrappers.c). */
HB_EXPORT void mpi_abort_(P3)
{
    HB_F_NEXT(abort, 3);
    hb_runtime_note_abort();
    HB_F_CALL(3);
}
HB_F_ALIASES(abort, ABORT, 3)
