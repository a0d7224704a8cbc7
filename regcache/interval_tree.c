/* Intrusive augmented AVL interval tree.
 *
 * Why this structure:
 *  - The cache must find a registration that *covers* a request, and all
 *    registrations that *overlap* an invalidated range.  Ranges may
 *    overlap (a region kept alive by an in-flight operation, or the
 *    no-merge fallback), so sorting by start alone does not bound the
 *    search; a hash keyed on the exact address cannot answer either query.
 *  - Ordering by start and storing max_end per subtree (the classic CLRS
 *    interval tree) gives O(log n) for both "find one" queries: a subtree
 *    whose max_end is <= s cannot overlap [s, e), and every node right of
 *    a node whose start is >= e cannot either.
 *  - AVL rather than red-black: recursive insert/remove with a single
 *    rebalance() on the way back up keeps height and max_end maintenance
 *    in one place, which is easy to check (hb_itree_check) and short.
 *    Depth is < 1.45 log2(n), so recursion is bounded (~40 frames at 1e8).
 *  - A page-table/radix design would make lookups O(levels) but needs
 *    allocation per populated page-table node and per-page entries for
 *    large regions; this tree allocates nothing (nodes are embedded).
 *
 * Keys are (start, node address), so equal starts are allowed and removal
 * can find the exact node without parent pointers.
 */
#include "interval_tree.h"

#include <errno.h>

static int node_height(const struct hb_itree_node *n)
{
    return n ? n->height : 0;
}

static uintptr_t node_max_end(const struct hb_itree_node *n)
{
    return n ? n->max_end : 0;
}

static uintptr_t max_u(uintptr_t a, uintptr_t b)
{
    return a > b ? a : b;
}

/* Recomputes the augmented fields of n from its (correct) children. */
static void update(struct hb_itree_node *n)
{
    int hl = node_height(n->left);
    int hr = node_height(n->right);

    n->height = 1 + (hl > hr ? hl : hr);
    n->max_end =
        max_u(n->end, max_u(node_max_end(n->left), node_max_end(n->right)));
}

/* Strict weak order on (start, address): unique for distinct nodes. */
static int key_less(const struct hb_itree_node *a,
                    const struct hb_itree_node *b)
{
    if (a->start != b->start)
        return a->start < b->start;
    return (uintptr_t)a < (uintptr_t)b;
}

/* Lifts n's child on one side above n: the left child for a right
 * rotation (LEFT_UP), the right child for a left rotation (RIGHT_UP).
 * The child's inner subtree moves across to n.  Returns the new root. */
enum { LEFT_UP, RIGHT_UP };

static struct hb_itree_node *rotate(struct hb_itree_node *n, int side)
{
    struct hb_itree_node **to_child = side == LEFT_UP ? &n->left : &n->right;
    struct hb_itree_node *c = *to_child;
    struct hb_itree_node **inner = side == LEFT_UP ? &c->right : &c->left;

    *to_child = *inner;
    *inner = n;
    update(n);
    update(c);
    return c;
}

/* Restores the AVL property at n (children already balanced) and
 * refreshes its augmented fields; returns the new subtree root. */
static struct hb_itree_node *rebalance(struct hb_itree_node *n)
{
    int balance;

    update(n);
    balance = node_height(n->left) - node_height(n->right);
    if (balance > 1) {
        if (node_height(n->left->left) < node_height(n->left->right))
            n->left = rotate(n->left, RIGHT_UP);
        return rotate(n, LEFT_UP);
    }
    if (balance < -1) {
        if (node_height(n->right->right) < node_height(n->right->left))
            n->right = rotate(n->right, LEFT_UP);
        return rotate(n, RIGHT_UP);
    }
    return n;
}

static struct hb_itree_node *insert_at(struct hb_itree_node *root,
                                       struct hb_itree_node *node)
{
    if (!root) {
        node->left = NULL;
        node->right = NULL;
        update(node);
        return node;
    }
    if (key_less(node, root))
        root->left = insert_at(root->left, node);
    else
        root->right = insert_at(root->right, node);
    return rebalance(root);
}

/* Unlinks the leftmost node of root's subtree into *min. */
static struct hb_itree_node *detach_min(struct hb_itree_node *root,
                                        struct hb_itree_node **min)
{
    if (!root->left) {
        *min = root;
        return root->right;
    }
    root->left = detach_min(root->left, min);
    return rebalance(root);
}

/* The node is embedded in a caller object, so the in-order successor is
 * relinked into its place instead of copying keys between nodes. */
static struct hb_itree_node *unlink_node(struct hb_itree_node *node)
{
    struct hb_itree_node *succ;
    struct hb_itree_node *right;

