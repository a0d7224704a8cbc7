/* Test switch HOTBUF_TEST_P2P_PASS=1 (tests/run-tests.sh "p2p_route"):
 * every receive-side binding must reach this subsystem.  Under it the
 * bindings always call hb_p2p_* (engaged), each function counts its calls,
 * the counts go to stderr at exit ("hotbuf-p2p-pass: recv=N ..."), and
 * MPI_TAG_UB shows one less, so a test sees which bindings arrive here and
 * that the attribute queries subtract.  Not a setting: a test hook. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2p_int.h"

#define ROUTE_NAME(f) #f,
static const char *const route_names[HB_P2P_ROUTE_N] = {
    HB_P2P_ROUTE_FUNCS(ROUTE_NAME)};

/* Static: read before the runtime starts, printed after it stopped. */
struct p2p_route hb_p2p_route;

__attribute__((constructor)) static void route_switch(void)
{
    const char *v = getenv("HOTBUF_TEST_P2P_PASS");
    hb_p2p_route.on = v && !strcmp(v, "1");
}

__attribute__((destructor)) static void route_counts(void)
{
    char line[1024];
    size_t len = 0;
    if (!hb_p2p_route.on)
        return;
    for (int f = 0; f < HB_P2P_ROUTE_N && len < sizeof(line); f++)
        len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%lu",
                                route_names[f], hb_p2p_route.calls[f]);
    fprintf(stderr, "hotbuf-p2p-pass:%s\n", line);
}
