/* The pairwise check of a name (p2p_names.h): claims and their verdict. */
#include <string.h>

#include "core/runtime.h"
#include "p2p_names_int.h"

/* comm's members as world ranks, digested (rank order). */
static int64_t members_digest(MPI_Comm comm)
{
    MPI_Group g;
    PMPI_Comm_group(comm, &g);
    int64_t d = hb_names_group_digest(g);
    PMPI_Group_free(&g);
    return d;
}

int hb_p2p_name_claim(MPI_Comm comm, struct hb_p2p_name_claim *out)
{
    struct hb_p2p_name n;
    memset(out, 0, sizeof *out);
    out->status = hb_p2p_name_lookup(comm, &n);
    PMPI_Comm_rank(MPI_COMM_WORLD, &out->world_rank);
    if (out->status != HB_P2P_NAMED)
        return out->status;
    PMPI_Comm_size(comm, &out->size);
    PMPI_Comm_rank(comm, &out->rank);
    out->hash[0] = n.hash[0];
    out->hash[1] = n.hash[1];
    out->members = members_digest(comm);
    return HB_P2P_NAMED;
}

/* The claimant's rank in comm is the process it says it is. */
static int same_process(MPI_Comm comm, int rank, int world_rank)
{
    MPI_Group g, world;
    int w = MPI_UNDEFINED;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_translate_ranks(g, 1, &rank, world, &w);
    PMPI_Group_free(&world);
    PMPI_Group_free(&g);
    return w == world_rank;
}

static void mark_mismatch(MPI_Comm comm)
{
    hb_lock();
    struct hb_names_entry *e = hb_names_find(comm);
    if (e && comm != MPI_COMM_WORLD && comm != MPI_COMM_SELF) {
        e->status = HB_P2P_UNNAMED_MISMATCH;
        e->has_name = 0; /* its later children have none either */
    }
    hb_names.counts.mismatched++;
    hb_unlock();
}

int hb_p2p_name_verify(MPI_Comm comm, const struct hb_p2p_name_claim *theirs)
{
    struct hb_p2p_name_claim mine;
    int status = hb_p2p_name_claim(comm, &mine);
    if (status != HB_P2P_NAMED)
        return status;
    if (theirs->status != HB_P2P_NAMED) {
        hb_lock();
        hb_names.counts.peer_unnamed++;
        hb_unlock();
        return HB_P2P_UNNAMED_PEER;
    }
    if (theirs->hash[0] != mine.hash[0] || theirs->hash[1] != mine.hash[1] ||
        theirs->size != mine.size || theirs->members != mine.members ||
        theirs->rank < 0 || theirs->rank >= mine.size ||
        !same_process(comm, theirs->rank, theirs->world_rank)) {
        mark_mismatch(comm);
        return HB_P2P_UNNAMED_MISMATCH;
    }
    hb_lock();
    hb_names.counts.verified++;
    hb_unlock();
    return HB_P2P_NAMED;
}
