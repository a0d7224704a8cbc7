/* Fortran's MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY (Dist_graph_create's
 * weight arrays) to the C constants, for the generated Fortran bindings;
 * any other array is passed as it is (INTEGER is int on both MPIs). */
#ifndef HOTBUF_F_WEIGHTS_H
#define HOTBUF_F_WEIGHTS_H

#include <mpi.h>

_Static_assert(sizeof(MPI_Fint) == sizeof(int),
               "Fortran INTEGER arrays are passed to C as int arrays");

const int *hb_f_weights(const MPI_Fint *f);

#endif
