/* Wait, Test and their all/any/some forms over arrays that may mix
 * hotbuf's requests and MPI's (P2P-DESIGN.md §5.9).  An array with none
 * of hotbuf's goes to PMPI whole; otherwise every request is tested on
 * its own, in index order, with hotbuf's progress between passes, and
 * nothing blocks inside PMPI while a hotbuf receive waits for a match
 * that only hotbuf can make (unless the progress hook runs it there). */
#include <stdlib.h>

#include "core/progress.h"
#include "p2p_int.h"

/* MPI may block in its own wait: nothing hotbuf owes a match waits. */
static int pmpi_may_block(void)
{
    return p2p.hook || !p2p.n_posted;
}

static int any_ours(int n, const MPI_Request reqs[])
{
    if (!p2p.reqs)
        return 0;
    for (int i = 0; i < n; i++)
        if (hb_p2p_req_find(reqs[i]))
            return 1;
    return 0;
}

/* An MPI request, tested without blocking.  For the any/some forms an
 * inactive one must be told from a completed one: Testany on one element
 * says so (index MPI_UNDEFINED). */
static int test_pmpi(MPI_Request *req, int *done, int *inactive, MPI_Status *st)
{
    int idx = 0, rc = PMPI_Testany(1, req, &idx, done, st);
    *inactive = *done && idx == MPI_UNDEFINED;
    return rc;
}

/* MPI's own receive, known active: PMPI_Test, whose error semantics are
 * MPI_Test's (Testany's differ: Open MPI 4.1 drops a persistent request's
 * error, MPICH raises it on MPI_COMM_WORLD's handler).  Open MPI frees a
 * persistent request that completed with an error (the handle comes back
 * null): then hotbuf forgets it too. */
static int test_tracked(struct p2p_req *r, MPI_Request *req, int *done,
                        MPI_Status *st)
{
    int rc = PMPI_Test(req, done, st);
    if (*done && r->persistent && *req != MPI_REQUEST_NULL)
        r->state = RQ_INACTIVE;
    else if (*done)
        hb_p2p_req_release(r);
    return rc;
}

/* One request, without blocking: *done when it completed (its status in
 * st, the handle updated) or is null or inactive (*inactive, empty
 * status).  claim: claim messages for it first; the array forms claim
 * once per pass instead, before they scan in index order as MPI does
 * (else a later index could complete first just because it was claimed
 * while an earlier one was being tested). */
static int test_one(MPI_Request *req, int *done, int *inactive, MPI_Status *st,
                    int claim)
{
    struct p2p_req *r = hb_p2p_req_find(*req);
    *done = *inactive = 0;
    if (!r)
        return test_pmpi(req, done, inactive, st);
    if (r->state == RQ_INACTIVE) {
        *done = *inactive = 1;
        hb_p2p_status_empty(st);
        return MPI_SUCCESS;
    }
    if (r->state == RQ_PMPI) /* MPI's receive, remembered for migration */
        return test_tracked(r, req, done, st);
    if (!hb_p2p_req_poll(r)) {
        if (claim && r->state == RQ_POSTED && r->c)
            hb_p2p_claim(r->c);
        if (!hb_p2p_req_poll(r))
            return MPI_SUCCESS;
    }
    *done = 1;
    return hb_p2p_req_complete(r, req, st);
}

static MPI_Status *nth(MPI_Status sts[], int i)
{
    return sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i];
}

static void entry(void)
{
    hb_p2p_flush_frees();
    hb_p2p_poll();
}

int hb_p2p_test(MPI_Request *req, int *flag, MPI_Status *st)
{
    HB_P2P_ROUTE(test);
    int inactive;
    entry();
    if (!hb_p2p_req_find(*req))
        return PMPI_Test(req, flag, st);
    return test_one(req, flag, &inactive, st, 1);
}

int hb_p2p_wait(MPI_Request *req, MPI_Status *st)
{
    HB_P2P_ROUTE(wait);
    int done = 0, inactive, rc;
    entry();
    if (!hb_p2p_req_find(*req) && pmpi_may_block())
        return PMPI_Wait(req, st);
    while ((rc = test_one(req, &done, &inactive, st, 1)) == MPI_SUCCESS &&
           !done)
        hb_progress_yield(NULL);
    return rc;
}

