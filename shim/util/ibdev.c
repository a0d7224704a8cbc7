/* See ibdev.h. */
#include "ibdev.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "why.h"

static int port_usable(struct ibv_context *ctx, int port, struct hb_ibdev *d,
                       char *why, size_t len)
{
    const char *name = ibv_get_device_name(ctx->device);

    if (ibv_query_device(ctx, &d->dev_attr)) {
        hb_why(why, len, "cannot query verbs device %s: %s", name,
               strerror(errno));
        return -1;
    }
    if (port < 1 || port > d->dev_attr.phys_port_cnt) {
        hb_why(why, len, "verbs device %s has no port %d (it has %d)", name,
               port, d->dev_attr.phys_port_cnt);
        return -1;
    }
    if (ibv_query_port(ctx, (uint8_t)port, &d->port_attr)) {
        hb_why(why, len, "cannot query port %d of %s: %s", port, name,
               strerror(errno));
        return -1;
    }
    if (d->port_attr.state != IBV_PORT_ACTIVE) {
        hb_why(why, len, "port %d of %s is not ACTIVE (%s)", port, name,
               ibv_port_state_str(d->port_attr.state));
        return -1;
    }
    return 0;
}

/* Opens dev if its port is usable; else a reason in why. */
static int try_device(struct ibv_device *dev, int port, struct hb_ibdev *d,
                      char *why, size_t len)
{
    const char *name = ibv_get_device_name(dev);
    struct ibv_context *ctx = ibv_open_device(dev);

    if (!ctx) {
        hb_why(why, len, "cannot open verbs device %s: %s", name,
               strerror(errno));
        return -1;
    }
    if (port_usable(ctx, port, d, why, len)) {
        ibv_close_device(ctx);
        return -1;
    }
    d->ctx = ctx;
    snprintf(d->name, sizeof(d->name), "%s", name);
    return 0;
}

static void no_device(const char *want, int no_kernel, char *why, size_t len)
{
    const char *none =
        no_kernel ? "the kernel has no RDMA support" : "libibverbs found none";

    if (want[0])
        hb_why(why, len, "verbs device %s not found (no verbs device: %s)",
               want, none);
    else
        hb_why(why, len, "no verbs device (%s)", none);
}

static void named_missing(struct ibv_device **list, int n, const char *want,
                          char *why, size_t len)
{
    char seen[160] = "";

    for (int i = 0; i < n; i++)
        hb_why_append(seen, sizeof(seen), "%s%s", i ? ", " : "",
                      ibv_get_device_name(list[i]));
    hb_why(why, len, "verbs device %s not found (present: %s)", want, seen);
}

/* The first device with an ACTIVE port; the reasons for the others in why. */
static int first_active(struct ibv_device **list, int n, int port,
                        struct hb_ibdev *d, char *why, size_t len)
{
    char seen[160] = "";

    for (int i = 0; i < n; i++) {
        char one[128];

        if (try_device(list[i], port, d, one, sizeof(one)) == 0)
            return 0;
        hb_why_append(seen, sizeof(seen), "%s%s", seen[0] ? "; " : "", one);
    }
    hb_why(why, len, "no verbs device with an ACTIVE port %d (%s)", port, seen);
    return -1;
}

static int named(struct ibv_device **list, int n, const char *want, int port,
                 struct hb_ibdev *d, char *why, size_t len)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(ibv_get_device_name(list[i]), want))
            return try_device(list[i], port, d, why, len);
    named_missing(list, n, want, why, len);
    return -1;
}

int hb_ibdev_open(const char *want, int port, struct hb_ibdev *d, char *why,
                  size_t len)
{
    int n = 0, rc;
    struct ibv_device **list;

    if (!want)
        want = "";
    memset(d, 0, sizeof(*d));
    errno = 0;
    list = ibv_get_device_list(&n);
    if (!list || n == 0) {
        no_device(want, !list && errno == ENOSYS, why, len);
        if (list)
            ibv_free_device_list(list);
        return -1;
    }
    rc = want[0] ? named(list, n, want, port, d, why, len)
                 : first_active(list, n, port, d, why, len);
    ibv_free_device_list(list);
    return rc;
}
