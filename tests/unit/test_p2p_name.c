/* Communicator names (shim/p2p/p2p_name.c): two "processes" that go
 * through the same constructors agree on every name; distinct
 * communicators (two dups of one parent, two colors, two member orders)
 * get distinct names. */
#include "check.h"
#include "p2p/p2p_name.h"

/* One process's view: a parent's per-kind sequence numbers. */
static struct hb_p2p_name make(const struct hb_p2p_name *parent,
                               struct hb_p2p_ordinals *o, enum hb_p2p_ctor k,
                               const int64_t *args, size_t nargs,
                               const int *members, int size)
{
    struct hb_p2p_name n;
    uint32_t seq = 99;
    CHECK(hb_p2p_ordinal_next(o, (uint64_t)k, 0, &seq) == 0);
    hb_p2p_name_child(&n, parent, k, seq, args, nargs);
    hb_p2p_name_members(&n, members, size);
    return n;
}

static const int all4[] = {0, 1, 2, 3};

static void test_roots(void)
{
    struct hb_p2p_name w1, w2, s0, s1;
    hb_p2p_name_world(&w1);
    hb_p2p_name_world(&w2);
    hb_p2p_name_self(&s0, 0);
    hb_p2p_name_self(&s1, 1);
    CHECK(hb_p2p_name_equal(&w1, &w2));
    CHECK(!hb_p2p_name_equal(&s0, &s1));
    CHECK(!hb_p2p_name_equal(&w1, &s0));
    CHECK_STR(w1.path, "W");
    CHECK_STR(s1.path, "S1");
}

/* Two dups of WORLD differ; process A and B agree on each. */
static void test_dups(void)
{
    struct hb_p2p_name w;
    struct hb_p2p_ordinals a = {0}, b = {0};
    hb_p2p_name_world(&w);
    struct hb_p2p_name a0 = make(&w, &a, HB_P2P_CTOR_DUP, NULL, 0, all4, 4);
    struct hb_p2p_name a1 = make(&w, &a, HB_P2P_CTOR_DUP, NULL, 0, all4, 4);
    struct hb_p2p_name b0 = make(&w, &b, HB_P2P_CTOR_DUP, NULL, 0, all4, 4);
    struct hb_p2p_name b1 = make(&w, &b, HB_P2P_CTOR_DUP, NULL, 0, all4, 4);
    CHECK(!hb_p2p_name_equal(&a0, &a1));
    CHECK(hb_p2p_name_equal(&a0, &b0));
    CHECK(hb_p2p_name_equal(&a1, &b1));
    CHECK_STR(a0.path, "W.dup0");
    CHECK_STR(a1.path, "W.dup1");
    /* A dup and a split of the same parent, both the first of their kind. */
    int64_t color = 0;
    struct hb_p2p_name s = make(&w, &a, HB_P2P_CTOR_SPLIT, &color, 1, all4, 4);
    CHECK_STR(s.path, "W.split0");
    CHECK(!hb_p2p_name_equal(&s, &a0));
    /* A process that skipped a dup (a wrapper bypassed) disagrees: this
     * is what the check at creation catches. */
    struct hb_p2p_ordinals c = {0};
    struct hb_p2p_name c0 = make(&w, &c, HB_P2P_CTOR_DUP, NULL, 0, all4, 4);
    CHECK(!hb_p2p_name_equal(&c0, &a1));
    hb_p2p_ordinals_free(&a);
    hb_p2p_ordinals_free(&b);
    hb_p2p_ordinals_free(&c);
}