    if (!node->left)
        return node->right;
    if (!node->right)
        return node->left;
    right = detach_min(node->right, &succ);
    succ->left = node->left;
    succ->right = right;
    return rebalance(succ);
}

static struct hb_itree_node *remove_at(struct hb_itree_node *root,
                                       struct hb_itree_node *node)
{
    if (!root)
        return NULL; /* not in the tree: caller bug, leave tree intact */
    if (root == node)
        return unlink_node(node);
    if (key_less(node, root))
        root->left = remove_at(root->left, node);
    else
        root->right = remove_at(root->right, node);
    return rebalance(root);
}

void hb_itree_init(struct hb_itree *tree)
{
    tree->root = NULL;
    tree->count = 0;
}

void hb_itree_insert(struct hb_itree *tree, struct hb_itree_node *node)
{
    tree->root = insert_at(tree->root, node);
    tree->count++;
}

void hb_itree_remove(struct hb_itree *tree, struct hb_itree_node *node)
{
    tree->root = remove_at(tree->root, node);
    tree->count--;
    node->left = NULL;
    node->right = NULL;
}

/* n is non-NULL with n->max_end >= end: descend along max_end to a node
 * whose own end reaches `end`.  Every node below the caller's entry point
 * starts early enough, so any such node covers the request. */
static struct hb_itree_node *find_end_reaching(struct hb_itree_node *n,
                                               uintptr_t end)
{
    while (n) {
        if (n->end >= end)
            return n;
        if (n->left && n->left->max_end >= end)
            n = n->left;
        else
            n = n->right;
    }
    return NULL;
}

struct hb_itree_node *hb_itree_find_covering(const struct hb_itree *tree,
                                             uintptr_t start, uintptr_t end)
{
    for (struct hb_itree_node *n = tree->root; n;) {
        if (n->start > start)
            n = n->left; /* n and its right subtree all start too late */
        else if (n->end >= end)
            return n;
        else if (n->left && n->left->max_end >= end)
            return find_end_reaching(n->left, end); /* all start <= start */
        else
            n = n->right;
    }
    return NULL;
}

struct hb_itree_node *hb_itree_find_overlap(const struct hb_itree *tree,
                                            uintptr_t start, uintptr_t end)
{
    struct hb_itree_node *n = tree->root;

    while (n) {
        if (n->start < end && n->end > start)
            return n;
        /* If the left subtree reaches past start but holds no overlap,
         * its far-reaching node starts at or after end, and so does
         * everything to its right: going left loses nothing. */
        if (n->left && n->left->max_end > start)
            n = n->left;
        else
            n = n->right;
    }
    return NULL;
}

static int visit_at(struct hb_itree_node *n, uintptr_t start, uintptr_t end,
                    hb_itree_visit_fn fn, void *arg)
{
    int rc;

    if (!n || n->max_end <= start)
        return 0;
    rc = visit_at(n->left, start, end, fn, arg);
    if (rc)
        return rc;
    if (n->start >= end)
        return 0; /* n and its right subtree start too late */
    if (n->end > start) {
        rc = fn(n, arg);
        if (rc)
            return rc;
    }
    return visit_at(n->right, start, end, fn, arg);
}

int hb_itree_visit_overlaps(const struct hb_itree *tree, uintptr_t start,
                            uintptr_t end, hb_itree_visit_fn fn, void *arg)
{
    return visit_at(tree->root, start, end, fn, arg);
}

struct hb_itree_node *hb_itree_any(const struct hb_itree *tree)
{
    return tree->root;
}

struct check_state {
    const struct hb_itree_node *prev; /* in-order predecessor */
    size_t count;
    int ok;
};

static void check_at(const struct hb_itree_node *n, struct check_state *st)
{
    int hl, hr;
    uintptr_t want_max;

    if (!n || !st->ok)
        return;
    check_at(n->left, st);
    if (st->prev && !key_less(st->prev, n))
        st->ok = 0;
    st->prev = n;
    st->count++;
    check_at(n->right, st);

    hl = node_height(n->left);
    hr = node_height(n->right);
    want_max =
        max_u(n->end, max_u(node_max_end(n->left), node_max_end(n->right)));
    if (n->start >= n->end || n->height != 1 + (hl > hr ? hl : hr) ||
        hl - hr > 1 || hr - hl > 1 || n->max_end != want_max)
        st->ok = 0;
}

int hb_itree_check(const struct hb_itree *tree)
{
    struct check_state st = {NULL, 0, 1};

    check_at(tree->root, &st);
    return st.ok && st.count == tree->count ? 0 : -EINVAL;
}
