/* C bindings of MPICH 4's communicator constructors that Open MPI 4.1's
 * mpi.h lacks (MPI-4): pmpi/mpi_calls.def makes every row for both MPIs.
 * MPICH's mpif.h and `use mpi` bindings call these C functions, so they
 * are covered too.  Like the table's constructor rows (shim/p2p/p2p_names.h):
 * Comm_idup_with_info is named as Comm_idup is; a communicator made from a
 * group (sessions) or an intercommunicator from groups is recorded as
 * unnamed (it stays on MPI), so that a reused handle shows no older name. */
#include <mpi.h>

#include "bindings.h"

#ifndef OPEN_MPI

HB_EXPORT int MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info,
                                      MPI_Comm *newcomm, MPI_Request *req)
{
    void *caller = HB_CALLER;
    int join = hb_joins(&caller);
    int rc = PMPI_Comm_idup_with_info(comm, info, newcomm, req);
    if (join && rc == MPI_SUCCESS)
        hb_p2p_names_idup(comm, *newcomm, 1);
    return rc;
}

HB_EXPORT int MPI_Comm_create_from_group(MPI_Group group, const char *stringtag,
                                         MPI_Info info,
                                         MPI_Errhandler errhandler,
                                         MPI_Comm *newcomm)
{
    void *caller = HB_CALLER;
    int join = hb_joins(&caller);
    int rc = PMPI_Comm_create_from_group(group, stringtag, info, errhandler,
                                         newcomm);
    if (join && rc == MPI_SUCCESS)
        hb_p2p_names_unnamed(*newcomm, HB_P2P_UNNAMED_UNKNOWN);
    return rc;
}

HB_EXPORT int MPI_Intercomm_create_from_groups(
    MPI_Group local_group, int local_leader, MPI_Group remote_group,
    int remote_leader, const char *stringtag, MPI_Info info,
    MPI_Errhandler errhandler, MPI_Comm *newintercomm)
{
    void *caller = HB_CALLER;
    int join = hb_joins(&caller);
    int rc = PMPI_Intercomm_create_from_groups(
        local_group, local_leader, remote_group, remote_leader, stringtag, info,
        errhandler, newintercomm);
    if (join && rc == MPI_SUCCESS)
        hb_p2p_names_unnamed(*newintercomm, HB_P2P_UNNAMED_INTERCOMM);
    return rc;
}

#endif
