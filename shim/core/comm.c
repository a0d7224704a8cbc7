/* See comm.h. */
#include "comm.h"

#include <stdlib.h>

static int group_in_world(MPI_Group g, MPI_Group world)
{
    int n = 0, ok = 1;
    PMPI_Group_size(g, &n);
    int *ranks = malloc(2 * (size_t)n * sizeof(int));
    if (!ranks)
        return 0; /* cannot tell: MPI is always right */
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    if (PMPI_Group_translate_ranks(g, n, ranks, world, ranks + n) !=
        MPI_SUCCESS)
        ok = 0;
    for (int i = 0; ok && i < n; i++)
        ok = ranks[n + i] != MPI_UNDEFINED;
    free(ranks);
    return ok;
}

int hb_comm_one_world(MPI_Comm comm)
{
    MPI_Group world, local, remote = MPI_GROUP_NULL;
    int inter = 0, ok;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Comm_group(comm, &local);
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_group(comm, &remote);
    ok = group_in_world(local, world) &&
         (!inter || group_in_world(remote, world));
    if (inter)
        PMPI_Group_free(&remote);
    PMPI_Group_free(&local);
    PMPI_Group_free(&world);
    return ok;
}
