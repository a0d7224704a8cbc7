/* Communicator names from the creation path (p2p_name.h). */
#include "p2p_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MurmurHash3's finalizer: every input bit moves every output bit. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Two lanes with different constants: a 128-bit chain. */
static void absorb(uint64_t h[2], uint64_t w)
{
    h[0] = mix64(h[0] ^ w) + 0x9e3779b97f4a7c15ull;
    h[1] = mix64(h[1] + w * 0xbf58476d1ce4e5b9ull) ^ 0x94d049bb133111ebull;
}

static const char *const labels[HB_P2P_CTOR_COUNT] = {
    [HB_P2P_CTOR_DUP] = "dup",
    [HB_P2P_CTOR_DUP_WITH_INFO] = "dupi",
    [HB_P2P_CTOR_IDUP] = "idup",
    [HB_P2P_CTOR_IDUP_WITH_INFO] = "idupi",
    [HB_P2P_CTOR_SPLIT] = "split",
    [HB_P2P_CTOR_SPLIT_TYPE] = "stype",
    [HB_P2P_CTOR_CREATE] = "create",
    [HB_P2P_CTOR_CREATE_GROUP] = "cgroup",
    [HB_P2P_CTOR_CREATE_FROM_GROUP] = "fromgroup",
    [HB_P2P_CTOR_CART_CREATE] = "cart",
    [HB_P2P_CTOR_CART_SUB] = "csub",
    [HB_P2P_CTOR_GRAPH_CREATE] = "graph",
    [HB_P2P_CTOR_DIST_GRAPH_CREATE] = "dgraph",
    [HB_P2P_CTOR_DIST_GRAPH_ADJACENT] = "dgadj",
    [HB_P2P_CTOR_INTERCOMM_CREATE] = "inter",
    [HB_P2P_CTOR_INTERCOMM_MERGE] = "merge",
};

const char *hb_p2p_ctor_label(enum hb_p2p_ctor kind)
{
    return kind > 0 && kind < HB_P2P_CTOR_COUNT ? labels[kind] : "?";
}

static void set_path(struct hb_p2p_name *n, const char *head, const char *tail)
{
    char buf[2 * HB_P2P_PATH_MAX + 16];
    size_t len = (size_t)snprintf(buf, sizeof buf, "%s%s", head, tail);
    if (len >= sizeof buf)
        len = sizeof buf - 1;
    if (len < HB_P2P_PATH_MAX) {
        memcpy(n->path, buf, len + 1);
        return;
    }
    /* Too deep: the newest steps say most about which one it is. */
    n->path[0] = '~';
    memcpy(n->path + 1, buf + len - (HB_P2P_PATH_MAX - 2), HB_P2P_PATH_MAX - 1);
}

void hb_p2p_name_world(struct hb_p2p_name *n)
{
    n->hash[0] = n->hash[1] = 0;
    absorb(n->hash, 1);
    set_path(n, "W", "");
}

void hb_p2p_name_self(struct hb_p2p_name *n, int world_rank)
{
    char tail[16];
    n->hash[0] = n->hash[1] = 0;
    absorb(n->hash, 2);
    absorb(n->hash, (uint64_t)(int64_t)world_rank);
    snprintf(tail, sizeof tail, "%d", world_rank);
    set_path(n, "S", tail);
}

static void absorb_step(uint64_t h[2], enum hb_p2p_ctor kind, uint32_t seq,
                        const int64_t *args, size_t nargs)
{
    absorb(h, (uint64_t)kind);
    absorb(h, seq);
    absorb(h, nargs);
    for (size_t i = 0; i < nargs; i++)
        absorb(h, (uint64_t)args[i]);
}

static void step_label(char *buf, size_t len, const char *sep,
                       enum hb_p2p_ctor kind, uint32_t seq)
{
    snprintf(buf, len, "%s%s%u", sep, hb_p2p_ctor_label(kind), seq);
}

void hb_p2p_name_child(struct hb_p2p_name *child,
                       const struct hb_p2p_name *parent, enum hb_p2p_ctor kind,
                       uint32_t seq, const int64_t *args, size_t nargs)
{
    char step[32];
    struct hb_p2p_name out = *parent;
    absorb_step(out.hash, kind, seq, args, nargs);
    step_label(step, sizeof step, ".", kind, seq);
    set_path(&out, parent->path, step);
    *child = out; /* child may be parent */
}

void hb_p2p_name_root(struct hb_p2p_name *n, enum hb_p2p_ctor kind,
                      uint32_t seq, const int64_t *args, size_t nargs)
{
    char step[32];
    n->hash[0] = n->hash[1] = 0;
    absorb(n->hash, 3);
    absorb_step(n->hash, kind, seq, args, nargs);
    step_label(step, sizeof step, "", kind, seq);
    set_path(n, step, "");
}

void hb_p2p_name_members(struct hb_p2p_name *n, const int *world_ranks,
                         int size)
{
    absorb(n->hash, (uint64_t)(int64_t)size);
    for (int i = 0; i < size; i++)
        absorb(n->hash, (uint64_t)(int64_t)world_ranks[i]);
}

int64_t hb_p2p_name_digest_bytes(const void *p, size_t len)
{
    uint64_t h[2] = {len, 0};
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        absorb(h, b[i]);
    return (int64_t)(h[0] ^ h[1]);
}

int64_t hb_p2p_name_digest_ranks(const int *world_ranks, int size)
{
    uint64_t h[2] = {0, 0};
    absorb(h, (uint64_t)(int64_t)size);
    for (int i = 0; i < size; i++)
        absorb(h, (uint64_t)(int64_t)world_ranks[i]);
    return (int64_t)(h[0] ^ h[1]);
}

int hb_p2p_name_equal(const struct hb_p2p_name *a, const struct hb_p2p_name *b)
{
    return a->hash[0] == b->hash[0] && a->hash[1] == b->hash[1];
}

int hb_p2p_ordinal_next(struct hb_p2p_ordinals *o, uint64_t key0, uint64_t key1,
                        uint32_t *seq)
{
    for (uint32_t i = 0; i < o->n; i++) {
        if (o->v[i].key[0] == key0 && o->v[i].key[1] == key1) {
            *seq = o->v[i].count++;
            return 0;
        }
    }
    if (o->n == o->cap) {
        uint32_t cap = o->cap ? 2 * o->cap : 4;
        struct hb_p2p_ordinal *v = realloc(o->v, cap * sizeof *v);
        if (!v)
            return -1;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = (struct hb_p2p_ordinal){{key0, key1}, 1};
    *seq = 0;
    return 0;
}

void hb_p2p_ordinals_free(struct hb_p2p_ordinals *o)
{
    free(o->v);
    *o = (struct hb_p2p_ordinals){0};
}
