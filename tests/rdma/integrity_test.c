/* No stale registration, end to end (run in the soft-RoCE guest, 2 ranks).
 *
 * Rank 0 RDMA-writes a message from an application buffer registered
 * through hotbuf's registration cache into rank 1, then lets the memory go
 * in one of the ways a real application does, gets new memory at the same
 * address with new content, and writes again.  Rank 1 checks every
 * message against the content rank 0 meant to send.  A stale registration
 * (the NIC still reading the old, pinned pages) shows up as a mismatch.
 *
 *   integrity_test ITERATIONS EXPECT
 * EXPECT "clean": 0 mismatches required (the memory monitor is on);
 * EXPECT "stale": mismatches required (run with HOTBUF_MEMMON=off, the
 * monitor's debug switch): proof that the test can fail.
 *
 * The ways memory goes, in turn:
 *   small   malloc/free of 4 KiB (heap: same pages come back, never stale)
 *   large   malloc/free of 256 KiB (glibc munmaps it; the next malloc maps
 *           fresh pages, usually at the same address)
 *   realloc a 192 KiB block grown to 384 KiB and back (glibc mremaps it)
 *   madvise MADV_DONTNEED on a long-lived mapping (fresh zero pages)
 * The queue pair is plain verbs set up over MPI: it is the cache and the
 * monitor that are under test. */
#include <infiniband/verbs.h>
#include <malloc.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "regcache/memmon.h"
#include "regcache/regcache.h"
#include "regcache/regcache_verbs.h"

#define MSG 4096

struct endpoint {
    uint32_t qpn, psn;
    union ibv_gid gid;
    uint64_t slot; /* rank 1's landing buffer */
    uint32_t rkey;
};

struct verbs {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    int gid_index;
};

static void die(const char *what)
{
    fprintf(stderr, "integrity_test: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void open_verbs(struct verbs *v)
{
    int n;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || !n || !(v->ctx = ibv_open_device(list[0])))
        die("no verbs device");
    ibv_free_device_list(list);
    const char *g = getenv("RXEVM_GID_INDEX");
    v->gid_index = g ? atoi(g) : 1;
    v->pd = ibv_alloc_pd(v->ctx);
    v->cq = ibv_create_cq(v->ctx, 16, NULL, NULL, 0);
    struct ibv_qp_init_attr qa = {
        .send_cq = v->cq,
        .recv_cq = v->cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 8,
                .max_recv_wr = 1,
                .max_send_sge = 1,
                .max_recv_sge = 1},
    };
    if (!v->pd || !v->cq || !(v->qp = ibv_create_qp(v->pd, &qa)))
        die("cannot create PD/CQ/QP");
}

static void connect_qp(struct verbs *v, const struct endpoint *remote,
                       uint32_t my_psn)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
    if (ibv_modify_qp(v->qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                          IBV_QP_ACCESS_FLAGS))
        die("QP to INIT");
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = remote->qpn;
    a.rq_psn = remote->psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = remote->gid;
    a.ah_attr.grh.sgid_index = (uint8_t)v->gid_index;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    if (ibv_modify_qp(v->qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                          IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        die("QP to RTR");
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = my_psn;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(v->qp, &a,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                          IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC))
        die("QP to RTS");
}

/* Content of message i: every byte depends on i, so old content never
 * passes for new. */
static void fill(unsigned char *p, uint32_t i)
{
    uint32_t x = i * 2654435761u + 1;
    for (int k = 0; k < MSG; k++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[k] = (unsigned char)x;
    }
}

static void rdma_write(struct verbs *v, struct hb_regcache *rc,
                       const unsigned char *buf, const struct endpoint *remote)
{
    struct hb_region *r = NULL;
    hb_memmon_sync_strict();
    if (hb_regcache_get(rc, buf, MSG, &r))
        die("registration failed");
    struct ibv_sge sge = {(uintptr_t)buf, MSG, hb_region_mr(r)->lkey};
    struct ibv_send_wr wr = {.sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED,
                             .wr.rdma = {remote->slot, remote->rkey}},
                       *bad;
    if (ibv_post_send(v->qp, &wr, &bad))
        die("post send");
    struct ibv_wc wc;
    int n;
    while ((n = ibv_poll_cq(v->cq, 1, &wc)) == 0)
        ;
    if (n < 0 || wc.status != IBV_WC_SUCCESS)
        die("RDMA write failed");
    hb_regcache_put(rc, r);
}

/* The buffer for message i, after letting the previous one go. */
struct buffers {
    unsigned char *small, *large, *grown, *mapped;
    size_t grown_len;
};

static unsigned char *next_buffer(struct buffers *b, uint32_t i)
{
    switch (i % 4) {
    case 0: free(b->small); return b->small = malloc(MSG);
    case 1: free(b->large); return b->large = malloc(256 * 1024);
    case 2:
        b->grown_len = b->grown_len == 192 * 1024 ? 384 * 1024 : 192 * 1024;
        b->grown = realloc(b->grown, b->grown_len);
        return b->grown;
    default: madvise(b->mapped, 64 * 1024, MADV_DONTNEED); return b->mapped;
    }
}

