/* The RDMA side of the runtime: verbs transport, registration cache and
 * memory-change monitor, brought up together after MPI_Init and torn down
 * together before MPI_Finalize.
 *
 * Every failure leaves hotbuf in pass-through for RDMA (tracking and the
 * report go on) with one line saying why: no device, the named device
 * missing, port down, memlock too low, an allgather failure.  When the
 * memory monitor is unavailable the transport still comes up, but
 * application buffers are not cached (only memory hotbuf allocates itself
 * could be registered safely), which the report says.
 */
#ifndef HOTBUF_RDMA_SETUP_H
#define HOTBUF_RDMA_SETUP_H

#include <mpi.h>
#include <stdint.h>

#include "config/config.h"
#include "rdma_stats.h"

struct hb_transport;
struct hb_regcache;
struct hb_region;

/* Immediates (RDMA WRITE WITH IMMEDIATE) are shared by the subsystems: the
 * top 4 bits of the 32-bit value say whose it is, the rest is theirs. */
enum { HB_IMM_CLASS_AG = 1, HB_IMM_CLASS_P2P = 2, HB_IMM_CLASSES = 16 };
#define HB_IMM_CLASS(imm) ((uint32_t)(imm) >> 28)
#define HB_IMM_BODY(imm) ((uint32_t)(imm)&0x0fffffffu)
#define HB_IMM_MAKE(cls, body) (((uint32_t)(cls) << 28) | HB_IMM_BODY(body))

/* Called inside the transport's progress (may post, must not close). */
typedef void (*hb_rdma_imm_fn)(void *ctx, int peer, uint32_t body,
                               uint32_t byte_len);

struct hb_rdma {
    struct hb_transport *tr;   /* NULL: RDMA pass-through */
    struct hb_regcache *cache; /* NULL: user buffers are not registered */
    int memmon_active;
    struct {
        hb_rdma_imm_fn fn;
        void *ctx;
    } imm[HB_IMM_CLASSES];
    uint64_t imm_dropped;            /* of a class nobody registered */
    char status[HB_RDMA_STATUS_LEN]; /* one line for the report */
};

/* Before anything registers memory (fork safety wants ibv_fork_init first). */
void hb_rdma_prepare_fork(struct hb_rdma *r);

/* Collective over comm (one allgather).  Never fails the job: on error r->tr
 * stays NULL and r->status says why.  Returns 0 when the transport is up. */
int hb_rdma_start(struct hb_rdma *r, const struct hb_config *cfg, int rank,
                  int size, MPI_Comm comm);

/* This rank's record of the RDMA report section (rdma_stats.h): figures,
 * failed peers (at most HB_FAILED_PEERS), status line. */
void hb_rdma_summarize(const struct hb_rdma *r, int rank,
                       struct hb_rdma_record *rec);

/* A referenced registration of [addr, addr+len) from the cache, after
 * waiting for every address-space change already begun in any thread to
 * reach the cache (hb_memmon_sync): without that wait a buffer freed and
 * reallocated by another thread a moment ago could still map to the old
 * pages' registration.  0, or the cache's error (then use PMPI). */
int hb_rdma_register(struct hb_rdma *r, const void *addr, size_t len,
                     struct hb_region **out);

/* Immediates of class cls go to fn from now on (fn NULL: dropped again).
 * 0, or -1 for a class out of range. */
int hb_rdma_imm_register(struct hb_rdma *r, unsigned cls, hb_rdma_imm_fn fn,
                         void *ctx);

/* Collective: a barrier (no peer may still write into our memory), then
 * close everything. */
void hb_rdma_stop(struct hb_rdma *r, MPI_Comm comm);

#endif
