/* MPI_Alloc_mem / MPI_Free_mem from registered chunks (see mem.h). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/note.h"
#include "core/runtime.h"
#include "core/subsys.h"
#include "mem.h"
#include "mem_stats.h"
#include "rdma/rdma.h"
#include "regcache/regcache.h"
#include "util/arena.h"

/* Blocks are aligned to a cache line: at least what either MPI's
 * Alloc_mem gives (malloc's 16 bytes). */
#define BLOCK_ALIGN 64

/* Module state.  Static: the bindings that reach it have no context.
 * Touched under hb_lock (MPI_THREAD_MULTIPLE). */
static struct {
    int open;                   /* serving: between start and stop */
    const struct hb_ctx *ctx;   /* set while open */
    struct hb_arena arena;      /* kept after stop while blocks are live */
    size_t chunk;               /* HOTBUF_ALLOC_MEM */
    size_t too_big;             /* a chunk this long never fits the cache */
    struct hb_mem_record stats; /* this rank's report record */
} mem;

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* An Alloc_mem the MPI should see: hints it may understand. */
static int has_keys(MPI_Info info)
{
    int n = 0;
    return info != MPI_INFO_NULL && PMPI_Info_get_nkeys(info, &n) == 0 && n;
}

/* The chunk that holds a block of size bytes: HOTBUF_ALLOC_MEM, or one
 * of its own for a larger block, in whole pages. */
static size_t chunk_len(size_t size)
{
    size_t pg = page_size();
    size_t len = size > mem.chunk ? size : mem.chunk;
    return (len + pg - 1) & ~(pg - 1);
}

/* A chunk longer than the cache's byte cap (a low RLIMIT_MEMLOCK) can
 * never be registered: said once, and no chunk that long is tried again.
 * Trying would map and unmap one on every Alloc_mem of the run, which
 * changes nothing for the application but its timing. */
static void chunk_too_big(size_t len)
{
    if (!mem.too_big)
        hb_note("HOTBUF_ALLOC_MEM: a %zu KiB chunk exceeds the registration "
                "cache's share of RLIMIT_MEMLOCK; MPI_Alloc_mem blocks that "
                "need one come from the MPI",
                len >> 10);
    if (!mem.too_big || len < mem.too_big)
        mem.too_big = len;
}

/* Maps and registers a chunk of len bytes; 0, or -1. */
static int add_chunk(size_t len)
{
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    struct hb_region *reg = NULL;
    int err = hb_rdma_register(mem.ctx->rdma, m, len, &reg);
    if (err == 0 && hb_arena_add(&mem.arena, m, len, reg) == 0) {
        mem.stats.chunks++;
        mem.stats.chunk_bytes += len;
        return 0;
    }
    if (err == -E2BIG)
        chunk_too_big(len);
    if (reg)
        hb_regcache_put(mem.ctx->rdma->cache, reg);
    munmap(m, len);
    return -1;
}

/* A block from the chunks, or NULL with *why set. */
static void *pool_alloc(MPI_Aint size, MPI_Info info, enum hb_mem_pass *why)
{
    *why = HB_MEM_PASS_OFF;
    if (!mem.open)
        return NULL;
    *why = HB_MEM_PASS_NO_CACHE;
    if (!mem.ctx->rdma->cache)
        return NULL;
    *why = HB_MEM_PASS_SIZE;
    if (size <= 0 || (uint64_t)size > SIZE_MAX / 2)
        return NULL;
    *why = HB_MEM_PASS_INFO;
    if (has_keys(info))
        return NULL;
    void *p = hb_arena_alloc(&mem.arena, (size_t)size);
    if (p)
        return p;
    size_t len = chunk_len((size_t)size);
    *why = HB_MEM_PASS_CAP;
    if (mem.too_big && len >= mem.too_big)
        return NULL;
    *why = HB_MEM_PASS_FAILED;
    return add_chunk(len) == 0 ? hb_arena_alloc(&mem.arena, (size_t)size)
                               : NULL;
}

int hb_mem_alloc(MPI_Aint size, MPI_Info info, void *baseptr)
{
    enum hb_mem_pass why;
    hb_lock();
    void *p = pool_alloc(size, info, &why);
    if (p) {
        mem.stats.served++;
        mem.stats.served_bytes += (uint64_t)size;
        if (mem.arena.in_use > mem.stats.peak_in_use)
            mem.stats.peak_in_use = mem.arena.in_use;
    } else {
        mem.stats.passed[why]++;
    }
    hb_unlock();
    if (!p)
        return PMPI_Alloc_mem(size, info, baseptr);
    memcpy(baseptr, &p, sizeof(p)); /* baseptr is a void ** in disguise */
    return MPI_SUCCESS;
}

/* A chunk of its own (a request larger than HOTBUF_ALLOC_MEM) goes when
 * its block does, else sizes that grow from call to call would each keep
 * one pinned; after stop every chunk goes when its last block does. */
static void drop_if_empty(const void *p)
{
    const struct hb_arena_chunk *c = hb_arena_chunk_of(&mem.arena, p);
    struct hb_arena_chunk out;
    if (!c || (mem.open && c->len <= mem.chunk) ||
        !hb_arena_take_empty(&mem.arena, p, &out))
        return;
    if (out.user)
        hb_regcache_put(mem.ctx->rdma->cache, out.user);
    munmap((void *)out.base, out.len);
}

int hb_mem_free(void *base)
{
    hb_lock();
    int r = mem.arena.nchunks ? hb_arena_free(&mem.arena, base) : -1;
    if (r == 1) {
        mem.stats.freed++;
        drop_if_empty(base);
    }
    if (r < 0)
        mem.stats.freed_mpi++;
    hb_unlock();
    if (r < 0)
        return PMPI_Free_mem(base); /* not ours: the MPI's, or its error */
    if (r == 0) /* inside a chunk of ours, but no block starts there */
        return PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_BASE);
    return MPI_SUCCESS;
}

static int start(const struct hb_ctx *ctx)
{
    mem.chunk = (size_t)ctx->cfg->alloc_mem;
    mem.too_big = 0;
    if (!mem.chunk)
        return 0; /* off: every call goes to the MPI (reason "off") */
    hb_arena_init(&mem.arena, BLOCK_ALIGN);
    mem.ctx = ctx;
    mem.open = 1;
    return 0;
}

/* The chunks' registrations go with the cache (after this); the memory
 * stays while the application holds blocks of it (it may use and free
 * them after MPI_Finalize). */
static void chunk_gone(void *base, size_t len, void *user)
{
    (void)user;
    munmap(base, len);
}

static void stop(const struct hb_ctx *ctx)
{
    hb_lock();
    mem.open = 0;
    for (size_t i = 0; i < mem.arena.nchunks; i++) {
        hb_regcache_put(ctx->rdma->cache, mem.arena.chunks[i].user);
        mem.arena.chunks[i].user = NULL;
    }
    if (mem.arena.in_use == 0)
        hb_arena_destroy(&mem.arena, chunk_gone);
    hb_unlock();
}

/* clang-format off */
const struct hb_subsys hb_mem_subsys = {
    .name = "mem", .start = start, .stop = stop,
    .section = &hb_mem_section, .counters = &mem.stats,
};
/* clang-format on */
