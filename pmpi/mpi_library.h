/* The MPI library's own definition of a symbol hotbuf also defines (the
 * Fortran entry points, PMPI_Init/PMPI_Finalize), looked up once with
 * dlsym(RTLD_NEXT).  A missing one cannot happen with a consistent MPI
 * installation; it is reported and the process aborts rather than call
 * through a null pointer. */
#ifndef HOTBUF_MPI_LIBRARY_H
#define HOTBUF_MPI_LIBRARY_H

void *hb_mpi_library_symbol(const char *name);

#endif