static void sender(struct verbs *v, const struct endpoint *remote,
                   uint32_t iters)
{
    struct hb_regcache *rc = NULL;
    char why[200] = "";
    if (hb_regcache_create(&hb_regcache_verbs_watched_ops, v->pd, 0, 0, &rc))
        die("cache");
    /* the test's own switch, as hotbuf's config would pass it */
    const char *mode = getenv("HOTBUF_MEMMON");
    unsigned flags = mode && !strcmp(mode, "off") ? HB_MEMMON_F_MUTED : 0;
    if (hb_memmon_start((hb_memmon_cb)hb_regcache_invalidate, rc, flags, why,
                        sizeof(why)))
        die(why);
    /* A fixed mmap threshold: glibc would otherwise raise it after the first
     * free of a large block and serve the rest from the heap, never
     * unmapping anything (which is valid, but not what this test is for). */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    struct buffers b = {0};
    b.grown = malloc(b.grown_len = 384 * 1024);
    b.mapped = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (uint32_t i = 0; i < iters; i++) {
        unsigned char *buf = next_buffer(&b, i);
        fill(buf, i);
        rdma_write(v, rc, buf, remote);
        MPI_Send(&i, 1, MPI_UINT32_T, 1, 0,
                 MPI_COMM_WORLD); /* "message i is there" */
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE); /* checked */
    }
    struct hb_regcache_stats st;
    struct hb_memmon_stats ms;
    hb_regcache_stats(rc, &st);
    hb_memmon_stats(&ms);
    printf(
        "sender: %llu registrations, %llu hits, %llu invalidations; monitor: %llu unmap, "
        "%llu remove, %llu remap events, %llu muted\n",
        (unsigned long long)st.misses, (unsigned long long)st.hits,
        (unsigned long long)st.invalidations,
        (unsigned long long)ms.unmap_events,
        (unsigned long long)ms.remove_events,
        (unsigned long long)ms.remap_events, (unsigned long long)ms.muted);
    hb_memmon_stop();
    hb_regcache_destroy(rc);
}

static uint64_t receiver(unsigned char *slot, uint32_t iters,
                         uint64_t per_kind[4])
{
    unsigned char *want = malloc(MSG);
    uint64_t bad = 0;
    for (uint32_t n = 0; n < iters; n++) {
        uint32_t i;
        MPI_Recv(&i, 1, MPI_UINT32_T, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fill(want, i);
        if (memcmp(slot, want, MSG)) {
            bad++;
            per_kind[i % 4]++;
        }
        memset(slot, 0, MSG);
        MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
    free(want);
    return bad;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint32_t iters = argc > 1 ? (uint32_t)atoi(argv[1]) : 10000;
    const char *expect = argc > 2 ? argv[2] : "clean";
    if (size != 2)
        die("needs 2 ranks");

    struct verbs v;
    open_verbs(&v);
    struct endpoint me = {.qpn = v.qp->qp_num, .psn = 1000u + (uint32_t)rank},
                    peer;
    if (ibv_query_gid(v.ctx, 1, v.gid_index, &me.gid))
        die("query gid");
    unsigned char *slot = NULL;
    struct ibv_mr *slot_mr = NULL;
    if (rank == 1) {
        slot = calloc(1, MSG);
        slot_mr = ibv_reg_mr(v.pd, slot, MSG,
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (!slot_mr)
            die("register slot");
        me.slot = (uintptr_t)slot;
        me.rkey = slot_mr->rkey;
    }
    MPI_Sendrecv(&me, sizeof(me), MPI_BYTE, 1 - rank, 9, &peer, sizeof(peer),
                 MPI_BYTE, 1 - rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    connect_qp(&v, &peer, me.psn);
    MPI_Barrier(MPI_COMM_WORLD);

    uint64_t bad = 0, per_kind[4] = {0};
    if (rank == 0)
        sender(&v, &peer, iters);
    else
        bad = receiver(slot, iters, per_kind);
    MPI_Bcast(&bad, 1, MPI_UINT64_T, 1, MPI_COMM_WORLD);
    MPI_Bcast(per_kind, 4, MPI_UINT64_T, 1, MPI_COMM_WORLD);
    int ok = !strcmp(expect, "stale") ? bad > 0 : bad == 0;
    if (rank == 0)
        printf(
            "%s integrity/%s: %u messages, %llu mismatches (small %llu, large %llu, "
            "realloc %llu, madvise %llu)\n",
            ok ? "PASS" : "FAIL", expect, iters, (unsigned long long)bad,
            (unsigned long long)per_kind[0], (unsigned long long)per_kind[1],
            (unsigned long long)per_kind[2], (unsigned long long)per_kind[3]);
    if (slot_mr)
        ibv_dereg_mr(slot_mr);
    MPI_Finalize();
    return ok ? 0 : 1;
}
