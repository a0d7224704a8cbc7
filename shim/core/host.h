/* Which ranks share a node. */
#ifndef HOTBUF_HOST_H
#define HOTBUF_HOST_H

#include <stdint.h>

/* Hash of this host's name: ranks with equal hashes share a node. */
uint32_t hb_host_hash(void);

#endif