/* One pass of Waitall: completes what it can; 1 when all are done.  An
 * error is kept in the request's status and makes the call return
 * MPI_ERR_IN_STATUS, as MPI's own Waitall does. */
static int all_pass(int n, MPI_Request reqs[], MPI_Status sts[], char *done,
                    int *err)
{
    int all = 1, d, inactive;
    hb_p2p_poll();
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        int rc = test_one(&reqs[i], &d, &inactive, nth(sts, i), 0);
        if (rc != MPI_SUCCESS) {
            *err = 1;
            d = 1;
            if (sts != MPI_STATUSES_IGNORE)
                sts[i].MPI_ERROR = rc;
        }
        done[i] = (char)d;
        all &= d;
    }
    return all;
}

int hb_p2p_waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    HB_P2P_ROUTE(waitall);
    int err = 0;
    char *done;
    entry();
    if (!any_ours(n, reqs) && pmpi_may_block())
        return PMPI_Waitall(n, reqs, sts);
    if (!(done = calloc((size_t)(n > 0 ? n : 1), 1)))
        return PMPI_Waitall(n, reqs, sts);
    while (!all_pass(n, reqs, sts, done, &err))
        hb_progress_yield(NULL);
    free(done);
    return err ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

/* Complete, by MPI's own status (no request freed), or still pending. */
static int is_complete(MPI_Request req)
{
    struct p2p_req *r = hb_p2p_req_find(req);
    int flag = 1;
    if (!r || r->state == RQ_PMPI) {
        if (req != MPI_REQUEST_NULL)
            PMPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE);
        return flag;
    }
    if (r->state == RQ_INACTIVE)
        return 1;
    if (r->state == RQ_POSTED && r->c)
        hb_p2p_claim(r->c);
    return hb_p2p_req_poll(r);
}

/* Testall completes nothing unless everything is complete. */
int hb_p2p_testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
    HB_P2P_ROUTE(testall);
    int err = 0;
    char *done;
    entry();
    if (!any_ours(n, reqs))
        return PMPI_Testall(n, reqs, flag, sts);
    *flag = 1;
    for (int i = 0; i < n && *flag; i++)
        *flag = is_complete(reqs[i]);
    if (!*flag || !(done = calloc((size_t)(n > 0 ? n : 1), 1)))
        return MPI_SUCCESS;
    all_pass(n, reqs, sts, done, &err);
    free(done);
    return err ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

/* One pass of Waitany/Testany: the first complete request by index.
 * Returns 1 when it found one or every request is null or inactive. */
static int any_pass(int n, MPI_Request reqs[], int *index, MPI_Status *st,
                    int *rc)
{
    int active = 0, d, inactive;
    hb_p2p_poll();
    for (int i = 0; i < n; i++) {
        *rc = test_one(&reqs[i], &d, &inactive, st, 0);
        if (d && !inactive) {
            *index = i;
            return 1;
        }
        active |= !d;
    }
    *index = MPI_UNDEFINED;
    if (active)
        return 0;
    hb_p2p_status_empty(st);
    *rc = MPI_SUCCESS;
    return 1;
}

int hb_p2p_waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
    HB_P2P_ROUTE(waitany);
    int rc = MPI_SUCCESS;
    entry();
    if (!any_ours(n, reqs) && pmpi_may_block())
        return PMPI_Waitany(n, reqs, index, st);
    while (!any_pass(n, reqs, index, st, &rc))
        hb_progress_yield(NULL);
    return rc;
}

int hb_p2p_testany(int n, MPI_Request reqs[], int *index, int *flag,
                   MPI_Status *st)
{
    HB_P2P_ROUTE(testany);
    int rc = MPI_SUCCESS;
    entry();
    if (!any_ours(n, reqs))
        return PMPI_Testany(n, reqs, index, flag, st);
    *flag = any_pass(n, reqs, index, st, &rc);
    return rc;
}

/* One pass of Waitsome/Testsome: every complete request, statuses packed
 * in completion order (sts[k] for indices[k]). */
