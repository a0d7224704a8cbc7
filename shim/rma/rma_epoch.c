/* Synchronization: when a target's memory may be written directly, and
 * completion of hotbuf's operations before every PMPI synchronization call.
 *
 * When does the target's epoch allow a direct write?
 *  - Fence: once the origin's opening fence has returned.  MPI requires
 *    that operations started after a fence reach the target only after the
 *    target called that fence; Open MPI (osc pt2pt, rdma, ucx) and MPICH
 *    (ch4) meet it by ending the fence in a barrier.  Only a fence asserting
 *    MPI_MODE_NOPRECEDE may skip that barrier (no operation precedes it), so
 *    after such a fence hotbuf adds its own barrier on the window's
 *    duplicate communicator.  MPI requires the assertion on all ranks or
 *    none, so every rank takes that barrier.
 *  - Post/start: MPI_Win_start need not wait for the matching MPI_Win_post
 *    (Open MPI's does not).  hotbuf makes each MPI_Win_post send a zero-byte
 *    token to every origin of its group, and routes an operation to a
 *    target only once that target's token is in; MPI_Win_complete waits
 *    for the remaining tokens so that they pair with their epoch.
 *  - Locks: MPI may acquire a lock lazily, at the first operation or at the
 *    flush.  Before the first direct write of a lock epoch hotbuf calls
 *    PMPI_Win_flush on the target, which makes MPI hold the lock (a cheap
 *    no-op where the lock is already held); MPI_MODE_NOCHECK skips it.
 *
 * Completion: RDMA write completion on a reliable connection means the
 * data is placed at the target, so completing before the PMPI closing call
 * orders our data before MPI's own end-of-epoch handshake.
 */
#include <string.h>

#include "core/progress.h"
#include "core/runtime.h"
#include "rma.h"
#include "rma_int.h"

/* A token in: the target's registration as of its post replaces what
 * this rank knew (it may have been renewed since the last fence). */
static void token_taken(struct hb_win *w, int target)
{
    w->targets[target].rkey = w->tokbuf[target].rkey;
    w->targets[target].ok = w->tokbuf[target].ok;
    w->pscw[target] = HB_PSCW_POSTED;
}

int hb_rma_pscw_token_in(struct hb_win *w, int target)
{
    int flag = 0;
    if (w->pscw[target] == HB_PSCW_WAITING &&
        PMPI_Test(&w->tokens[target], &flag, MPI_STATUS_IGNORE) ==
            MPI_SUCCESS &&
        flag)
        token_taken(w, target);
    return w->pscw[target] == HB_PSCW_POSTED;
}

int hb_rma_epoch_allows(struct hb_win *w, int target)
{
    if (w->lock[target] == HB_LOCKED)
        return 0;
    if (w->lock[target] == HB_LOCKED_UNPROBED) {
        PMPI_Win_flush(target, w->win);
        w->lock[target] = HB_LOCKED;
        return 0;
    }
    if (w->nstart)
        return hb_rma_pscw_token_in(w, target) ? 0 : HB_RMA_EPOCH;
    return w->fence_open ? 0 : HB_RMA_EPOCH;
}

/* ---- hooks called by the wrappers ---------------------------------------------- */

void hb_rma_before_sync(MPI_Win win, int target)
{
    struct hb_win *w = hb_rma_find(win);
    if (!w)
        return;
    hb_nested++;
    hb_progress();
    hb_rma_complete(&hb_rma, w, target);
    hb_nested--;
}

/* A fence that opens an epoch: every rank checks its registration, they
 * agree whether any changed, and if so all records are sent again, all
 * before any rank returns to make its next access (see rma.h).  The
 * agreement doubles as the barrier a MPI_MODE_NOPRECEDE fence lacks.
 * NOSUCCEED is given by all ranks or none: the same ranks take part. */
void hb_rma_after_fence(MPI_Win win, int assert)
{
    struct hb_win *w = hb_rma_find(win);
    struct hb_region *old = NULL;
    if (!w)
        return;
    w->fence_open = !(assert &MPI_MODE_NOSUCCEED);
    if (!w->fence_open || !w->any_rdma)
        return;
    hb_nested++;
    hb_rma_win_renew(w, &old);
    if (hb_rma_win_agree(w, w->dirty))
        hb_rma_win_republish(w);
    w->dirty = 0;
    hb_rma_win_release(old); /* no origin holds its rkey any more */
    hb_nested--;
}

