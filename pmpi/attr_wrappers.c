/* MPI_TAG_UB as the application sees it: while point-to-point is on,
 * hotbuf keeps the top hb_p2p_tag_ub_hidden() tags for its in-band markers
 * (shim/p2p/p2p.h), so every query of the attribute, C and Fortran, shows
 * that much less.  Other attributes pass untouched.
 *
 * The Fortran entry points forward to the MPI library's own (dlsym
 * RTLD_NEXT, as mpi_abort_ does), which convert the attribute value the way
 * each MPI defines it, and adjust the INTEGER they return. */
#include <mpi.h>

#include "bindings.h"
#include "f_convert.h"
#include "mpi_library.h"

/* The Fortran value of the keyval MPI_TAG_UB: Open MPI uses the C one,
 * MPICH sets a bit of its own (mpif.h: 1681915906 = 0x64400001 + 1). */
#ifdef OPEN_MPI
#define F_TAG_UB ((MPI_Fint)MPI_TAG_UB)
#else
#define F_TAG_UB ((MPI_Fint)(MPI_TAG_UB + 1))
#endif

/* C: the attribute is a pointer to MPI's int; the application gets a
 * pointer to hotbuf's copy, lowered (every communicator has the same
 * value, so one copy serves all). */
static void tag_ub_c(int keyval, void *attr, const int *flag)
{
    static int lowered;
    int hidden = hb_p2p_tag_ub_hidden();
    if (keyval != MPI_TAG_UB || !*flag || hidden == 0 || hb_nested)
        return; /* hb_nested: a Fortran query below, which lowers it */
    int **value = attr;
    __atomic_store_n(&lowered, **value - hidden, __ATOMIC_RELAXED);
    *value = &lowered;
}

HB_EXPORT int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attr,
                                int *flag)
{
    int rc = PMPI_Comm_get_attr(comm, keyval, attr, flag);
    if (rc == MPI_SUCCESS)
        tag_ub_c(keyval, attr, flag);
    return rc;
}

/* Deprecated since MPI-2, still in both libraries and in programs. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
HB_EXPORT int MPI_Attr_get(MPI_Comm comm, int keyval, void *attr, int *flag)
{
    int rc = PMPI_Attr_get(comm, keyval, attr, flag);
    if (rc == MPI_SUCCESS)
        tag_ub_c(keyval, attr, flag);
    return rc;
}
#pragma GCC diagnostic pop

/* Fortran: the value itself, INTEGER(KIND=MPI_ADDRESS_KIND) for
 * Comm_get_attr, INTEGER for Attr_get.  ierror may be absent (mpi_f08). */
typedef void f_get_attr_fn(const MPI_Fint *, const MPI_Fint *, void *,
                           MPI_Fint *, MPI_Fint *);

static int f_tag_ub_lowered(const MPI_Fint *keyval, const MPI_Fint *flag,
                            MPI_Fint rc)
{
    return rc == MPI_SUCCESS && *keyval == F_TAG_UB && *flag;
}

static void f_comm_get_attr(f_get_attr_fn *next, const MPI_Fint *comm,
                            const MPI_Fint *keyval, MPI_Aint *attr,
                            MPI_Fint *flag, MPI_Fint *ierr)
{
    MPI_Fint rc = MPI_SUCCESS;
    hb_nested++; /* MPICH's Fortran binding ends in the C binding */
    next(comm, keyval, attr, flag, &rc);
    hb_nested--;
    if (f_tag_ub_lowered(keyval, flag, rc))
        *attr -= hb_p2p_tag_ub_hidden();
    hb_f_ierr(ierr, rc);
}

HB_EXPORT void mpi_comm_get_attr_(const MPI_Fint *comm, const MPI_Fint *keyval,
                                  MPI_Aint *attr, MPI_Fint *flag,
                                  MPI_Fint *ierr)
{
    static f_get_attr_fn *next;
    if (!next)
        next = (f_get_attr_fn *)hb_mpi_library_symbol("pmpi_comm_get_attr_");
    f_comm_get_attr(next, comm, keyval, attr, flag, ierr);
}
HB_F_ALIAS(mpi_comm_get_attr_, mpi_comm_get_attr__)
HB_F_ALIAS(mpi_comm_get_attr_, mpi_comm_get_attr)
HB_F_ALIAS(mpi_comm_get_attr_, MPI_COMM_GET_ATTR)
#ifdef OPEN_MPI
HB_F_ALIAS(mpi_comm_get_attr_, ompi_comm_get_attr_f)
#endif

/* mpi_f08: the library's own mpi_f08 entry (MPICH's calls PMPI directly). */
HB_EXPORT void mpi_comm_get_attr_f08_(const MPI_Fint *comm,
                                      const MPI_Fint *keyval, MPI_Aint *attr,
                                      MPI_Fint *flag, MPI_Fint *ierr)
{
    static f_get_attr_fn *next;
    if (!next)
        next = (f_get_attr_fn *)hb_mpi_library_symbol("mpi_comm_get_attr_f08_");
    f_comm_get_attr(next, comm, keyval, attr, flag, ierr);
}

HB_EXPORT void mpi_attr_get_(const MPI_Fint *comm, const MPI_Fint *keyval,
                             MPI_Fint *attr, MPI_Fint *flag, MPI_Fint *ierr)
{
    static f_get_attr_fn *next;
    if (!next)
        next = (f_get_attr_fn *)hb_mpi_library_symbol("pmpi_attr_get_");
    MPI_Fint rc = MPI_SUCCESS;
    hb_nested++;
    next(comm, keyval, attr, flag, &rc);
    hb_nested--;
    if (f_tag_ub_lowered(keyval, flag, rc))
        *attr -= hb_p2p_tag_ub_hidden();
    hb_f_ierr(ierr, rc);
}
HB_F_ALIAS(mpi_attr_get_, mpi_attr_get__)
HB_F_ALIAS(mpi_attr_get_, mpi_attr_get)
HB_F_ALIAS(mpi_attr_get_, MPI_ATTR_GET)
#ifdef OPEN_MPI
HB_F_ALIAS(mpi_attr_get_, ompi_attr_get_f)
#endif
