/* Which verbs device and port hotbuf uses: one rule for everything that
 * opens a device (the transport, and the registration-cost measurement,
 * so that R is measured on the NIC the transport will use).
 *
 * The rule: the named device (HOTBUF_DEVICE) if one is given, else the
 * first device in libibverbs' list whose `port` (HOTBUF_PORT) is ACTIVE.
 * Failures come back as one line naming every device tried and why it
 * was passed over.
 */
#ifndef HOTBUF_UTIL_IBDEV_H
#define HOTBUF_UTIL_IBDEV_H

#include <stddef.h>

#include <infiniband/verbs.h>

struct hb_ibdev {
    struct ibv_context *ctx;
    struct ibv_device_attr dev_attr;
    struct ibv_port_attr port_attr;
    char name[64];
};

/* Opens the device chosen for (want, port): want NULL or "" = the first
 * with an ACTIVE port.  0 and *d filled (close d->ctx with
 * ibv_close_device), or -1 with a one-line reason in why. */
int hb_ibdev_open(const char *want, int port, struct hb_ibdev *d, char *why,
                  size_t len);

#endif
