/* Fortran weight sentinels (f_weights.h).
 *
 * Open MPI 4.1: MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY are the common blocks
 * mpi_fortran_unweighted_ / mpi_fortran_weights_empty_ (mpif.h, `use
 * mpi` and mpi_f08 alike), compared by address as Open MPI's own
 * OMPI_IS_FORTRAN_UNWEIGHTED does.  MPICH 4.0: their addresses are in
 * MPIR_F_MPI_UNWEIGHTED / MPIR_F_MPI_WEIGHTS_EMPTY, set by MPICH's
 * Fortran start-up, which hb_f_buf runs once (f_convert.c).  Looked up at
 * run time: only a Fortran program loads those libraries. */
#include "f_weights.h"

#include <dlfcn.h>
#include <stddef.h>

#include "f_convert.h"

struct f_sentinels {
    const void *unweighted, *empty;
};

static void sentinels_init(struct f_sentinels *s)
{
#ifdef OPEN_MPI
    s->unweighted = dlsym(RTLD_DEFAULT, "mpi_fortran_unweighted_");
    s->empty = dlsym(RTLD_DEFAULT, "mpi_fortran_weights_empty_");
#else
    (void)hb_f_buf(NULL); /* MPICH's Fortran start-up, once */
    void **u = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_UNWEIGHTED");
    void **e = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_WEIGHTS_EMPTY");
    s->unweighted = u ? *u : NULL;
    s->empty = e ? *e : NULL;
#endif
}

const int *hb_f_weights(const MPI_Fint *f)
{
    static struct f_sentinels s;
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) { /* racers agree */
        sentinels_init(&s);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    if (f && (const void *)f == s.unweighted)
        return MPI_UNWEIGHTED;
    if (f && (const void *)f == s.empty)
        return MPI_WEIGHTS_EMPTY;
    return (const int *)f;
}
