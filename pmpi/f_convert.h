/* Fortran arguments to C ones, for the generated Fortran bindings
 * (build/<mpi>/gen/f_bindings.c).  MPI-library facts they rely on:
 *
 * Open MPI 4.1: mpif.h and `use mpi` call mpi_x_; the mpi_f08 module calls
 * mpi_x_f08_ (libmpi_usempif08), a thin forwarder to ompi_x_f with the
 * same arguments (buffers by address, handles as INTEGER, ierror optional),
 * which calls PMPI_X.  hotbuf defines all three names for one wrapper.
 * MPI_IN_PLACE / MPI_BOTTOM are the addresses of mpi_fortran_in_place_ /
 * mpi_fortran_bottom_ in both interfaces.
 *
 * MPICH 4.0: mpif.h and `use mpi` call mpi_x_ (libmpichfort), which calls
 * the C MPI_X; MPI_IN_PLACE / MPI_BOTTOM are addresses that MPICH learns
 * from its Fortran start-up (mpirinitf_) into MPIR_F_MPI_IN_PLACE /
 * MPIR_F_MPI_BOTTOM.  mpi_f08 routines with a choice buffer
 * (mpi_x_f08ts_) convert their descriptors and call the C MPI_X; the
 * others (mpi_x_f08_: Win_fence, Win_allocate, Start ...) call PMPI_X
 * directly, with the same arguments as mpi_x_ and an optional ierror, so
 * hotbuf defines mpi_x_f08_ as mpi_x_.
 */
#ifndef HOTBUF_F_CONVERT_H
#define HOTBUF_F_CONVERT_H

#include <mpi.h>

/* Another name for a Fortran entry point (same arguments). */
#define HB_F_ALIAS(target, name)                                               \
    extern __typeof__(target) name                                             \
        __attribute__((alias(#target), visibility("default")));

/* ierror is optional in mpi_f08: absent, it is a null pointer. */
static inline void hb_f_ierr(MPI_Fint *ierr, int rc)
{
    if (ierr)
        *ierr = rc;
}

/* gfortran's .TRUE. and .FALSE. (what both MPIs use with it). */
static inline MPI_Fint hb_f_logical(int c)
{
    return c ? 1 : 0;
}

/* Waitany/Testany's index: Fortran counts from base (1; see
 * HB_F08_INDEX_BASE); MPI_UNDEFINED stays. */
static inline MPI_Fint hb_f_index(int c, int base)
{
    return c == MPI_UNDEFINED ? MPI_UNDEFINED : c + base;
}

/* MPICH 4.0's mpi_f08 Waitany, Testany, Waitsome and Testsome return C's
 * 0-based indices (pmodels/mpich#6270, fixed in 4.1); hotbuf's mpi_f08
 * entry points keep what the library does, so that a program behaves the
 * same with and without hotbuf (pmpi/unwrapped.def pins the version). */
#define HB_F08_INDEX_BASE_MPICH 0

/* How many entries Waitsome/Testsome wrote: none for MPI_UNDEFINED. */
static inline int hb_f_some(int outcount)
{
    return outcount == MPI_UNDEFINED ? 0 : outcount;
}

/* A choice buffer: Fortran's MPI_IN_PLACE and MPI_BOTTOM become the C
 * constants, any other address stays. */
void *hb_f_buf(void *f);

/* A status argument: MPI_STATUS_IGNORE, else local; after the call
 * hb_f_status_out copies local to the Fortran status (unless ignored). */
MPI_Status *hb_f_status(MPI_Fint *f, MPI_Status *local);
void hb_f_status_out(MPI_Fint *f, const MPI_Status *local);

/* Arrays of handles or statuses (Startall, and the Wait/Test families):
 * one C array, on the stack up to HB_F_LOCAL elements, else allocated.
 *   _in    prepares n elements; read != 0 converts f into them (f2c).
 *          MPI_SUCCESS, or MPI_ERR_NO_MEM (nothing to release then)
 *   _out   converts the n C elements back into f (c2f)
 *   _done  releases the C array */
#define HB_F_LOCAL 16

struct hb_f_requests {
    MPI_Request *c;
    MPI_Request local[HB_F_LOCAL];
};
int hb_f_requests_in(struct hb_f_requests *a, int n, const MPI_Fint *f,
                     int read);
void hb_f_requests_out(const struct hb_f_requests *a, int n, MPI_Fint *f);
void hb_f_requests_done(struct hb_f_requests *a);

/* Waitsome/Testsome's indices: n C ints; _out copies the first k back
 * as Fortran indices (+base), none when k is MPI_UNDEFINED. */
struct hb_f_indices {
    int *c;
    int local[HB_F_LOCAL];
};
int hb_f_indices_in(struct hb_f_indices *a, int n);
void hb_f_indices_out(const struct hb_f_indices *a, int k, MPI_Fint *f,
                      int base);
void hb_f_indices_done(struct hb_f_indices *a);

struct hb_f_statuses {
    MPI_Status *c; /* MPI_STATUSES_IGNORE when the caller passed it */
    int ignore;
    MPI_Status local[HB_F_LOCAL];
};
int hb_f_statuses_in(struct hb_f_statuses *a, int n, MPI_Fint *f, int read);
void hb_f_statuses_out(const struct hb_f_statuses *a, int n, MPI_Fint *f);
void hb_f_statuses_done(struct hb_f_statuses *a);

#endif