/* Passive target: no call all ranks pass.  A rank renews its own
 * registration at its lock calls and lets the old one go at once: an
 * origin that still uses the old rkey gets a remote access error (redone
 * on PMPI) instead of writing into pages the target no longer sees.  The
 * new one reaches the origins at the next fence or post (rma.h). */
static void renew_now(struct hb_win *w)
{
    struct hb_region *old = NULL;
    hb_nested++;
    if (hb_rma_win_renew(w, &old))
        hb_rma_win_release(old);
    hb_nested--;
}

void hb_rma_after_lock(MPI_Win win, int target, int assert)
{
    struct hb_win *w = hb_rma_find(win);
    if (!w)
        return;
    renew_now(w);
    uint8_t state = (assert &MPI_MODE_NOCHECK) ? HB_LOCKED : HB_LOCKED_UNPROBED;
    if (!w->lock)
        return;
    if (target >= 0 && target < w->size)
        w->lock[target] = state;
    else if (target < 0)
        memset(w->lock, state, (size_t)w->size);
}

void hb_rma_after_unlock(MPI_Win win, int target)
{
    struct hb_win *w = hb_rma_find(win);
    if (!w || !w->lock)
        return;
    renew_now(w);
    if (target >= 0 && target < w->size)
        w->lock[target] = HB_UNLOCKED;
    else if (target < 0)
        memset(w->lock, HB_UNLOCKED, (size_t)w->size);
}

/* The ranks of group in the window's communicator: n of them, in
 * w->scratch[n..2n) (MPI_UNDEFINED for a rank outside it). */
static int *group_ranks(const struct hb_win *w, MPI_Group group, int *n)
{
    *n = 0;
    if (PMPI_Group_size(group, n) != MPI_SUCCESS || *n <= 0 || *n > w->size)
        return NULL;
    for (int i = 0; i < *n; i++)
        w->scratch[i] = i;
    PMPI_Group_translate_ranks(group, *n, w->scratch, w->group,
                               w->scratch + *n);
    return w->scratch + *n;
}

/* Tokens go only to origins that route: the others would never take them.
 * Each carries this rank's registration, renewed first if the memory
 * changed: the origins of this epoch learn it before their first access
 * (the others at the next fence, or from their next token).  The old one
 * goes at once: the previous exposure epoch is over (MPI_Win_wait or a
 * fence ended it). */
void hb_rma_after_post(MPI_Win win, MPI_Group group)
{
    struct hb_win *w = hb_rma_find(win);
    int n;
    if (!w || !w->any_rdma)
        return;
    renew_now(w);
    const int *ranks = group_ranks(w, group, &n);
    for (int i = 0; ranks && i < n; i++) {
        MPI_Request req;
        int r = ranks[i];
        if (r == MPI_UNDEFINED || !w->targets[r].rdma)
            continue;
        PMPI_Isend(&w->mytoken, 2, MPI_UINT32_T, w->targets[r].world,
                   w->tag + HB_RMA_TAG_TOKEN, hb_rma.ctx->comm, &req);
        PMPI_Request_free(&req);
        hb_rma.stats.pscw_tokens++;
    }
}

void hb_rma_after_start(MPI_Win win, MPI_Group group)
{
    struct hb_win *w = hb_rma_find(win);
    int n;
    if (!w || !w->rdma)
        return;
    const int *ranks = group_ranks(w, group, &n);
    for (int i = 0; ranks && i < n; i++) {
        int r = ranks[i];
        if (r == MPI_UNDEFINED || w->pscw[r] != HB_PSCW_NONE)
            continue;
        PMPI_Irecv(&w->tokbuf[r], 2, MPI_UINT32_T, w->targets[r].world,
                   w->tag + HB_RMA_TAG_TOKEN, hb_rma.ctx->comm, &w->tokens[r]);
        w->pscw[r] = HB_PSCW_WAITING;
        w->nstart++;
    }
}

/* The epoch's tokens are all taken here, used or not, so that the next
 * epoch's token cannot be mistaken for this one's. */
void hb_rma_before_complete(MPI_Win win)
{
    struct hb_win *w = hb_rma_find(win);
    if (!w)
        return;
    hb_rma_before_sync(win, -1);
    for (int r = 0; w->nstart && r < w->size; r++) {
        if (w->pscw[r] == HB_PSCW_WAITING &&
            PMPI_Wait(&w->tokens[r], MPI_STATUS_IGNORE) == MPI_SUCCESS)
            token_taken(w, r); /* keep the freshest registration */
        w->pscw[r] = HB_PSCW_NONE;
    }
    w->nstart = 0;
}
