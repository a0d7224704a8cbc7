/* MPI_Intercomm_create's leader exchange, away from pulled communicators.
 *
 * Open MPI and MPICH both run the exchange between the two leaders by
 * point-to-point on peer_comm with the application's tag, inside MPI.
 * If hotbuf pulls peer_comm, its Improbe(ANY_SOURCE, ANY_TAG) takes the
 * remote leader's message before MPI's internal receive sees it, and the
 * creation fails or hangs (tests/mpi/p2p_intercomm.c).  The leaders use a
 * duplicate of hotbuf's communicator instead ("bridge"), which hotbuf
 * never pulls; the remote leader's rank is translated.  Both leaders must
 * agree, so the bridge exists on every rank or on none (agreed at start).
 * peer_comm only carries that exchange (MPI-4.0 §7.6.2), so the result is
 * the same intercommunicator. */
#include "core/comm.h"
#include "core/subsys.h"
#include "p2p_int.h"

void hb_p2p_bridge_start(const struct hb_ctx *ctx)
{
    int want = (p2p.mode != P2P_MODE_AUTO || ctx->cfg->p2p_ring) &&
               ctx->cfg->p2p && ctx->thread_level != MPI_THREAD_MULTIPLE;
    p2p.bridge = MPI_COMM_NULL;
    if (hb_subsys_agree(ctx, !want, 1, NULL))
        PMPI_Comm_dup(ctx->comm, &p2p.bridge);
}

void hb_p2p_bridge_stop(void)
{
    if (p2p.bridge != MPI_COMM_NULL)
        PMPI_Comm_free(&p2p.bridge);
}

/* remote_leader (in peer_comm) as a rank of the bridge, or -1. */
static int bridge_rank(MPI_Comm peer, int remote_leader)
{
    MPI_Group gp, gb;
    int inter = 1, r = MPI_UNDEFINED;
    PMPI_Comm_test_inter(peer, &inter);
    if (inter || !hb_comm_one_world(peer))
        return -1;
    PMPI_Comm_group(peer, &gp);
    PMPI_Comm_group(p2p.bridge, &gb);
    PMPI_Group_translate_ranks(gp, 1, &remote_leader, gb, &r);
    PMPI_Group_free(&gp);
    PMPI_Group_free(&gb);
    return r == MPI_UNDEFINED ? -1 : r;
}

int hb_p2p_intercomm_create(MPI_Comm local_comm, int local_leader,
                            MPI_Comm peer_comm, int remote_leader, int tag,
                            MPI_Comm *newintercomm)
{
    int me = -1, r = -1, rc;
    if (p2p.bridge != MPI_COMM_NULL && local_comm != MPI_COMM_NULL)
        PMPI_Comm_rank(local_comm, &me);
    if (me == local_leader && peer_comm != MPI_COMM_NULL)
        r = bridge_rank(peer_comm, remote_leader);
    if (r >= 0) {
        peer_comm = p2p.bridge;
        remote_leader = r;
    }
    rc = PMPI_Intercomm_create(local_comm, local_leader, peer_comm,
                               remote_leader, tag, newintercomm);
    if (rc == MPI_SUCCESS)
        hb_p2p_comm_created(*newintercomm);
    return rc;
}
