/* See f_convert.h.  No hotbuf state here: tests/mpi/f_convert_check.c
 * links this file alone. */
#define _GNU_SOURCE
#include "f_convert.h"

#include <dlfcn.h>
#include <stdlib.h>

/* Fortran's special addresses, as this process sees them. */
struct f_consts {
    void *in_place, *bottom;
};

#ifdef OPEN_MPI
/* Common blocks of mpif.h (and what mpi_f08 binds to), defined by libmpi
 * and, in a Fortran program, by the program itself (which then wins). */
extern int mpi_fortran_in_place_, mpi_fortran_bottom_;

static const struct f_consts *f_consts(void)
{
    static const struct f_consts k = {&mpi_fortran_in_place_,
                                      &mpi_fortran_bottom_};
    return &k;
}
#else
/* MPICH learns the addresses of its Fortran common blocks from a Fortran
 * routine (mpirinitf_), run by the first Fortran MPI call that needs them
 * (MPIR_F_NeedInit).  hotbuf's wrappers replace those calls, so they run
 * it the same way, once.  Looked up at run time: only a Fortran program
 * loads libmpichfort. */
static void f_consts_init(struct f_consts *k)
{
    int *need = dlsym(RTLD_DEFAULT, "MPIR_F_NeedInit");
    void (*init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mpirinitf_");
    if (need && *need && init) {
        init();
        *need = 0;
    }
    void **in_place = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_IN_PLACE");
    void **bottom = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_BOTTOM");
    k->in_place = in_place ? *in_place : NULL;
    k->bottom = bottom ? *bottom : NULL;
}

static const struct f_consts *f_consts(void)
{
    static struct f_consts k;
    static int ready;
    if (!__atomic_load_n(
            &ready, __ATOMIC_ACQUIRE)) { /* racing threads compute the same */
        f_consts_init(&k);
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return &k;
}
#endif

void *hb_f_buf(void *f)
{
    const struct f_consts *k = f_consts();
    if (f && f == k->in_place)
        return MPI_IN_PLACE;
    if (f && f == k->bottom)
        return MPI_BOTTOM;
    return f;
}

/* MPI_STATUS(ES)_IGNORE as a Fortran caller passes it.  MPI_F_STATUS_IGNORE
 * is set by MPICH's Fortran start-up too.  MPICH's mpi_f08 routines that
 * hotbuf defines as its mpi_x_ (mpi_wait_f08_ ...) receive the mpi_f08
 * module's own object, MPI_F08_STATUS_IGNORE; Open MPI's mpi_f08 uses the
 * mpif.h one. */
static int status_ignored(const MPI_Fint *f)
{
    f_consts();
#ifdef MPICH
    if ((const void *)f == (const void *)MPI_F08_STATUS_IGNORE)
        return 1;
#endif
    return f == MPI_F_STATUS_IGNORE;
}

static int statuses_ignored(const MPI_Fint *f)
{
    f_consts();
#ifdef MPICH
    if ((const void *)f == (const void *)MPI_F08_STATUSES_IGNORE)
        return 1;
#endif
    return f == MPI_F_STATUSES_IGNORE;
}

MPI_Status *hb_f_status(MPI_Fint *f, MPI_Status *local)
{
    return status_ignored(f) ? MPI_STATUS_IGNORE : local;
}

void hb_f_status_out(MPI_Fint *f, const MPI_Status *local)
{
    if (!status_ignored(f))
        PMPI_Status_c2f(local, f);
}

/* Fortran INTEGERs per status (MPI_STATUS_SIZE). */
#ifdef MPI_F_STATUS_SIZE
#define F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(MPI_Fint))
#endif

/* n elements of size bytes: local if they fit, else allocated. */
static void *array_for(void *local, size_t fits, int n, size_t size)
{
    if (n <= 0 || (size_t)n <= fits)
        return local;
    return malloc((size_t)n * size);
}

int hb_f_requests_in(struct hb_f_requests *a, int n, const MPI_Fint *f,
                     int read)
{
    a->c = array_for(a->local, HB_F_LOCAL, n, sizeof(MPI_Request));
    if (!a->c)
        return MPI_ERR_NO_MEM;
    for (int i = 0; read && i < n; i++)
        a->c[i] = PMPI_Request_f2c(f[i]);
    return MPI_SUCCESS;
}

void hb_f_requests_out(const struct hb_f_requests *a, int n, MPI_Fint *f)
{
    for (int i = 0; i < n; i++)
        f[i] = PMPI_Request_c2f(a->c[i]);
}

void hb_f_requests_done(struct hb_f_requests *a)
{
    if (a->c != a->local)
        free(a->c);
    a->c = NULL;
}

int hb_f_statuses_in(struct hb_f_statuses *a, int n, MPI_Fint *f, int read)
{
    a->ignore = statuses_ignored(f);
    if (a->ignore) {
        a->c = MPI_STATUSES_IGNORE;
        return MPI_SUCCESS;
    }
    a->c = array_for(a->local, HB_F_LOCAL, n, sizeof(MPI_Status));
    if (!a->c)
        return MPI_ERR_NO_MEM;
    for (int i = 0; read && i < n; i++)
        PMPI_Status_f2c(f + (size_t)i * F_STATUS_SIZE, &a->c[i]);
    return MPI_SUCCESS;
}

void hb_f_statuses_out(const struct hb_f_statuses *a, int n, MPI_Fint *f)
{
    for (int i = 0; !a->ignore && i < n; i++)
        PMPI_Status_c2f(&a->c[i], f + (size_t)i * F_STATUS_SIZE);
}

void hb_f_statuses_done(struct hb_f_statuses *a)
{
    if (!a->ignore && a->c != a->local)
        free(a->c);
    a->c = NULL;
}

int hb_f_indices_in(struct hb_f_indices *a, int n)
{
    a->c = array_for(a->local, HB_F_LOCAL, n, sizeof(int));
    return a->c ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

void hb_f_indices_out(const struct hb_f_indices *a, int k, MPI_Fint *f,
                      int base)
{
    for (int i = 0; i < hb_f_some(k); i++)
        f[i] = a->c[i] + base;
}

void hb_f_indices_done(struct hb_f_indices *a)
{
    if (a->c != a->local)
        free(a->c);
    a->c = NULL;
}
