/* pmpi/f_convert.c on its own (linked in, 1 rank): the Fortran <-> C
 * conversions of request and status arrays that the generated Fortran
 * bindings use (Startall now, the Wait/Test families next).
 * Requests: n persistent requests and MPI_REQUEST_NULLs as Fortran
 * handles, converted in (f2c), some freed on the C side, converted out
 * (c2f), at sizes on the stack (<= HB_F_LOCAL) and allocated.
 * Statuses: out-conversion of n statuses, and MPI_F_STATUSES_IGNORE.
 * Prints one line per check; "bad 0" everywhere is right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "pmpi/f_convert.h"

static int requests(int n)
{
    MPI_Request *r = malloc(n * sizeof(*r));
    MPI_Fint *f = malloc(n * sizeof(*f));
    int buf = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        r[i] = MPI_REQUEST_NULL;
        if (i % 3)
            MPI_Send_init(&buf, 1, MPI_INT, MPI_PROC_NULL, i, MPI_COMM_SELF, &r[i]);
        f[i] = MPI_Request_c2f(r[i]);
    }
    struct hb_f_requests a;
    if (hb_f_requests_in(&a, n, f, 1) != MPI_SUCCESS)
        return -1;
    bad += (a.c == a.local) != (n <= HB_F_LOCAL);
    for (int i = 0; i < n; i++)
        bad += a.c[i] != r[i];
    for (int i = 0; i < n; i += 2) /* the call frees some */
        if (a.c[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&a.c[i]);
    hb_f_requests_out(&a, n, f);
    hb_f_requests_done(&a);
    for (int i = 0; i < n; i++) {
        MPI_Request want = i % 2 ? r[i] : MPI_REQUEST_NULL;
        bad += f[i] != MPI_Request_c2f(want);
        if (i % 2 && r[i] != MPI_REQUEST_NULL)
            MPI_Request_free(&r[i]);
    }
    free(r);
    free(f);
    return bad;
}

static int statuses(int n)
{
    size_t per = sizeof(MPI_Status) / sizeof(MPI_Fint);
    MPI_Fint *f = calloc((size_t)n * per + 1, sizeof(*f));
    struct hb_f_statuses a;
    int bad = 0;
    if (hb_f_statuses_in(&a, n, f, 0) != MPI_SUCCESS)
        return -1;
    bad += a.ignore;
    for (int i = 0; i < n; i++) {
        a.c[i].MPI_SOURCE = i;
        a.c[i].MPI_TAG = 100 + i;
        a.c[i].MPI_ERROR = MPI_SUCCESS;
    }
    hb_f_statuses_out(&a, n, f);
    hb_f_statuses_done(&a);
    for (int i = 0; i < n; i++) {
        MPI_Status s;
        MPI_Status_f2c(f + (size_t)i * per, &s);
        bad += s.MPI_SOURCE != i || s.MPI_TAG != 100 + i;
    }
    free(f);
    if (hb_f_statuses_in(&a, n, MPI_F_STATUSES_IGNORE, 0) != MPI_SUCCESS)
        return -1;
    bad += !a.ignore || a.c != MPI_STATUSES_IGNORE;
    hb_f_statuses_done(&a);
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int n = 0; n <= 40; n += n < 16 ? 16 : 24)
        printf("f_convert_check: %d requests, bad %d\n", n, requests(n));
    for (int n = 1; n <= 40; n += 39)
        printf("f_convert_check: %d statuses, bad %d\n", n, statuses(n));
    MPI_Finalize();
    return 0;
}
