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

/* RDMA WRITE WITH IMMEDIATE is shared by the subsystems that use it: the
 * top 4 bits of the 32-bit immediate name a class, the subsystem that
 * registered it gets the other 28 (its body).  One dispatcher, so that no
 * subsystem needs to know another. */
enum { HB_IMM_CLASS_AG = 1, HB_IMM_CLASS_P2P = 2 };
#define HB_IMM_CLASSES 16
#define HB_IMM_CLASS(imm) ((imm) >> 28)
#define HB_IMM_BODY(imm) ((imm)&0x0fffffff)
#define HB_IMM(cls, body) ((uint32_t)(cls) << 28 | ((body)&0x0fffffff))

/* Called from inside the transport's progress (any hb_progress), with the
 * transport peer (world rank) that wrote, the body and the bytes written.
 * May post; must not wait (no progress runs inside it). */
typedef void (*hb_imm_fn)(void *ctx, int peer, uint32_t body,
                          uint32_t byte_len);

struct hb_rdma {
    struct hb_transport *tr;   /* NULL: RDMA pass-through */
    struct hb_regcache *cache; /* NULL: user buffers are not registered */
    int memmon_active;
    char status[HB_RDMA_STATUS_LEN]; /* one line for the report */
    struct {
        hb_imm_fn fn;
        void *ctx;
    } imm[HB_IMM_CLASSES];
    uint64_t imm_dropped; /* immediates of a class nobody registered */
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

/* [addr, addr+len) is memory the MPI allocated (MPI_Win_allocate's): it
 * may be registered even where it is shared memory (hb_memmon_trust).
 * 0, or -1 (not marked: no monitor, or no memory); undone by untrust. */
int hb_rdma_trust(struct hb_rdma *r, const void *addr, size_t len);
void hb_rdma_untrust(struct hb_rdma *r, const void *addr, size_t len);

/* Routes immediates of class cls (1..15) to fn(ctx, ...); fn NULL stops
 * it (later ones are counted and dropped).  0, or -1 for a bad class or a
 * class another caller holds.  Register before the first peer can write
 * one: an immediate of an unregistered class is lost. */
int hb_rdma_imm_register(struct hb_rdma *r, unsigned cls, hb_imm_fn fn,
                         void *ctx);

/* Collective: a barrier (no peer may still write into our memory), then
 * close everything. */
void hb_rdma_stop(struct hb_rdma *r, MPI_Comm comm);

#endif
