/* See mpi_library.h. */
#define _GNU_SOURCE
#include "mpi_library.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *hb_mpi_library_symbol(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (!fn) {
        fprintf(stderr, "hotbuf: %s not found in the MPI library; aborting\n",
                name);
        abort();
    }
    return fn;
}