/* Split: colors and member orders tell communicators apart. */
static void test_split(void)
{
    struct hb_p2p_name w;
    struct hb_p2p_ordinals a = {0}, b = {0}, c = {0};
    hb_p2p_name_world(&w);
    const int even[] = {0, 2}, odd[] = {1, 3}, even_rev[] = {2, 0};
    int64_t c0 = 0, c1 = 1;
    struct hb_p2p_name e = make(&w, &a, HB_P2P_CTOR_SPLIT, &c0, 1, even, 2);
    struct hb_p2p_name e2 = make(&w, &b, HB_P2P_CTOR_SPLIT, &c0, 1, even, 2);
    struct hb_p2p_name o = make(&w, &c, HB_P2P_CTOR_SPLIT, &c1, 1, odd, 2);
    CHECK(hb_p2p_name_equal(&e, &e2));
    CHECK(!hb_p2p_name_equal(&e, &o));
    struct hb_p2p_name r = make(&w, &a, HB_P2P_CTOR_SPLIT, &c0, 1, even_rev, 2);
    struct hb_p2p_name r2 = make(&w, &b, HB_P2P_CTOR_SPLIT, &c0, 1, even, 2);
    CHECK(!hb_p2p_name_equal(&r, &r2)); /* same path, another order */
    CHECK_STR(r.path, r2.path);
    hb_p2p_ordinals_free(&a);
    hb_p2p_ordinals_free(&b);
    hb_p2p_ordinals_free(&c);
}

/* Sequence numbers count per key; keys do not disturb each other. */
static void test_ordinals(void)
{
    struct hb_p2p_ordinals o = {0};
    uint32_t s = 7;
    for (uint64_t k = 0; k < 10; k++) {
        CHECK(hb_p2p_ordinal_next(&o, k, 5, &s) == 0);
        CHECK_EQ_U64(s, 0);
    }
    CHECK(hb_p2p_ordinal_next(&o, 3, 5, &s) == 0);
    CHECK_EQ_U64(s, 1);
    CHECK(hb_p2p_ordinal_next(&o, 3, 6, &s) == 0);
    CHECK_EQ_U64(s, 0);
    CHECK(hb_p2p_ordinal_next(&o, 3, 5, &s) == 0);
    CHECK_EQ_U64(s, 2);
    hb_p2p_ordinals_free(&o);
}

/* Parentless names (Comm_create_from_group, intercommunicators). */
static void test_roots_from_args(void)
{
    struct hb_p2p_name x, y, z;
    int64_t a1[] = {hb_p2p_name_digest_bytes("tag", 3),
                    hb_p2p_name_digest_ranks(all4, 4)};
    int64_t a2[] = {hb_p2p_name_digest_bytes("tah", 3), a1[1]};
    hb_p2p_name_root(&x, HB_P2P_CTOR_CREATE_FROM_GROUP, 0, a1, 2);
    hb_p2p_name_root(&y, HB_P2P_CTOR_CREATE_FROM_GROUP, 0, a1, 2);
    hb_p2p_name_root(&z, HB_P2P_CTOR_CREATE_FROM_GROUP, 0, a2, 2);
    CHECK(hb_p2p_name_equal(&x, &y));
    CHECK(!hb_p2p_name_equal(&x, &z));
    CHECK_STR(x.path, "fromgroup0");
    CHECK(hb_p2p_name_digest_ranks(all4, 3) !=
          hb_p2p_name_digest_ranks(all4, 4));
}

/* A deep path keeps its newest steps, within the bound. */
static void test_deep_path(void)
{
    struct hb_p2p_name n;
    hb_p2p_name_world(&n);
    for (uint32_t i = 0; i < 20; i++)
        hb_p2p_name_child(&n, &n, HB_P2P_CTOR_DUP, i, NULL, 0);
    CHECK(n.path[0] == '~');
    CHECK(strlen(n.path) == HB_P2P_PATH_MAX - 1);
    CHECK(strstr(n.path, ".dup19") != NULL);
    CHECK(strcmp(n.path + strlen(n.path) - 6, ".dup19") == 0);
}

int main(void)
{
    test_roots();
    test_dups();
    test_split();
    test_ordinals();
    test_roots_from_args();
    test_deep_path();
    if (check_failures)
        fprintf(stderr, "test_p2p_name: %d failures\n", check_failures);
    else
        printf("test_p2p_name: ok\n");
    return check_failures;
}
