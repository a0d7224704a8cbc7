/* Intrusive circular doubly-linked list.
 *
 * The node is embedded in the object (one link per list the object can be
 * on), so list operations never allocate.  The registration cache keeps
 * every region on at most one list at a time (idle LRU, retired,
 * garbage).  An unlinked node points to itself, which makes hb_list_del()
 * idempotent and lets callers test membership with hb_list_linked().
 */
#ifndef HOTBUF_UTIL_LIST_H
#define HOTBUF_UTIL_LIST_H

#include <stddef.h>

struct hb_list {
    struct hb_list *prev;
    struct hb_list *next;
};

#define hb_container_of(ptr, type, member)                                     \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Initialises a list head, or marks a node as unlinked. */
static inline void hb_list_init(struct hb_list *node)
{
    node->prev = node;
    node->next = node;
}

static inline int hb_list_empty(const struct hb_list *head)
{
    return head->next == head;
}

/* True when a node (initialised with hb_list_init) is on some list. */
static inline int hb_list_linked(const struct hb_list *node)
{
    return node->next != node;
}

/* Inserts node right after head: the head end is the most recent end. */
static inline void hb_list_add_head(struct hb_list *head, struct hb_list *node)
{
    node->prev = head;
    node->next = head->next;
    head->next->prev = node;
    head->next = node;
}

static inline void hb_list_del(struct hb_list *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    hb_list_init(node);
}

/* Oldest element (the one farthest from the head end), or NULL. */
static inline struct hb_list *hb_list_tail(const struct hb_list *head)
{
    return hb_list_empty(head) ? NULL : head->prev;
}

#endif