static int some_pass(int n, MPI_Request reqs[], int *outcount, int indices[],
                     MPI_Status sts[], int *err)
{
    int active = 0, d, inactive, k = 0;
    hb_p2p_poll();
    for (int i = 0; i < n; i++) {
        int rc = test_one(&reqs[i], &d, &inactive, nth(sts, k), 0);
        if (rc != MPI_SUCCESS) {
            *err = 1;
            d = 1, inactive = 0;
            if (sts != MPI_STATUSES_IGNORE)
                sts[k].MPI_ERROR = rc;
        }
        if (d && !inactive)
            indices[k++] = i;
        active |= !inactive;
    }
    *outcount = active ? k : MPI_UNDEFINED;
    return k || !active;
}

int hb_p2p_waitsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                    MPI_Status sts[])
{
    HB_P2P_ROUTE(waitsome);
    int err = 0;
    entry();
    if (!any_ours(n, reqs) && pmpi_may_block())
        return PMPI_Waitsome(n, reqs, outcount, indices, sts);
    while (!some_pass(n, reqs, outcount, indices, sts, &err))
        hb_progress_yield(NULL);
    return err ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int hb_p2p_testsome(int n, MPI_Request reqs[], int *outcount, int indices[],
                    MPI_Status sts[])
{
    HB_P2P_ROUTE(testsome);
    int err = 0;
    entry();
    if (!any_ours(n, reqs))
        return PMPI_Testsome(n, reqs, outcount, indices, sts);
    some_pass(n, reqs, outcount, indices, sts, &err);
    return err ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int hb_p2p_request_get_status(MPI_Request req, int *flag, MPI_Status *st)
{
    HB_P2P_ROUTE(request_get_status);
    struct p2p_req *r;
    entry();
    r = hb_p2p_req_find(req);
    if (!r || r->state == RQ_PMPI)
        return PMPI_Request_get_status(req, flag, st);
    *flag = is_complete(req);
    if (r->state == RQ_INACTIVE)
        hb_p2p_status_empty(st);
    else if (*flag && st != MPI_STATUS_IGNORE)
        *st = r->st;
    return *flag ? r->err : MPI_SUCCESS;
}

/* A receive still in the matcher is withdrawn and completes cancelled; a
 * matched one completes normally (MPI-4.0 §3.8.4). */
int hb_p2p_cancel(MPI_Request *req)
{
    HB_P2P_ROUTE(cancel);
    struct p2p_req *r = hb_p2p_req_find(*req);
    if (!r)
        return PMPI_Cancel(req);
    if (r->state == RQ_PMPI) {
        r->cancelled = 1;
        return PMPI_Cancel(req);
    }
    if (r->state != RQ_POSTED)
        return MPI_SUCCESS;
    hb_pm_unpost(&r->c->m, &r->n);
    p2p.n_posted--;
    hb_p2p_status_empty(&r->st);
    PMPI_Status_set_cancelled(&r->st, 1);
    r->state = RQ_DONE;
    r->err = MPI_SUCCESS;
    hb_p2p_comm_release_pending(r->c);
    return MPI_SUCCESS;
}

int hb_p2p_request_free(MPI_Request *req)
{
    HB_P2P_ROUTE(request_free);
    struct p2p_req *r = hb_p2p_req_find(*req);
    if (!r) {
        hb_p2p_psend_forget(*req);
        return PMPI_Request_free(req);
    }
    if (r->psend)
        hb_p2p_psend_forget(*req); /* its record went: nothing pending */
    if (r->state == RQ_PMPI || r->state == RQ_INACTIVE || r->psend) {
        hb_p2p_req_release(r); /* MPI's handle: MPI frees it */
        return PMPI_Request_free(req);
    }
    r->freed = 1;
    hb_list_add_head(&p2p.orphans, &r->orphan);
    *req = MPI_REQUEST_NULL;
    if (!p2p.busy) { /* an orphan's PMPI_Test may run the hook, whose poll
                        would finish the same orphans under this loop */
        p2p.busy = 1;
        hb_p2p_poll_orphans();
        p2p.busy = 0;
    }
    return MPI_SUCCESS;
}
