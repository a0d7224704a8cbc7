/* Intrusive interval tree over half-open address ranges [start, end).
 *
 * An AVL tree ordered by (start, node address), where every node also
 * carries the largest `end` in its subtree.  That augmentation lets the
 * cache answer "which range covers [s, e)?" and "which range overlaps
 * [s, e)?" in O(log n) even when ranges overlap each other, which a plain
 * start-keyed search cannot.  See interval_tree.c for the reasoning.
 *
 * The tree does not allocate: callers embed struct hb_itree_node in their
 * own objects and fill in start/end (start < end) before inserting.  A
 * node's range must not change while it is in the tree.  The tree has no
 * lock; the registration cache serialises access with its own mutex.
 */
#ifndef HOTBUF_REGCACHE_INTERVAL_TREE_H
#define HOTBUF_REGCACHE_INTERVAL_TREE_H

#include <stddef.h>
#include <stdint.h>

struct hb_itree_node {
    struct hb_itree_node *left;
    struct hb_itree_node *right;
    uintptr_t start;   /* first byte of the range */
    uintptr_t end;     /* one past the last byte; start < end */
    uintptr_t max_end; /* maintained by the tree: max end in this subtree */
    int height;        /* maintained by the tree: AVL height, leaf = 1 */
};

struct hb_itree {
    struct hb_itree_node *root;
    size_t count;
};

/* Visitor for hb_itree_visit_overlaps; a non-zero return stops the walk
 * and is passed back.  The visitor must not modify the tree. */
typedef int (*hb_itree_visit_fn)(struct hb_itree_node *node, void *arg);

void hb_itree_init(struct hb_itree *tree);

/* Inserts node (start/end already set).  Duplicates and overlaps are fine. */
void hb_itree_insert(struct hb_itree *tree, struct hb_itree_node *node);

/* Removes node, which must currently be in this tree. */
void hb_itree_remove(struct hb_itree *tree, struct hb_itree_node *node);

/* Some node with node->start <= start && node->end >= end, or NULL. */
struct hb_itree_node *hb_itree_find_covering(const struct hb_itree *tree,
                                             uintptr_t start, uintptr_t end);

/* Some node sharing at least one byte with [start, end), or NULL. */
struct hb_itree_node *hb_itree_find_overlap(const struct hb_itree *tree,
                                            uintptr_t start, uintptr_t end);

/* Calls fn on every node overlapping [start, end), in ascending start
 * order.  Cost O(k + log n) amortised over the k matches. */
int hb_itree_visit_overlaps(const struct hb_itree *tree, uintptr_t start,
                            uintptr_t end, hb_itree_visit_fn fn, void *arg);

/* Any node of the tree (the root), or NULL when empty; used to drain it. */
struct hb_itree_node *hb_itree_any(const struct hb_itree *tree);

static inline size_t hb_itree_count(const struct hb_itree *tree)
{
    return tree->count;
}

/* Verifies ordering, AVL balance, heights, max_end and count.  Returns 0
 * when consistent, -EINVAL otherwise.  For tests; O(n). */
int hb_itree_check(const struct hb_itree *tree);

#endif
